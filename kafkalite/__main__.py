"""``python -m kafkalite``: the ``kafkalite`` command."""

import sys

from kafkalite.broker.cli import main

sys.exit(main())
