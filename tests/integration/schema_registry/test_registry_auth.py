"""With SASL on the broker's listeners, the registry takes HTTP basic auth against the
broker's PLAIN users and SCRAM credentials; a client without them gets 401."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from kafkalite.broker.security.fixture import SecuritySetup
from kafkalite.broker.security.scram import credential_from_password
from kafkalite.broker.testing.fixtures import BrokerThread

STRING = Schema(json.dumps({"type": "string"}), "AVRO")


def test_basic_auth_against_broker_users(kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory(security=SecuritySetup("SASL_PLAINTEXT", mechanisms=("PLAIN",)),
                          schema_registry=True)
    url = b.schema_registry_url
    with pytest.raises(SchemaRegistryError) as e:
        SchemaRegistryClient({"url": url}).get_subjects()
    assert (e.value.http_status_code, e.value.error_code) == (401, 401)
    with pytest.raises(SchemaRegistryError) as e:
        SchemaRegistryClient({"url": url, "basic.auth.user.info": "alice:wrong"}).get_subjects()
    assert e.value.http_status_code == 401
    plain = SchemaRegistryClient({"url": url, "basic.auth.user.info": "alice:alice-secret"})
    assert plain.register_schema("s", STRING) == 1
    # A SCRAM-only user (as `kafkalite scram set` or AlterUserScramCredentials makes one).
    cred = credential_from_password("SCRAM-SHA-256", "carol-secret", 4096)
    b.call(lambda: b.inner.scram.put("carol", "SCRAM-SHA-256", cred))
    scram = SchemaRegistryClient({"url": url, "basic.auth.user.info": "carol:carol-secret"})
    assert scram.get_subjects() == ["s"]
    with pytest.raises(SchemaRegistryError):
        SchemaRegistryClient({"url": url, "basic.auth.user.info": "carol:nope"}).get_subjects()
