"""``python -m kafkalite``: the ``kafkalite`` command."""

import gc
import sys

# Start-up makes a few hundred thousand objects that live as long as the process (modules,
# classes, the broker): no collection runs over them while they are made. ``main``
# enables the collector again (``serve``: once the broker listens, after freezing them).
gc.disable()

from kafkalite.broker.cli.main import main  # noqa: E402

sys.exit(main())
