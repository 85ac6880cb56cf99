"""The pytest plugin's ``kafkalite_broker``, secured by overriding ``kafkalite_security``
as a user's test module would; ``broker.client()`` gives the settings a client needs."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Producer

from kafkalite.broker.security.fixture import SecuritySetup
from kafkalite.broker.testing.fixtures import BrokerThread


@pytest.fixture
def kafkalite_security() -> SecuritySetup:
    return SecuritySetup("SASL_SSL", mechanisms=("SCRAM-SHA-512",),
                         users={"app": "app-secret"})


def test_secured_fixture_broker(kafkalite_broker: BrokerThread) -> None:
    settings = kafkalite_broker.client()
    assert (settings.security_protocol, settings.mechanism, settings.username) == \
        ("SASL_SSL", "SCRAM-SHA-512", "app")
    assert settings.ca_file is not None and settings.password == "app-secret"
    p = Producer(settings.librdkafka())
    p.produce("fixture", b"v")
    assert p.flush(20) == 0
    # The listener is TLS with SASL: a plaintext client gets nowhere.
    failed: list[KafkaError | None] = []
    plain = Producer({"bootstrap.servers": settings.bootstrap, "message.timeout.ms": 1500,
                      "error_cb": lambda _e: None})
    plain.produce("fixture", b"v", on_delivery=lambda err, _m: failed.append(err))
    plain.flush(5)
    assert len(failed) == 1 and failed[0] is not None
    assert failed[0].code() == KafkaError._MSG_TIMED_OUT
