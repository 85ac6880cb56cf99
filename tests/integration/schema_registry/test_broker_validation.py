"""Broker-side schema validation (``confluent.value.schema.validation``): records without
the magic byte and a registered id under the topic's subject are refused with
INVALID_RECORD and record errors naming them; good records go through."""

from __future__ import annotations

import json

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.records import NewRecord, build_batch
from tests.integration.test_produce_errors import Client

SCHEMA = json.dumps({"type": "record", "name": "V", "fields": [{"name": "a", "type": "int"}]})


def _topic(broker: BrokerThread, name: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(name, 1, 1, config=configs)]).values():
        f.result(10)


def test_value_validation_refuses_records_naming_them(
        kafkalite_registry_broker: BrokerThread) -> None:
    b = kafkalite_registry_broker
    _topic(b, "checked", {"confluent.value.schema.validation": "true"})
    client = SchemaRegistryClient({"url": b.schema_registry_url})
    ser = AvroSerializer(client, SCHEMA)
    good = ser({"a": 1}, SerializationContext("checked", MessageField.VALUE))
    other = client.register_schema("elsewhere-value", Schema(json.dumps({"type": "string"}),
                                                              "AVRO"))
    wrong_subject = b"\x00" + other.to_bytes(4, "big") + b"\x02x"
    raw = Client(b)
    batch = build_batch([NewRecord(None, good), NewRecord(None, b"plain text"),
                         NewRecord(None, None), NewRecord(None, wrong_subject)], timestamp=1)
    r = raw.produce("checked", batch)
    assert r.error_code == ErrorCode.invalid_record
    assert [e.batch_index for e in r.record_errors] == [1, 3]
    assert "no magic byte" in r.record_errors[0].batch_index_error_message
    assert f"schema id {other} is not registered under subject checked-value" in \
        r.record_errors[1].batch_index_error_message
    assert "2 record errors" in r.error_message
    # Nothing of the refused batch was written; a good batch goes through.
    r = raw.produce("checked", build_batch([NewRecord(None, good)], timestamp=1))
    assert (r.error_code, r.base_offset) == (ErrorCode.none, 0)
    # With a real producer: the bad record fails with INVALID_RECORD, the good one lands.
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    results: list[KafkaError | None] = []
    p.produce("checked", value=b"nope", on_delivery=lambda err, _m: results.append(err))
    p.flush(10)
    p.produce("checked", value=good, on_delivery=lambda err, _m: results.append(err))
    p.flush(10)
    assert results[0] is not None and results[0].code() == KafkaError.INVALID_RECORD
    assert results[1] is None
    # Topics without the config take anything.
    assert raw.produce("free", build_batch([NewRecord(None, b"x")], timestamp=1)
                       ).error_code == ErrorCode.none


def test_key_validation(kafkalite_registry_broker: BrokerThread) -> None:
    b = kafkalite_registry_broker
    _topic(b, "keyed", {"confluent.key.schema.validation": "true"})
    client = SchemaRegistryClient({"url": b.schema_registry_url})
    key = AvroSerializer(client, json.dumps({"type": "string"}))(
        "k", SerializationContext("keyed", MessageField.KEY))
    raw = Client(b)
    r = raw.produce("keyed", build_batch([NewRecord(key, b"any"), NewRecord(b"k", b"any")],
                                         timestamp=1))
    assert r.error_code == ErrorCode.invalid_record
    assert [e.batch_index for e in r.record_errors] == [1]
    assert "key" in r.record_errors[0].batch_index_error_message
