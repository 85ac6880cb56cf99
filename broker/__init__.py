"""The kafkalite broker: listeners, connections, request dispatch, configuration, CLI."""

__version__ = "0.1.0"
