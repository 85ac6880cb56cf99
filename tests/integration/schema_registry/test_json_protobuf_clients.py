"""confluent-kafka's JSON Schema and Protobuf serde against the broker's registry: records
through a topic and back, and evolution accepted or refused per compatibility level."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kafkalite.broker.testing.fixtures import BrokerThread

ORDER = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order",
         "type": "object", "additionalProperties": False,
         "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
         "required": ["id"]}


def _round_trip(broker: BrokerThread, topic: str, values: list[bytes]) -> list[bytes]:
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for v in values:
        p.produce(topic, value=v)
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{uuid.uuid4()}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    out: list[bytes] = []
    try:
        for _ in range(100):
            if len(out) >= len(values):
                break
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append(m.value())
    finally:
        c.close()
    return out


def test_json_schema_round_trip_and_evolution(kafkalite_registry_broker: BrokerThread) -> None:
    client = SchemaRegistryClient({"url": kafkalite_registry_broker.schema_registry_url})
    ser = JSONSerializer(json.dumps(ORDER), client)
    de = JSONDeserializer(None, schema_registry_client=client)
    ctx = SerializationContext("orders", MessageField.VALUE)
    sent = [{"id": i, "item": f"i{i}"} for i in range(3)]
    got = _round_trip(kafkalite_registry_broker, "orders",
                      [ser(v, ctx) for v in sent])
    assert [de(v, ctx) for v in got] == sent
    assert client.get_latest_version("orders-value").schema.schema_type == "JSON"
    # Closed content model: a new optional property is backward compatible...
    v2 = dict(ORDER, properties={**ORDER["properties"], "qty": {"type": "integer"}})
    client.register_schema("orders-value", Schema(json.dumps(v2), "JSON"))
    # ...a new required one is not, nor is a narrowed type.
    v3 = dict(v2, required=["id", "qty"])
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("orders-value", Schema(json.dumps(v3), "JSON"))
    assert e.value.http_status_code == 409
    assert "REQUIRED_ATTRIBUTE_ADDED" in e.value.error_message
    v4 = dict(v2, properties={**v2["properties"], "item": {"type": "integer"}})
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("orders-value", Schema(json.dumps(v4), "JSON"))
    assert "TYPE_CHANGED" in e.value.error_message
    # An open content model: adding a property is refused (old data may hold anything).
    opened = {k: v for k, v in ORDER.items() if k != "additionalProperties"}
    client.register_schema("open", Schema(json.dumps(opened), "JSON"))
    more = dict(opened, properties={**opened["properties"], "x": {"type": "string"}})
    assert not client.test_compatibility("open", Schema(json.dumps(more), "JSON"))
    # A widened type is fine (integer -> number).
    wide = dict(opened, properties={**opened["properties"], "id": {"type": "number"}})
    assert client.test_compatibility("open", Schema(json.dumps(wide), "JSON"))


def _message_class(fields: list[tuple[str, int, int]], package: str = "shop") -> Any:
    """A Protobuf message class built at run time (no generated code)."""
    fd = descriptor_pb2.FileDescriptorProto(name=f"{package}_{uuid.uuid4().hex}.proto",
                                            package=package, syntax="proto3")
    msg = fd.message_type.add(name="Item")
    for name, number, ftype in fields:
        msg.field.add(name=name, number=number, type=ftype,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.Item"))


STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
INT32 = descriptor_pb2.FieldDescriptorProto.TYPE_INT32
DOUBLE = descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE


def test_protobuf_round_trip_and_evolution(kafkalite_registry_broker: BrokerThread) -> None:
    client = SchemaRegistryClient({"url": kafkalite_registry_broker.schema_registry_url})
    item = _message_class([("name", 1, STRING), ("qty", 2, INT32)])
    ser = ProtobufSerializer(item, client, {"use.deprecated.format": False})
    de = ProtobufDeserializer(item, {"use.deprecated.format": False})
    ctx = SerializationContext("items", MessageField.VALUE)
    sent = [item(name=f"n{i}", qty=i) for i in range(3)]
    got = _round_trip(kafkalite_registry_broker, "items", [ser(m, ctx) for m in sent])
    assert [de(v, ctx) for v in got] == sent
    latest = client.get_latest_version("items-value")
    assert latest.schema.schema_type == "PROTOBUF"
    # A field added: compatible. A field's kind changed: refused.
    more = _message_class([("name", 1, STRING), ("qty", 2, INT32), ("note", 3, STRING)])
    ProtobufSerializer(more, client, {"use.deprecated.format": False})(more(name="x"), ctx)
    assert client.get_versions("items-value") == [1, 2]
    changed = _message_class([("name", 1, STRING), ("qty", 2, DOUBLE)])
    with pytest.raises(SchemaRegistryError) as e:
        ProtobufSerializer(changed, client, {"use.deprecated.format": False})(
            changed(name="y"), ctx)
    assert "FIELD_SCALAR_KIND_CHANGED" in e.value.error_message


def test_protobuf_text_schemas(schema_registry_url: str) -> None:
    client = SchemaRegistryClient({"url": schema_registry_url})
    v1 = 'syntax = "proto3";\npackage p;\nmessage M {\n  string a = 1;\n  int32 b = 2;\n}\n'
    client.register_schema("m", Schema(v1, "PROTOBUF"))
    renamed = v1.replace("int32 b = 2", "int64 bb = 2")  # same wire group, new name
    assert client.test_compatibility("m", Schema(renamed, "PROTOBUF"))
    moved = v1.replace("package p;", "package q;")
    assert not client.test_compatibility("m", Schema(moved, "PROTOBUF"))
    removed = 'syntax = "proto3";\npackage p;\nmessage Other { string a = 1; }\n'
    assert not client.test_compatibility("m", Schema(removed, "PROTOBUF"))
    client.set_compatibility("m", "NONE")
    client.register_schema("m", Schema(removed, "PROTOBUF"))
    assert client.get_versions("m") == [1, 2]


def test_text_schema_read_by_the_python_deserializer(schema_registry_url: str) -> None:
    """A schema registered as .proto text (as KafkaJS or Java clients register them) is
    given as a descriptor with format=serialized, which the Python deserializer needs."""
    client = SchemaRegistryClient({"url": schema_registry_url})
    text = ('syntax = "proto3";\npackage shop;\nmessage Item {\n  string name = 1;\n'
            '  int32 qty = 2;\n  map<string, int32> tags = 3;\n  Kind kind = 4;\n'
            '  enum Kind { NONE = 0; BIG = 1; }\n}\n')
    schema_id = client.register_schema("text-value", Schema(text, "PROTOBUF"))
    item = _message_class([("name", 1, STRING), ("qty", 2, INT32)])
    payload = b"\x00" + schema_id.to_bytes(4, "big") + b"\x00" + \
        item(name="box", qty=4).SerializeToString()
    reader = SchemaRegistryClient({"url": schema_registry_url})  # another process's cache
    de = ProtobufDeserializer(item, {"use.deprecated.format": False}, reader)
    got = de(payload, SerializationContext("text", MessageField.VALUE))
    assert (got.name, got.qty) == ("box", 4)
    # Without the format the text comes back as registered.
    assert client.get_schema(schema_id).schema_str == text.strip()


def test_protobuf_imports_registered_as_references(kafkalite_registry_broker: BrokerThread
                                                   ) -> None:
    client = SchemaRegistryClient({"url": kafkalite_registry_broker.schema_registry_url})
    dep = descriptor_pb2.FileDescriptorProto(name="geo/addr.proto", package="geo",
                                             syntax="proto3")
    addr = dep.message_type.add(name="Addr")
    addr.field.add(name="city", number=1, type=STRING,
                   label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    main = descriptor_pb2.FileDescriptorProto(name="shop/order.proto", package="shop",
                                              syntax="proto3", dependency=["geo/addr.proto"])
    order = main.message_type.add(name="Order")
    order.field.add(name="to", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                    type_name=".geo.Addr",
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(dep)
    pool.Add(main)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    ctx = SerializationContext("orders-pb", MessageField.VALUE)
    data = ProtobufSerializer(cls, client, {"use.deprecated.format": False})(
        cls(to={"city": "Oslo"}), ctx)
    latest = client.get_latest_version("orders-pb-value")
    assert [(r.name, r.subject, r.version) for r in latest.schema.references] == [
        ("geo/addr.proto", "geo/addr.proto", 1)]
    reader = SchemaRegistryClient({"url": kafkalite_registry_broker.schema_registry_url})
    got = ProtobufDeserializer(cls, {"use.deprecated.format": False}, reader)(data, ctx)
    assert got.to.city == "Oslo"
    # The imported file is referenced: it cannot be deleted while the order uses it.
    with pytest.raises(SchemaRegistryError) as e:
        client.delete_subject("geo/addr.proto")
    assert e.value.error_code == 42206
    assert client.get_referenced_by("geo/addr.proto", 1) == [latest.schema_id]


def test_json_schema_references_and_normalize(kafkalite_registry_broker: BrokerThread) -> None:
    url = kafkalite_registry_broker.schema_registry_url
    client = SchemaRegistryClient({"url": url})
    address = {"$schema": "http://json-schema.org/draft-07/schema#", "$id": "address.json",
               "type": "object", "properties": {"city": {"type": "string"}}}
    client.register_schema("address-json", Schema(json.dumps(address), "JSON"))
    person = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Person",
              "type": "object", "properties": {"home": {"$ref": "address.json"}}}
    refs = [SchemaReference("address.json", "address-json", 1)]
    schema = Schema(json.dumps(person), "JSON", refs)
    ctx = SerializationContext("people", MessageField.VALUE)
    ser = JSONSerializer(schema, client)
    data = ser({"home": {"city": "Oslo"}}, ctx)
    reader = SchemaRegistryClient({"url": url})
    assert JSONDeserializer(None, schema_registry_client=reader)(data, ctx) == {
        "home": {"city": "Oslo"}}
    assert client.get_latest_version("people-value").schema.references[0].subject == \
        "address-json"
    # normalize: key order does not make another schema.
    shuffled = json.dumps({"type": "object", "title": "Person", "properties": {
        "home": {"$ref": "address.json"}}, "$schema": "http://json-schema.org/draft-07/schema#"})
    first = client.register_schema("norm", Schema(json.dumps(person), "JSON", refs),
                                   normalize_schemas=True)
    again = client.register_schema("norm", Schema(shuffled, "JSON", refs),
                                   normalize_schemas=True)
    assert again == first and client.get_versions("norm") == [1]
