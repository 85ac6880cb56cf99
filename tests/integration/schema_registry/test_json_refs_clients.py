"""confluent-kafka's JSONSerializer with schemas that use ``$ref`` (local definitions and
a reference to another subject) evolving under BACKWARD: the registry follows the
references, so a change inside a referred schema is judged like an inline one."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kafkalite.broker.testing.fixtures import BrokerThread

DRAFT7 = "http://json-schema.org/draft-07/schema#"


def address(zip_type: str) -> str:
    return json.dumps({"$schema": DRAFT7, "$id": "address.json", "type": "object",
                       "properties": {"city": {"type": "string"},
                                      "zip": {"type": zip_type}}})


def person(phone_type: str) -> str:
    return json.dumps({
        "$schema": DRAFT7, "title": "Person", "type": "object",
        "properties": {"name": {"type": "string"},
                       "home": {"$ref": "address.json"},
                       "phone": {"$ref": "#/definitions/Phone"}},
        "definitions": {"Phone": {"type": phone_type}}})


def test_json_references_evolve_under_backward(
        kafkalite_registry_broker: BrokerThread) -> None:
    url = kafkalite_registry_broker.schema_registry_url
    client = SchemaRegistryClient({"url": url})
    client.set_compatibility("people-value", "BACKWARD")
    client.set_compatibility("address-json", "NONE")
    assert client.register_schema("address-json", Schema(address("integer"), "JSON"))
    v1 = Schema(person("integer"), "JSON", [SchemaReference("address.json", "address-json", 1)])
    ctx = SerializationContext("people", MessageField.VALUE)
    ser = JSONSerializer(v1, client)
    sent = {"name": "Ada", "home": {"city": "Oslo", "zip": 150}, "phone": 5550100}
    producer = Producer({"bootstrap.servers": kafkalite_registry_broker.bootstrap})
    producer.produce("people", value=ser(sent, ctx))
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": kafkalite_registry_broker.bootstrap,
                         "group.id": f"g-{uuid.uuid4()}", "auto.offset.reset": "earliest"})
    consumer.subscribe(["people"])
    got = None
    try:
        for _ in range(40):
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got = m.value()
                break
    finally:
        consumer.close()
    assert got is not None
    assert JSONDeserializer(None, schema_registry_client=client)(got, ctx) == sent

    # Widened inside the other subject (integer -> number): backward compatible.
    assert client.register_schema("address-json", Schema(address("number"), "JSON"))
    v2 = Schema(person("integer"), "JSON", [SchemaReference("address.json", "address-json", 2)])
    assert client.test_compatibility("people-value", v2)
    client.register_schema("people-value", v2)
    # Narrowed inside the other subject (number -> string): the same text, refused.
    client.register_schema("address-json", Schema(address("string"), "JSON"))
    v3 = Schema(person("integer"), "JSON", [SchemaReference("address.json", "address-json", 3)])
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("people-value", v3)
    assert e.value.http_status_code == 409
    assert "TYPE_CHANGED" in e.value.error_message
    assert "home/properties/zip" in e.value.error_message
    # A local definition narrowed (integer -> string through #/definitions/Phone): refused;
    # widened (integer -> number): accepted.
    narrowed = Schema(person("string"), "JSON",
                      [SchemaReference("address.json", "address-json", 2)])
    assert not client.test_compatibility("people-value", narrowed)
    widened = Schema(person("number"), "JSON",
                     [SchemaReference("address.json", "address-json", 2)])
    assert client.register_schema("people-value", widened)
    assert client.get_versions("people-value") == [1, 2, 3]
    # The newest version still serializes and reads back with the client.
    out = JSONSerializer(widened, client)({**sent, "phone": 5.5}, ctx)
    assert JSONDeserializer(None, schema_registry_client=client)(out, ctx)["phone"] == 5.5
