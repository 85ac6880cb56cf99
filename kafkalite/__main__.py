"""``python -m kafkalite``: the ``kafkalite`` command."""

import sys

from kafkalite.broker.cli.main import main

sys.exit(main())
