"""The ``kafkalite`` command and its subcommands (``serve``, ``ctl``, ``configs``,
``groups``, ``offsets dump``), and the container health check."""
