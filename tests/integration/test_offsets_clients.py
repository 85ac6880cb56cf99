"""Consumers of every Python client commit, close, and a new consumer of the group resumes
at the committed offset; also across a broker restart (offsets reloaded from the log)."""

from __future__ import annotations

import asyncio
import time
import uuid

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import OffsetAndMetadata as AioOffsetAndMetadata
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafkalite.broker.testing.fixtures import BrokerThread

N = 10
FAST_GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500}


def produce(bootstrap: str, topic: str, n: int = N) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(n):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
    assert p.flush(20) == 0


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# --- kafka-python ---------------------------------------------------------------------


def _kp_consumer(bootstrap: str, group: str) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         consumer_timeout_ms=15000, **FAST_GROUP)


def _kp_first_offset(c: KafkaConsumer) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for records in c.poll(timeout_ms=200).values():
            if records:
                return int(records[0].offset)
    raise AssertionError("no record")


def test_kafka_python_commit_resume_with_metadata(broker: BrokerThread) -> None:
    topic, group = _name("kp"), _name("g")
    produce(broker.bootstrap, topic)
    tp = TopicPartition(topic, 0)
    c = _kp_consumer(broker.bootstrap, group)
    c.subscribe([topic])
    assert _kp_first_offset(c) == 0
    c.commit({tp: OffsetAndMetadata(4, "kp-meta", -1)})
    committed = c.committed(tp, metadata=True)
    assert committed.offset == 4 and committed.metadata == "kp-meta"
    c.close()
    c2 = _kp_consumer(broker.bootstrap, group)
    c2.subscribe([topic])
    assert _kp_first_offset(c2) == 4
    c2.close()


# --- aiokafka -------------------------------------------------------------------------


async def _aio_round(bootstrap: str, topic: str, group: str, commit_to: int | None) -> int:
    c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         session_timeout_ms=6000, heartbeat_interval_ms=500)
    await c.start()
    try:
        msg = await asyncio.wait_for(c.getone(), 20)
        if commit_to is not None:
            tp = AioTopicPartition(topic, 0)
            await c.commit({tp: AioOffsetAndMetadata(commit_to, "aio-meta")})
            assert await c.committed(tp) == commit_to
        return int(msg.offset)
    finally:
        await c.stop()


def test_aiokafka_commit_resume_across_restart(broker: BrokerThread) -> None:
    topic, group = _name("aio"), _name("g")
    produce(broker.bootstrap, topic)
    assert asyncio.run(_aio_round(broker.bootstrap, topic, group, 6)) == 0
    assert asyncio.run(_aio_round(broker.bootstrap, topic, group, None)) == 6
    broker.restart()
    assert asyncio.run(_aio_round(broker.bootstrap, topic, group, None)) == 6


# --- confluent-kafka ------------------------------------------------------------------


def _ck_consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})


def _ck_first_offset(c: Consumer) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            return int(m.offset())
    raise AssertionError("no record")


def test_confluent_commit_resume_across_restart(broker: BrokerThread) -> None:
    topic, group = _name("ck"), _name("g")
    produce(broker.bootstrap, topic)
    c = _ck_consumer(broker.bootstrap, group)
    c.subscribe([topic])
    assert _ck_first_offset(c) == 0
    c.commit(offsets=[CkTopicPartition(topic, 0, 3, metadata="ck-meta")], asynchronous=False)
    [got] = c.committed([CkTopicPartition(topic, 0)], timeout=10)
    assert got.offset == 3 and got.metadata == "ck-meta"
    c.close()
    broker.restart()
    c2 = _ck_consumer(broker.bootstrap, group)
    c2.subscribe([topic])
    assert _ck_first_offset(c2) == 3
    [got] = c2.committed([CkTopicPartition(topic, 0)], timeout=10)
    assert got.metadata == "ck-meta"
    c2.close()


def test_offsets_dump_of_a_live_broker(broker: BrokerThread) -> None:
    import json
    import subprocess
    import sys

    topic, group = _name("dump"), _name("g")
    produce(broker.bootstrap, topic)
    c = _ck_consumer(broker.bootstrap, group)
    c.subscribe([topic])
    _ck_first_offset(c)
    c.commit(offsets=[CkTopicPartition(topic, 0, 9)], asynchronous=False)
    c.close()
    out = subprocess.run(
        [sys.executable, "-m", "kafkalite", "offsets", "dump", "--data-dir", str(broker.data_dir)],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    commits = [r for r in rows if r["key"]["type"] == "1" and r["key"]["data"]["group"] == group]
    assert commits[-1]["value"]["data"]["offset"] == 9
    assert commits[-1]["value"]["version"] == "3"
    groups = [r for r in rows if r["key"] == {"type": "2", "data": {"group": group}}]
    stable = [r for r in groups if r["value"]["data"]["members"]]
    member = stable[-1]["value"]["data"]["members"][0]
    assert member["clientId"] == "rdkafka"
    assert member["subscription"]["topics"] == [topic]
    assert member["assignment"]["assignedPartitions"] == [{"topic": topic, "partitions": [0]}]
    # After the consumer left, the group's last record has no members.
    assert groups[-1]["value"]["data"]["members"] == []
