"""Real consumers over transactional data: read_committed delivers exactly the committed
records, once, in order; read_uncommitted delivers every data record; no client ever shows
a transaction marker; a read_committed consumer waiting at the last stable offset goes on
when the transaction ends.

Transactional batches go in through Produce requests (a transactional id, batches built
with the transactional flag); the markers through the log's API for the coordinator
(``PartitionLog.append_control_marker``), on the broker's event loop. The producer ids are
made up, so the brokers here do not verify transactional batches with the transaction
coordinator (``transaction.partition.verification.enable=false``); the coordinator's own
path is in ``test_transactions_producers.py``.
"""

from __future__ import annotations

import asyncio
import datetime
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTP
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KTP
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.records import (
    ATTR_TRANSACTIONAL,
    COMPRESSION_GZIP,
    COMPRESSION_NONE,
    NewRecord,
    build_batch,
)
from kafkalite.storage.log import PartitionLog

from .java_support import run_java

TOPIC = "txn-history"
A, B = 9001, 9002
T0 = 1_700_000_000_000
UNVERIFIED = {"transaction.partition.verification.enable": "false"}
COMMITTED = ["p0", "p1", "a0", "a1", "a1b", "p2", "a2", "b2", "end"]
EVERYTHING = ["p0", "p1", "a0", "a1", "a1b", "b0", "p2", "b1", "a2", "b2", "end"]


class Writer:
    """Produce requests with hand-built batches, and markers on the broker's loop."""

    def __init__(self, broker: BrokerThread, topic: str) -> None:
        self.broker = broker
        self.topic = topic
        self.conn = RawConnection(broker.bootstrap, "txn-writer")
        self.seq: dict[int, int] = {}

    def send(self, *values: str, pid: int = -1, codec: int = COMPRESSION_NONE) -> int:
        seq = -1
        if pid >= 0:
            seq = self.seq.get(pid, 0)
            self.seq[pid] = seq + len(values)
        batch = build_batch([NewRecord(None, v.encode(), T0) for v in values], timestamp=T0,
                            compression=codec, producer_id=pid,
                            producer_epoch=0 if pid >= 0 else -1, base_sequence=seq,
                            attributes=ATTR_TRANSACTIONAL if pid >= 0 else 0)
        resp = self.conn.call(ProduceRequest(
            transactional_id="app-tx" if pid >= 0 else None, acks=-1,
            timeout=datetime.timedelta(seconds=5),
            topic_data=(TopicProduceData(name=self.topic, partition_data=(
                PartitionProduceData(index=0, records=batch),)),)))
        p = resp.responses[0].partition_responses[0]
        assert p.error_code is ErrorCode.none, p
        return int(p.base_offset)

    def log(self) -> PartitionLog:
        assert self.broker.broker is not None
        plog = self.broker.broker.logs.get(self.topic, 0)
        assert plog is not None
        return plog

    def end(self, pid: int, commit: bool) -> int:
        plog = self.log()
        return self.broker.call(lambda: plog.append_control_marker(pid, 0, 0, commit))

    def close(self) -> None:
        self.conn.close()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    """Two producers' transactions, interleaved with plain records: A commits twice, B
    aborts once (its batches on both sides of A's commit), then commits."""
    broker = BrokerThread(tmp_path_factory.mktemp("txn") / "data", UNVERIFIED).start()
    w = Writer(broker, TOPIC)
    w.send("p0")
    w.send("p1")
    w.send("a0", pid=A)
    w.send("a1", "a1b", pid=A, codec=COMPRESSION_GZIP)
    w.send("b0", pid=B)
    w.send("p2")
    w.end(A, commit=True)
    w.send("b1", pid=B)
    w.end(B, commit=False)
    w.send("a2", pid=A)
    w.end(A, commit=True)
    w.send("b2", pid=B)
    w.end(B, commit=True)
    w.send("end")
    plog = w.log()
    assert plog.last_stable_offset == plog.log_end_offset == 15
    w.close()
    yield broker
    broker.stop()


def confluent_read(bootstrap: str, topic: str, isolation: str, last: str = "end",
                   timeout: float = 30) -> list[tuple[int, str]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{isolation}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "fetch.max.bytes": 1000, "message.max.bytes": 1000,
                  "max.partition.fetch.bytes": 300})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[tuple[int, str]] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not (out and out[-1][1] == last):
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                out.append((m.offset(), m.value().decode()))
    finally:
        c.close()
    return out


