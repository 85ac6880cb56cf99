"""confluent-kafka's SchemaRegistryClient and Avro serde against the broker's registry,
over TCP: records through a topic and back, evolution per level, deletes, restarts."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from kafkalite.broker.testing.fixtures import BrokerThread

USER_V1 = json.dumps({"type": "record", "name": "User", "namespace": "t", "fields": [
    {"name": "name", "type": "string"}]})
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "t", "fields": [
    {"name": "name", "type": "string"},
    {"name": "age", "type": "int", "default": 0}]})
USER_BAD = json.dumps({"type": "record", "name": "User", "namespace": "t", "fields": [
    {"name": "name", "type": "string"},
    {"name": "email", "type": "string"}]})


def _consume(bootstrap: str, topic: str, n: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4()}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    out: list[bytes] = []
    try:
        for _ in range(100):
            if len(out) >= n:
                break
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append(m.value())
    finally:
        c.close()
    return out


def test_avro_records_round_trip(kafkalite_registry_broker: BrokerThread,
                                 schema_registry_url: str) -> None:
    client = SchemaRegistryClient({"url": schema_registry_url})
    ser = AvroSerializer(client, USER_V1)
    de = AvroDeserializer(client)
    topic = "users"
    p = Producer({"bootstrap.servers": kafkalite_registry_broker.bootstrap})
    for i in range(3):
        ctx = SerializationContext(topic, MessageField.VALUE)
        p.produce(topic, value=ser({"name": f"u{i}"}, ctx))
    assert p.flush(10) == 0
    values = _consume(kafkalite_registry_broker.bootstrap, topic, 3)
    assert values[0][0] == 0  # the magic byte, then the id
    ctx = SerializationContext(topic, MessageField.VALUE)
    assert [de(v, ctx) for v in values] == [{"name": f"u{i}"} for i in range(3)]
    assert client.get_subjects() == ["users-value"]
    latest = client.get_latest_version("users-value")
    assert latest.version == 1
    assert json.loads(latest.schema.schema_str) == json.loads(USER_V1)


def test_evolution_per_level(schema_registry_url: str) -> None:
    client = SchemaRegistryClient({"url": schema_registry_url})
    first = client.register_schema("s", Schema(USER_V1, "AVRO"))
    again = client.register_schema("s", Schema(json.dumps(json.loads(USER_V1), indent=2),
                                               "AVRO"))
    assert again == first  # the same schema: the same id, no new version
    assert client.get_versions("s") == [1]
    second = client.register_schema("s", Schema(USER_V2, "AVRO"))
    assert second != first
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("s", Schema(USER_BAD, "AVRO"))
    assert e.value.http_status_code == 409 and e.value.error_code == 409
    assert not client.test_compatibility("s", Schema(USER_BAD, "AVRO"))
    client.set_compatibility("s", "NONE")
    assert client.get_compatibility("s") == "NONE"
    client.register_schema("s", Schema(USER_BAD, "AVRO"))
    assert client.get_versions("s") == [1, 2, 3]
    # FORWARD: the old schema must read the new one's data (adding a field is fine).
    client.set_compatibility("f", "FORWARD")
    client.register_schema("f", Schema(USER_V2, "AVRO"))
    client.register_schema("f", Schema(USER_BAD, "AVRO"))
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("f", Schema(USER_V1, "AVRO"))  # email has no default
    assert e.value.http_status_code == 409
    # The same schema under another subject keeps its global id.
    assert client.register_schema("other", Schema(USER_V1, "AVRO")) == first
    assert sorted(client.get_subjects()) == ["f", "other", "s"]


def test_references_and_deletes(schema_registry_url: str) -> None:
    client = SchemaRegistryClient({"url": schema_registry_url})
    addr = json.dumps({"type": "record", "name": "Address", "namespace": "t",
                       "fields": [{"name": "city", "type": "string"}]})
    client.register_schema("address", Schema(addr, "AVRO"))
    person = json.dumps({"type": "record", "name": "Person", "namespace": "t",
                         "fields": [{"name": "home", "type": "t.Address"}]})
    ref = SchemaReference("t.Address", "address", 1)
    pid = client.register_schema("person", Schema(person, "AVRO", [ref]))
    got = client.get_schema(pid)
    assert got.references[0].subject == "address"
    assert client.get_version("address", 1).version == 1
    # Referenced: neither a soft nor a permanent delete goes through.
    with pytest.raises(SchemaRegistryError) as e:
        client.delete_subject("address")
    assert e.value.error_code == 42206
    # Soft delete, then permanent; the permanent needs the soft one first.
    with pytest.raises(SchemaRegistryError) as e:
        client.delete_subject("person", permanent=True)
    assert e.value.error_code == 40405
    assert client.delete_subject("person") == [1]
    assert "person" not in client.get_subjects()
    with pytest.raises(SchemaRegistryError) as e:
        client.get_latest_version("person")
    assert e.value.error_code == 40401
    assert client.delete_subject("person", permanent=True) == [1]
    assert client.delete_subject("address") == [1]
    with pytest.raises(SchemaRegistryError) as e:
        client.get_version("address", 7)
    assert e.value.error_code == 40401


def test_schemas_survive_a_restart(kafkalite_registry_broker: BrokerThread) -> None:
    url = kafkalite_registry_broker.schema_registry_url
    client = SchemaRegistryClient({"url": url})
    first = client.register_schema("keep", Schema(USER_V1, "AVRO"))
    client.register_schema("keep", Schema(USER_V2, "AVRO"))
    client.set_compatibility("keep", "FULL")
    client.register_schema("gone", Schema(USER_BAD, "AVRO"))
    client.delete_subject("gone")
    kafkalite_registry_broker.restart()
    client = SchemaRegistryClient({"url": kafkalite_registry_broker.schema_registry_url})
    assert client.get_subjects() == ["keep"]
    assert client.get_versions("keep") == [1, 2]
    assert client.get_compatibility("keep") == "FULL"
    assert client.get_schema(first).schema_str == json.dumps(json.loads(USER_V1),
                                                             separators=(",", ":"))
    # Ids carry on from the highest ever given.
    third = client.register_schema("new", Schema(json.dumps({"type": "string"}), "AVRO"))
    assert third == 4
