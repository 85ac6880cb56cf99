"""The admin HTTP listener (``admin.listener``): JSON API, ``/metrics`` and the console.

``app`` imports aiohttp; ``views`` (the broker's state as JSON) does not, so the metrics
collector can use it on a broker with the listener off.
"""
