"""The kafkalite broker: listeners, connections, request dispatch, configuration, CLI."""
