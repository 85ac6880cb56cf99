"""The group coordinator: a pure core (``group``, ``core``, ``timers``) and its runtime."""
