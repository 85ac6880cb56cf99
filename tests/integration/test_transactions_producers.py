"""Transactional producers over TCP against the transaction coordinator: confluent-kafka's
consume-transform-produce loop, aiokafka's and kafka-python's transactional producers,
fencing, and OffsetFetch's ``require_stable`` while offsets are pending. Consumers check
what read_committed and read_uncommitted deliver."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTP
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from kafka import KafkaProducer
from kafka import TopicPartition as KTP
from kafka.structs import OffsetAndMetadata

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode

from .java_support import run_java

OFFSET_FETCH = 9


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    b = BrokerThread(tmp_path_factory.mktemp("txn-producers") / "data", {
        "transaction.state.log.num.partitions": "4", "num.partitions": "1"}).start()
    yield b
    b.stop()


def fill(bootstrap: str, topic: str, values: list[str]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for v in values:
        p.produce(topic, v.encode())
    assert p.flush(20) == 0


def read_all(bootstrap: str, topic: str, isolation: str, expect: int,
             seconds: float = 20) -> list[str]:
    """Every record of partition 0 from the start, as a consumer of that isolation level
    gets it; stops once ``expect`` arrived and the partition end was reached."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{isolation}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got: list[str] = []
    at_end = False
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline and not (at_end and len(got) >= expect):
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                at_end = m.error().code() == KafkaError._PARTITION_EOF
                continue
            at_end = False
            got.append(m.value().decode())
    finally:
        c.close()
    return got


def committed(bootstrap: str, group: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        (tp,) = c.committed([TopicPartition(topic, 0)], 10)
        return int(tp.offset)
    finally:
        c.close()


# --- confluent-kafka -------------------------------------------------------------------------


def test_confluent_consume_transform_produce_with_commits_and_aborts(
        broker: BrokerThread) -> None:
    """The exactly-once loop: read a batch, write its transform and the consumer's
    offsets in one transaction; every third transaction is aborted and the batch read
    again from the committed offsets, as an application retries."""
    inputs = [f"in-{i}" for i in range(12)]
    fill(broker.bootstrap, "ctp-in", inputs)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ctp",
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition("ctp-in", 0)])
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "ctp-app",
                  "linger.ms": 0})
    p.init_transactions(20)
    written: list[str] = []  # every record produced, committed or not, in order
    attempt = 0
    done = 0
    try:
        while done < len(inputs):
            msgs = c.consume(3, 5)
            assert msgs and all(m.error() is None for m in msgs)
            attempt += 1
            p.begin_transaction()
            for m in msgs:
                out = m.value().decode().replace("in", f"out{attempt % 3}")
                p.produce("ctp-out", out.encode())
                written.append(out)
            p.send_offsets_to_transaction(c.position(c.assignment()),
                                          c.consumer_group_metadata(), 20)
            if attempt % 3 == 2:
                assert p.flush(10) == 0  # written, then aborted (not just purged unsent)
                p.abort_transaction(20)
                # Back to the last committed offsets: the batch is processed again.
                c.seek(c.committed(c.assignment(), 10)[0])
                continue
            p.commit_transaction(20)
            done += len(msgs)
    finally:
        c.close()
    assert attempt > 4  # some aborted
    committed_out = read_all(broker.bootstrap, "ctp-out", "read_committed", len(inputs))
    # Exactly the committed transforms: each input once, in order.
    assert [v.split("-", 1)[1] for v in committed_out] == [str(i) for i in range(12)]
    assert all(not v.startswith("out2") for v in committed_out)
    # read_uncommitted: every record written, aborted ones included, and nothing else
    # (no marker shows up as a record).
    assert read_all(broker.bootstrap, "ctp-out", "read_uncommitted", len(written)) == written
    assert committed(broker.bootstrap, "ctp", "ctp-in") == len(inputs)


def test_confluent_producer_is_fenced_by_a_second_one(broker: BrokerThread) -> None:
    first = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "fence-me",
                      "linger.ms": 0})
    first.init_transactions(20)
    first.begin_transaction()
    first.produce("fence-out", b"zombie")
    assert first.flush(10) == 0
    second = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "fence-me",
                       "linger.ms": 0})
    second.init_transactions(20)  # aborts the first one's transaction, bumps the epoch
    with pytest.raises(KafkaException) as raised:
        first.commit_transaction(20)
    err = raised.value.args[0]
    assert err.fatal() and err.code() == KafkaError._FENCED, err
    second.begin_transaction()
    second.produce("fence-out", b"alive")
    second.commit_transaction(20)
    assert read_all(broker.bootstrap, "fence-out", "read_committed", 1) == ["alive"]
    assert read_all(broker.bootstrap, "fence-out", "read_uncommitted", 2) == [
        "zombie", "alive"]


