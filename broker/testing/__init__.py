"""Test support: brokers run in a thread or a child process, and the pytest plugin. The
fault rules, scenarios and clock they steer are the broker's own (``broker/control/``)."""


def __getattr__(name: str) -> object:
    # The fixtures lived in ``kafkalite.broker.testing`` before test support became a
    # package; the old import keeps working without loading them for the broker itself.
    if name in ("BrokerThread", "BrokerProcess"):
        from . import fixtures

        return getattr(fixtures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
