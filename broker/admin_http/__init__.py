"""The admin HTTP listener (``admin.listener``): JSON API, ``/metrics`` and the console."""

from .app import AdminServer, build_app

__all__ = ["AdminServer", "build_app"]