def test_offset_fetch_require_stable_while_offsets_are_pending(broker: BrokerThread) -> None:
    fill(broker.bootstrap, "stable-in", ["a", "b", "c"])
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "stable-app"})
    p.init_transactions(20)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "stable-g"})
    p.begin_transaction()
    p.send_offsets_to_transaction([TopicPartition("stable-in", 0, 3)],
                                  c.consumer_group_metadata(), 20)
    conn = RawConnection(broker.bootstrap, "stable-check")
    topic_t = request_class(OFFSET_FETCH, 7, "OffsetFetchRequestTopic")

    def fetch(stable: bool) -> tuple[int, int]:
        resp = conn.call(request(OFFSET_FETCH, 7, group_id="stable-g", require_stable=stable,
                                 topics=(topic_t(name="stable-in", partition_indexes=(0,)),)))
        part = resp.topics[0].partitions[0]
        return int(part.error_code), int(part.committed_offset)

    try:
        assert fetch(True) == (ErrorCode.unstable_offset_commit, -1)
        assert fetch(False) == (0, -1)
        p.commit_transaction(20)
        assert fetch(True) == (0, 3)
        # A read_committed member of the group starts at the committed offset.
        c.subscribe(["stable-in"])
        c2 = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "stable-g",
                       "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
        c2.assign([TopicPartition("stable-in", 0)])
        fill(broker.bootstrap, "stable-in", ["d"])
        m = None
        deadline = time.monotonic() + 15
        while m is None and time.monotonic() < deadline:
            m = c2.poll(0.2)
        assert m is not None and (m.offset(), m.value()) == (3, b"d")
        c2.close()
    finally:
        conn.close()
        c.close()


# --- aiokafka, kafka-python ------------------------------------------------------------------


def test_aiokafka_transactions_commit_and_abort(broker: BrokerThread) -> None:
    async def run() -> list[str]:
        p = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="aio-app")
        await p.start()
        try:
            async with p.transaction():
                await p.send_and_wait("aio-out", b"c1")
                await p.send_offsets_to_transaction({AioTP("aio-in", 0): 5}, "aio-g")
            with pytest.raises(RuntimeError):
                async with p.transaction():
                    await p.send_and_wait("aio-out", b"a1")
                    await p.send_offsets_to_transaction({AioTP("aio-in", 0): 9}, "aio-g")
                    raise RuntimeError("abort this one")
            async with p.transaction():
                await p.send_and_wait("aio-out", b"c2")
        finally:
            await p.stop()
        c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap,
                             isolation_level="read_committed", enable_auto_commit=False)
        await c.start()
        try:
            tp = AioTP("aio-out", 0)
            c.assign([tp])
            await c.seek_to_beginning(tp)
            got: list[str] = []
            deadline = time.monotonic() + 15
            while len(got) < 2 and time.monotonic() < deadline:
                res = await c.getmany(tp, timeout_ms=200)
                got.extend(m.value.decode() for m in res.get(tp, []))
            return got
        finally:
            await c.stop()

    fill(broker.bootstrap, "aio-in", [str(i) for i in range(10)])
    assert asyncio.run(run()) == ["c1", "c2"]
    assert committed(broker.bootstrap, "aio-g", "aio-in") == 5
    assert read_all(broker.bootstrap, "aio-out", "read_uncommitted", 3) == ["c1", "a1", "c2"]


def test_kafka_python_transactions_commit_and_abort(broker: BrokerThread) -> None:
    fill(broker.bootstrap, "kp-in", [str(i) for i in range(10)])
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="kp-app")
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send("kp-out", b"a1").get(10)  # written, then aborted
        p.send_offsets_to_transaction({KTP("kp-in", 0): OffsetAndMetadata(7, "", -1)}, "kp-g")
        p.abort_transaction()
        p.begin_transaction()
        p.send("kp-out", b"c1")
        p.send_offsets_to_transaction({KTP("kp-in", 0): OffsetAndMetadata(4, "", -1)}, "kp-g")
        p.commit_transaction()
    finally:
        p.close()
    assert read_all(broker.bootstrap, "kp-out", "read_committed", 1) == ["c1"]
    assert read_all(broker.bootstrap, "kp-out", "read_uncommitted", 2) == ["a1", "c1"]
    assert committed(broker.bootstrap, "kp-g", "kp-in") == 4


# --- the Java client ------------------------------------------------------------------------


def test_java_transactions_offsets_abort_and_fencing(broker: BrokerThread) -> None:
    fill(broker.bootstrap, "java-in", [f"v{i}" for i in range(6)])
    out = run_java("Transactions", broker.bootstrap, "java-in", "java-out", "java-g")
    # A read_committed KafkaConsumer in the group: the transforms of committed batches,
    # once, in order; the group's offsets moved by sendOffsetsToTransaction.
    assert out["committed-values"].split(",") == [f"t-v{i}" for i in range(6)]
    assert int(out["attempts"]) > 3  # some aborted
    # read_uncommitted: the aborted transforms too, and nothing else.
    assert out["uncommitted-count"] == out["written"]
    assert int(out["written"]) > 6
    assert out["group-offset"] == "6"
    assert out["fenced"] == "ProducerFencedException"
    # The admin APIs kafka-transactions.sh uses: the transaction completed, no partition
    # left in it (kafka-clients 4.x speaks transaction version 2, where every commit and
    # abort bumps the epoch); one producer on the output partition, with no transaction
    # open there.
    assert "java-app:CompleteCommit" in out["listed"].split(",")
    assert out["described"] == f"CompleteCommit:{out['attempts']}:0"
    assert out["producers"] == "1:false"
    assert committed(broker.bootstrap, "java-g", "java-in") == 6
