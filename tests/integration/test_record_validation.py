"""Per-record validation on append with real producers (KIP-467): keyless records on a
compacted topic, timestamps outside the topic's bounds, topic compression.type, and the
deprecated topic configs Kafka 3.x still accepts."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol.records import COMPRESSION_ZSTD, iter_batch_headers, iter_records

from .java_support import run_java

KEYLESS = [i for i in range(100) if i % 10 == 9]


def _create(broker: BrokerThread, topic: str, configs: dict[str, str]) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(10)
    return admin


def _log_records(broker: BrokerThread, topic: str) -> list[tuple[bytes | None, bytes | None]]:
    assert broker.broker is not None
    plog = broker.broker.logs.get(topic, 0)
    assert plog is not None
    data = broker.call(lambda: b"".join(plog.iter_batches(0)))
    return [(r.key, r.value) for _h, r in iter_records(data)]


def _produce(bootstrap: str, topic: str, keys: list[str | None],
             timestamps: list[int] | None = None) -> dict[int, KafkaError | None]:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200, "retries": 0,
                  "enable.idempotence": False})
    out: dict[int, KafkaError | None] = {}
    for i, key in enumerate(keys):
        def done(err: KafkaError | None, _msg: object, i: int = i) -> None:
            out[i] = err
        p.produce(topic, value=f"v{i}", key=key, partition=0, on_delivery=done,
                  timestamp=timestamps[i] if timestamps else 0)
    assert p.flush(20) == 0
    return out


def test_confluent_keyless_records_on_compacted_topic(broker: BrokerThread) -> None:
    _create(broker, "cmp-c", {"cleanup.policy": "compact"})
    keys: list[str | None] = [None if i in KEYLESS else f"k{i}" for i in range(100)]
    out = _produce(broker.bootstrap, "cmp-c", keys)
    invalid = sorted(i for i, e in out.items() if e is not None
                     and e.code() == KafkaError.INVALID_RECORD)
    assert invalid == KEYLESS
    # librdkafka fails the rest of the refused batch with its own code (KIP-467).
    assert Counter(e.code() if e else None for i, e in out.items() if i not in KEYLESS) == {
        KafkaError._INVALID_DIFFERENT_RECORD: 90}
    assert _log_records(broker, "cmp-c") == []
    # The good records go through in a batch of their own.
    again = _produce(broker.bootstrap, "cmp-c", [k for k in keys if k is not None])
    assert all(e is None for e in again.values()) and len(again) == 90
    stored = _log_records(broker, "cmp-c")
    assert len(stored) == 90 and all(k is not None for k, _v in stored)


def test_java_keyless_records_on_compacted_topic(broker: BrokerThread) -> None:
    _create(broker, "cmp-j", {"cleanup.policy": "compact"})
    out = run_java("RecordErrors", broker.bootstrap, "cmp-j", "100", "10")
    assert out["failed.InvalidRecordException"] == str(KEYLESS)
    assert out["message.InvalidRecordException"] == (
        "Compacted topic cannot accept message without key in topic partition cmp-j-0")
    assert out["delivered"] == "0"
    assert out["message.KafkaException"].startswith("Failed to append record because it was "
                                                    "part of a batch")
    assert _log_records(broker, "cmp-j") == []


def test_timestamps_outside_topic_bounds(broker: BrokerThread) -> None:
    _create(broker, "ts", {"message.timestamp.before.max.ms": "3600000",
                           "message.timestamp.after.max.ms": "60000"})
    now = int(time.time() * 1000)
    out = _produce(broker.bootstrap, "ts", ["a"], [now - 2 * 3600_000])
    assert out[0] is not None and out[0].code() == KafkaError.INVALID_TIMESTAMP
    out = _produce(broker.bootstrap, "ts", ["a"], [now + 3600_000])
    assert out[0] is not None and out[0].code() == KafkaError.INVALID_TIMESTAMP
    out = _produce(broker.bootstrap, "ts", ["a", "b"], [now - 1000, now])
    assert out == {0: None, 1: None}
    assert _log_records(broker, "ts") == [(b"a", b"v0"), (b"b", b"v1")]


def test_topic_compression_type_applies(broker: BrokerThread) -> None:
    _create(broker, "zs", {"compression.type": "zstd"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50,
                  "compression.type": "none"})
    for i in range(200):
        p.produce("zs", key=f"k{i}", value=f"value {i} " * 10, partition=0)
    assert p.flush(20) == 0
    assert broker.broker is not None
    plog = broker.broker.logs.get("zs", 0)
    assert plog is not None
    data = broker.call(lambda: b"".join(plog.iter_batches(0)))
    assert {h.compression for _pos, h in iter_batch_headers(data)} == {COMPRESSION_ZSTD}
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "zs",
                  "enable.auto.commit": False})
    c.assign([TopicPartition("zs", 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < 200 and time.monotonic() < deadline:
        m = c.poll(1)
        if m is not None and m.error() is None:
            got.append(m.value())
    c.close()
    assert got == [f"value {i} ".encode() * 10 for i in range(200)]


def test_topic_configs_of_kafka_4(broker: BrokerThread) -> None:
    admin = _create(broker, "k4", {"local.retention.ms": "-2",
                                   "leader.replication.throttled.replicas": "0:1,1:1"})
    res = ConfigResource("topic", "k4")
    cfg = admin.describe_configs([res])[res].result(10)
    assert cfg["leader.replication.throttled.replicas"].value == "0:1,1:1"
    assert cfg["message.timestamp.after.max.ms"].value == "3600000"  # Kafka 4.0's default
    assert cfg["remote.storage.enable"].value == "false"
    assert "message.format.version" not in cfg
    # Removed in Kafka 4.0, and refused as Kafka 4.x refuses them.
    for name, value in (("message.format.version", "2.8"),
                        ("message.downconversion.enable", "false"),
                        ("message.timestamp.difference.max.ms", "10")):
        fut = admin.create_topics([NewTopic(f"k4-{name}", 1, 1, config={name: value})])
        with pytest.raises(KafkaException, match=f"Unknown topic config name: {name}"):
            fut[f"k4-{name}"].result(10)
    bad = ConfigResource("topic", "k4", incremental_configs=[ConfigEntry(
        "follower.replication.throttled.replicas", "bad",
        incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException, match=r"must be the literal '\*' or a list"):
        admin.incremental_alter_configs([bad])[bad].result(10)
    fut = admin.create_topics([NewTopic("k4-tiered", 1, 1,
                                        config={"remote.storage.enable": "true"})])
    with pytest.raises(KafkaException, match="Tiered Storage functionality is disabled"):
        fut["k4-tiered"].result(10)
