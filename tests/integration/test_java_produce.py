"""The Java producer with enable.idempotence=true against kafkalite; a transactional one
initializes (the transaction tests exercise it further)."""

from __future__ import annotations

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_java


def test_java_idempotent_producer(broker: BrokerThread) -> None:
    lines = run_java("IdempotentProduce", broker.bootstrap, "javaidem", "5000", timeout=120)
    assert lines["last.offset"] == "4999"
    assert lines["read"] == "5000"
    assert lines["in.order"] == "true"
    assert lines["transactions"] == "accepted"
