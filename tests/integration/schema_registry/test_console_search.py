"""The console's message search: records found by key, by a substring of the value and
from a time, values in the Confluent wire format decoded through the registry (Avro,
JSON Schema, Protobuf, from confluent-kafka's serializers), scans bounded, and the search
refused by the broker's ACLs for the admin listener's principal."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kafkalite.broker.admin_http import search as search_mod
from kafkalite.broker.testing.fixtures import BrokerThread

ORDER = {"type": "record", "name": "Order", "fields": [
    {"name": "id", "type": "int"}, {"name": "item", "type": "string"}]}


def _search(b: BrokerThread, topic: str, **params: Any) -> dict[str, Any]:
    url = f"{b.admin_url}/api/v1/topics/{topic}/search?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as r:
        out: dict[str, Any] = json.loads(r.read())
        return out


def _produce(b: BrokerThread, topic: str, rows: list[tuple[bytes, bytes]]) -> None:
    p = Producer({"bootstrap.servers": b.bootstrap})
    for k, v in rows:
        p.produce(topic, key=k, value=v)
    assert p.flush(10) == 0


def _topic(b: BrokerThread, name: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def test_search_by_key_decodes_avro(kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory(admin=True, schema_registry=True)
    _topic(b, "orders", 3)
    client = SchemaRegistryClient({"url": b.schema_registry_url})
    ser = AvroSerializer(client, json.dumps(ORDER))
    ctx = SerializationContext("orders", MessageField.VALUE)
    _produce(b, "orders", [(f"k{i}".encode(), ser({"id": i, "item": f"thing-{i}"}, ctx))
                           for i in range(40)])
    got = _search(b, "orders", key="k17")
    assert got["schema_registry"] is True and got["bounded"] is False
    assert got["scanned_records"] == 40
    [m] = got["matches"]
    assert m["key"]["text"] == "k17"
    assert m["decoded"] == {"schema_id": 1, "schema_type": "AVRO",
                            "value": {"id": 17, "item": "thing-17"}}
    # A substring of the decoded value; then limited, then one partition from an offset.
    assert [x["key"]["text"] for x in _search(b, "orders", value="thing-23")["matches"]] \
        == ["k23"]
    assert len(_search(b, "orders", value="thing-", limit=5)["matches"]) == 5
    part = m["partition"]
    later = _search(b, "orders", partition=part, offset=m["offset"] + 1, key="k17")
    assert later["matches"] == []
    # From a time after every record: nothing read.
    after = _search(b, "orders", timestamp=m["timestamp"] + 3_600_000)
    assert after["matches"] == [] and after["scanned_records"] == 0


def test_json_schema_and_protobuf_values_decode(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory(admin=True, schema_registry=True)
    client = SchemaRegistryClient({"url": b.schema_registry_url})
    _topic(b, "js")
    _topic(b, "pb")
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    js = JSONSerializer(json.dumps(schema), client)
    _produce(b, "js", [(b"a", js({"n": 7}, SerializationContext("js", MessageField.VALUE)))])
    fd = descriptor_pb2.FileDescriptorProto(name="pb.proto", package="shop", syntax="proto3")
    outer = fd.message_type.add(name="Outer")
    outer.field.add(name="x", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    item = fd.message_type.add(name="Item")
    item.field.add(name="name", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                   label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Item"))
    pb = ProtobufSerializer(cls, client, {"use.deprecated.format": False})
    _produce(b, "pb", [(b"b", pb(cls(name="widget"), SerializationContext("pb",
                                                                           MessageField.VALUE)))])
    [j] = _search(b, "js", key="a")["matches"]
    assert j["decoded"]["schema_type"] == "JSON" and j["decoded"]["value"] == {"n": 7}
    [p] = _search(b, "pb", value="widget")["matches"]
    assert p["decoded"]["schema_type"] == "PROTOBUF"
    # Item is the second message of the file: message indexes [1].
    assert p["decoded"]["message_indexes"] == [1]
    assert p["decoded"]["value"] == {"name": "widget"}


def test_search_is_bounded(kafkalite_factory: Callable[..., BrokerThread],
                           monkeypatch: pytest.MonkeyPatch) -> None:
    b = kafkalite_factory(admin=True)
    _topic(b, "many")
    # Small batches so that the bound falls between them.
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(30):
        p.produce("many", key=f"k{i}".encode(), value=b"v")
        p.flush(10)
    monkeypatch.setattr(search_mod, "MAX_SCAN_RECORDS", 10)
    got = _search(b, "many", key="k29")
    assert got["bounded"] is True and got["matches"] == []
    assert got["scanned_records"] == 10
    assert got["resume_offsets"] == [{"partition": 0, "offset": 10}]
    resumed = _search(b, "many", key="k15", offset=10)
    assert [m["offset"] for m in resumed["matches"]] == [15]
    assert got["schema_registry"] is False


def test_search_needs_read_for_the_admin_principal(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory({"authorizer.class.name":
                           "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                           "super.users": "User:ANONYMOUS",
                           "admin.principal": "User:console"}, admin=True)
    _topic(b, "secret")
    with pytest.raises(urllib.error.HTTPError) as e:
        _search(b, "secret", key="x")
    assert e.value.code == 403
    assert "User:console is not authorized to Read Topic 'secret'" in e.value.read().decode()
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    binding = AclBinding(ResourceType.TOPIC, "secret", ResourcePatternType.LITERAL,
                         "User:console", "*", AclOperation.READ, AclPermissionType.ALLOW)
    admin.create_acls([binding])[binding].result(10)
    assert _search(b, "secret", key="x")["matches"] == []