def test_confluent_kafka_read_committed_and_uncommitted(history: BrokerThread) -> None:
    committed = confluent_read(history.bootstrap, TOPIC, "read_committed")
    assert [v for _o, v in committed] == COMMITTED
    uncommitted = confluent_read(history.bootstrap, TOPIC, "read_uncommitted")
    assert [v for _o, v in uncommitted] == EVERYTHING
    # Offsets are the records' own: the markers between them are skipped, never shown.
    assert [o for o, _v in uncommitted] == [0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 14]


def test_aiokafka_read_committed(history: BrokerThread) -> None:
    async def read() -> tuple[list[str], int]:
        c = AIOKafkaConsumer(bootstrap_servers=history.bootstrap,
                             isolation_level="read_committed", enable_auto_commit=False,
                             max_partition_fetch_bytes=300)
        await c.start()
        try:
            tp = AioTP(TOPIC, 0)
            c.assign([tp])
            await c.seek_to_beginning(tp)
            values: list[str] = []
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and (not values or values[-1] != "end"):
                got = await c.getmany(tp, timeout_ms=200)
                values += [m.value.decode() for m in got.get(tp, [])]
            return values, (await c.end_offsets([tp]))[tp]
        finally:
            await c.stop()

    values, end = asyncio.run(read())
    assert values == COMMITTED
    assert end == 15


def test_kafka_python_read_committed(history: BrokerThread) -> None:
    c = KafkaConsumer(bootstrap_servers=history.bootstrap, isolation_level="read_committed",
                      enable_auto_commit=False, max_partition_fetch_bytes=300)
    tp = KTP(TOPIC, 0)
    try:
        c.assign([tp])
        c.seek_to_beginning(tp)
        values: list[str] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not values or values[-1] != "end"):
            for msgs in c.poll(timeout_ms=200).values():
                values += [m.value.decode() for m in msgs]
    finally:
        c.close()
    assert values == COMMITTED


def test_java_consumer_read_committed(history: BrokerThread) -> None:
    out = run_java("ReadCommitted", history.bootstrap, TOPIC, "read_committed", "end")
    assert out["values"].split(",") == COMMITTED
    assert out["end.offset"] == "15"
    out = run_java("ReadCommitted", history.bootstrap, TOPIC, "read_uncommitted",
                   "end")
    assert out["values"].split(",") == EVERYTHING


@pytest.fixture
def broker(kafkalite_factory: Callable[..., BrokerThread]) -> BrokerThread:
    return kafkalite_factory(UNVERIFIED)


def test_consumers_wait_at_the_lso_until_the_transaction_ends(broker: BrokerThread) -> None:
    topic = "txn-open"
    w = Writer(broker, topic)
    w.send("p0")
    w.send("a0", pid=A)
    w.send("p1")  # past the open transaction: not readable under read_committed yet

    aio_got: list[str] = []
    stop = threading.Event()

    async def aio_consume() -> None:
        a = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap,
                             isolation_level="read_committed", enable_auto_commit=False,
                             fetch_max_wait_ms=100)
        await a.start()
        try:
            tp = AioTP(topic, 0)
            a.assign([tp])
            await a.seek_to_beginning(tp)
            while not stop.is_set():
                res = await a.getmany(tp, timeout_ms=100)
                aio_got.extend(m.value.decode() for m in res.get(tp, []))
        finally:
            await a.stop()

    aio = threading.Thread(target=lambda: asyncio.run(aio_consume()), daemon=True)
    aio.start()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "waiting",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])

    def poll_until(n: int, seconds: float, got: list[str]) -> list[str]:
        deadline = time.monotonic() + seconds
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                got.append(m.value().decode())
        return got

    try:
        # Both consumers get p0 and then wait: a0 is undecided, p1 lies past it.
        seen = poll_until(2, 2.0, [])
        assert seen == ["p0"]
        assert aio_got == ["p0"]
        w.end(A, commit=True)
        assert poll_until(3, 15, seen) == ["p0", "a0", "p1"]
        deadline = time.monotonic() + 15
        while len(aio_got) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert aio_got == ["p0", "a0", "p1"]
    finally:
        stop.set()
        aio.join(10)
        c.close()
        w.close()
