"""Real clients produce keyed messages (with every compression codec among the batches)
and read them back in order with keys, values, headers and timestamps; the segment files
are then read by aiokafka's own record-batch reader, independently of kafkalite."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTP
from aiokafka.record.default_records import DefaultRecordBatch
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTP

from kafkalite.broker.testing.fixtures import BrokerThread

N = 10_000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
BASE_TS = 1_700_000_000_000


def expected(i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]], int]:
    return (f"key-{i}".encode(), f"value-{i}-".encode() * 3,
            [("n", str(i).encode()), ("codec", CODECS[i * len(CODECS) // N].encode())],
            BASE_TS + i)


def check(rows: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]], int]]) -> None:
    assert len(rows) == N
    for i, (offset, key, value, headers, ts) in enumerate(rows):
        k, v, h, t = expected(i)
        assert (offset, key, value, list(headers), ts) == (i, k, v, h, t)


def segment_records(broker: BrokerThread, topic: str) -> list[tuple[int, bytes, bytes, int]]:
    """Every record in the partition's segment files, decoded by aiokafka's reader."""
    out = []
    for seg in sorted((broker.data_dir / f"{topic}-0").glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos < len(data):
            size = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
            batch = DefaultRecordBatch(data[pos : pos + size])
            assert batch.validate_crc()
            for r in batch:
                out.append((r.offset, r.key, r.value, r.timestamp))
            pos += size
        assert pos == len(data)
    return out


def check_segments(broker: BrokerThread, topic: str) -> None:
    recs = segment_records(broker, topic)
    assert [(o, k, v, t) for o, k, v, t in recs] == [
        (i, *expected(i)[:2], expected(i)[3]) for i in range(N)
    ]


def test_confluent_kafka_round_trip(broker: BrokerThread) -> None:
    topic = "confluent"
    for c, codec in enumerate(CODECS):
        p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec,
                      "linger.ms": 5, "acks": "all"})
        for i in range(c * N // len(CODECS), (c + 1) * N // len(CODECS)):
            k, v, h, t = expected(i)
            p.produce(topic, key=k, value=v, headers=h, timestamp=t)
        assert p.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "check",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    rows = []
    deadline = time.monotonic() + 30
    while len(rows) < N and time.monotonic() < deadline:
        for m in consumer.consume(1000, 1.0):
            assert m.error() is None, m.error()
            rows.append((m.offset(), m.key(), m.value(), m.headers(), m.timestamp()[1]))
    lo, hi = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    found = consumer.offsets_for_times([TopicPartition(topic, 0, BASE_TS + 4321)], timeout=10)
    consumer.close()
    check(rows)
    assert (lo, hi) == (0, N)
    assert found[0].offset == 4321
    check_segments(broker, topic)


def test_kafka_python_round_trip(broker: BrokerThread) -> None:
    topic = "kafkapython"
    for c, codec in enumerate(CODECS):
        p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5, acks="all",
                          compression_type=None if codec == "none" else codec)
        for i in range(c * N // len(CODECS), (c + 1) * N // len(CODECS)):
            k, v, h, t = expected(i)
            p.send(topic, key=k, value=v, headers=h, timestamp_ms=t)
        p.flush(30)
        p.close()
    tp = KTP(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=3000)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    rows = []
    deadline = time.monotonic() + 30
    while len(rows) < N and time.monotonic() < deadline:
        for recs in consumer.poll(1000).values():
            rows += [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in recs]
    assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert consumer.end_offsets([tp]) == {tp: N}
    found = consumer.offsets_for_times({tp: BASE_TS + 777})
    consumer.close()
    check(rows)
    assert found[tp].offset == 777 and found[tp].timestamp == BASE_TS + 777
    check_segments(broker, topic)


def test_aiokafka_round_trip(broker: BrokerThread) -> None:
    topic = "aiokafka"

    async def run() -> list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]], int]]:
        for c, codec in enumerate(CODECS):
            p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5, acks="all",
                                 compression_type=None if codec == "none" else codec)
            await p.start()
            try:
                futs = []
                for i in range(c * N // len(CODECS), (c + 1) * N // len(CODECS)):
                    k, v, h, t = expected(i)
                    futs.append(await p.send(topic, key=k, value=v, headers=h, timestamp_ms=t))
                await asyncio.gather(*futs)
            finally:
                await p.stop()
        tp = AioTP(topic, 0)
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            rows = []
            deadline = time.monotonic() + 30
            while len(rows) < N and time.monotonic() < deadline:
                got = await consumer.getmany(timeout_ms=1000)
                for recs in got.values():
                    rows += [(r.offset, r.key, r.value, list(r.headers), r.timestamp)
                             for r in recs]
            assert await consumer.end_offsets([tp]) == {tp: N}
            return rows
        finally:
            await consumer.stop()

    check(asyncio.run(run()))
    check_segments(broker, topic)


def test_kcat_produce_and_consume(broker: BrokerThread, tmp_path: Path) -> None:
    lines = "".join(f"k{i}:v{i}\n" for i in range(2000))
    for codec in ("snappy", "zstd"):
        subprocess.run(
            ["kcat", "-b", broker.bootstrap, "-P", "-t", "kcat", "-K:", "-z", codec,
             "-H", f"codec={codec}"],
            input=lines.encode(), check=True, timeout=30,
        )
    out = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-C", "-t", "kcat", "-o", "beginning", "-e", "-J",
         "-q"],
        capture_output=True, check=True, timeout=30,
    ).stdout.decode()
    msgs = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert [m["offset"] for m in msgs] == list(range(4000))
    assert [(m["key"], m["payload"]) for m in msgs] == [(f"k{i}", f"v{i}") for i in range(2000)] * 2
    assert msgs[0]["headers"] == ["codec", "snappy"]
    assert msgs[-1]["headers"] == ["codec", "zstd"]


def test_confluent_idempotent_producer(broker: BrokerThread) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                  "linger.ms": 2, "compression.type": "lz4"})
    for i in range(N):
        p.produce("idem", key=str(i % 7).encode(), value=str(i).encode())
        if i % 1000 == 0:
            p.poll(0)
    assert p.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "idem"})
    consumer.assign([TopicPartition("idem", 0, OFFSET_BEGINNING)])
    values = []
    deadline = time.monotonic() + 30
    while len(values) < N and time.monotonic() < deadline:
        values += [m.value() for m in consumer.consume(1000, 1.0) if m.error() is None]
    consumer.close()
    assert values == [str(i).encode() for i in range(N)]
    assert broker.broker is not None
    plog = broker.broker.logs.get("idem", 0)
    assert len(plog.txn.producers.producers) == 1  # one producer id, with sequence state


def test_long_poll_woken_by_produce(broker: BrokerThread) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    producer.produce("wake", b"first")
    producer.flush(10)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "wake",
                         "fetch.wait.max.ms": 5000, "fetch.min.bytes": 1})
    consumer.assign([TopicPartition("wake", 0, 1)])
    received: list[float] = []

    def consume() -> None:
        deadline = time.monotonic() + 15
        while not received and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                received.append(time.monotonic())

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(1.0)  # the consumer's first fetch is now parked with ~4 s left
    sent = time.monotonic()
    producer.produce("wake", b"second")
    producer.flush(10)
    t.join(20)
    consumer.close()
    assert received, "the parked fetch never returned the message"
    # Without a wake-up the message would wait for the 5 s fetch timeout.
    assert received[0] - sent < 2.0


def test_delete_records_and_list_offsets(broker: BrokerThread) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(100):
        p.produce("trim", str(i).encode())
        p.poll(0)
    p.flush(10)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = admin.delete_records([TopicPartition("trim", 0, 40)])
    for f in res.values():
        assert f.result(10).low_watermark == 40
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "trim",
                         "auto.offset.reset": "earliest"})
    assert consumer.get_watermark_offsets(TopicPartition("trim", 0), timeout=10) == (40, 100)
    consumer.assign([TopicPartition("trim", 0, OFFSET_BEGINNING)])
    first = None
    deadline = time.monotonic() + 15
    while first is None and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            first = m
    consumer.close()
    assert first is not None and first.offset() == 40 and first.value() == b"40"
    # The log start offset survives a restart.
    broker.restart()
    assert broker.broker is not None
    assert broker.broker.logs.get("trim", 0).log_start_offset == 40


@pytest.mark.parametrize("acks", ["0", "1"])
def test_produce_acks(broker: BrokerThread, acks: str) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": acks, "linger.ms": 0})
    errors: list[object] = []
    for i in range(50):
        p.produce(f"acks{acks}", str(i).encode(),
                  on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert p.flush(10) == 0
    assert errors == []
    assert broker.broker is not None
    logs = broker.broker.logs

    def end() -> int:
        # On the broker's loop: its logs are created and opened there.
        plog = logs.get(f"acks{acks}", 0)
        return -1 if plog is None else plog.log_end_offset

    deadline = time.monotonic() + 10
    while broker.call(end) < 50 and time.monotonic() < deadline:
        time.sleep(0.05)  # acks=0 has no response to wait for
    assert broker.call(end) == 50


def test_retention_task_deletes_old_segments(make_broker: Any) -> None:
    b = make_broker({"log.retention.check.interval.ms": "100", "log.segment.bytes": "2000",
                     "log.retention.bytes": "4000"})
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    for i in range(100):
        p.produce("retained", b"x" * 100, key=str(i).encode())
        p.flush(10)  # one batch each, so segments fill and roll
    assert b.broker is not None
    plog = b.broker.logs.get("retained", 0)

    def trimmed() -> bool:
        return b.call(lambda: plog.size_bytes - plog.segments[0].size < 4000)  # type: ignore[no-any-return]

    deadline = time.monotonic() + 10
    while not trimmed() and time.monotonic() < deadline:
        time.sleep(0.05)  # the next retention run (every 100 ms) trims the tail
    assert trimmed() and plog.log_start_offset > 0
    consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "retained"})
    lo, hi = consumer.get_watermark_offsets(TopicPartition("retained", 0), timeout=10)
    consumer.close()
    assert (lo, hi) == (plog.log_start_offset, 100)
    names = sorted(f.name for f in (b.data_dir / "retained-0").glob("*.log"))
    assert names[0] == f"{plog.log_start_offset:020d}.log"


def test_partition_growth_and_topic_deletion_follow_the_catalogue(broker: BrokerThread) -> None:
    from confluent_kafka.admin import NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic("grow", 1, 1)]).values():
        f.result(10)
    for f in admin.create_partitions([NewPartitions("grow", 3)]).values():
        f.result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    p.produce("grow", b"to-two", partition=2)
    assert p.flush(10) == 0
    assert broker.broker is not None
    assert broker.broker.logs.get("grow", 2).log_end_offset == 1
    assert (broker.data_dir / "grow-2" / "00000000000000000000.log").stat().st_size > 0
    for f in admin.delete_topics(["grow"]).values():
        f.result(10)
    assert broker.broker.logs.get("grow", 0) is None
    assert not any(broker.data_dir.glob("grow-*"))
