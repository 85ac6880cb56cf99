"""Producing from the console under a Schema Registry schema id: the JSON value posted to the
admin API is encoded in the Confluent wire format (Avro, JSON Schema, Protobuf) and read
back by confluent-kafka's own deserializers; a value that does not fit is refused."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kafkalite.broker.testing.fixtures import BrokerThread

ORDER = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "int"}, {"name": "item", "type": "string"}]}


def _post(b: BrokerThread, topic: str, body: Any) -> dict[str, Any]:
    req = urllib.request.Request(f"{b.admin_url}/api/v1/topics/{topic}/produce",
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        out: dict[str, Any] = json.loads(r.read())
        return out


def _refused(b: BrokerThread, topic: str, body: Any) -> str:
    with pytest.raises(urllib.error.HTTPError) as e:
        _post(b, topic, body)
    assert e.value.code == 400
    text: str = e.value.read().decode()
    return text


def _consume(b: BrokerThread, topic: str) -> bytes:
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": f"read-{topic}",
                  "auto.offset.reset": "earliest"})
    try:
        c.subscribe([topic])
        for _ in range(100):
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                value = m.value()
                assert value is not None
                return value
    finally:
        c.close()
    raise AssertionError(f"nothing consumed from {topic}")


def test_values_encoded_under_each_schema_type(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory(admin=True, schema_registry=True)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for t in ("avro", "js", "pb"):
        admin.create_topics([NewTopic(t, 1, 1)])[t].result(10)
    client = SchemaRegistryClient({"url": b.schema_registry_url})

    avro_id = client.register_schema("avro-value", Schema(json.dumps(ORDER), "AVRO"))
    _post(b, "avro", {"key": "o1", "schema_id": avro_id, "value": {"id": 5, "item": "pen"}})
    got = AvroDeserializer(client)(_consume(b, "avro"),
                                   SerializationContext("avro", MessageField.VALUE))
    assert got == {"id": 5, "item": "pen"}
    assert "does not fit schema" in _refused(
        b, "avro", {"schema_id": avro_id, "value": {"id": "five", "item": "pen"}})

    js_schema = {"type": "object", "properties": {"n": {"type": "integer"}},
                 "required": ["n"]}
    js_id = client.register_schema("js-value", Schema(json.dumps(js_schema), "JSON"))
    _post(b, "js", {"schema_id": js_id, "value": {"n": 7}})
    got = JSONDeserializer(json.dumps(js_schema))(
        _consume(b, "js"), SerializationContext("js", MessageField.VALUE))
    assert got == {"n": 7}
    assert "does not fit schema" in _refused(b, "js", {"schema_id": js_id, "value": {}})

    fd = descriptor_pb2.FileDescriptorProto(name="item.proto", package="shop", syntax="proto3")
    item = fd.message_type.add(name="Item")
    item.field.add(name="name", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                   label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    proto = "syntax = \"proto3\";\npackage shop;\n\nmessage Item {\n  string name = 1;\n}\n"
    pb_id = client.register_schema("pb-value", Schema(proto, "PROTOBUF"))
    _post(b, "pb", {"schema_id": pb_id, "value": {"name": "widget"}})
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Item"))
    msg = ProtobufDeserializer(cls, {"use.deprecated.format": False})(
        _consume(b, "pb"), SerializationContext("pb", MessageField.VALUE))
    assert msg.name == "widget"

    assert "no schema with id 999" in _refused(b, "pb", {"schema_id": 999, "value": {}})


def test_schema_id_needs_the_registry(kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory(admin=True)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("plain", 1, 1)])["plain"].result(10)
    assert "Schema Registry, which is off" in _refused(
        b, "plain", {"schema_id": 1, "value": {}})
