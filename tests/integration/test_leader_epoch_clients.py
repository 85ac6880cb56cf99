"""librdkafka's position validation (KIP-320) against kafkalite: a consumer that seeks to a
position carrying a leader epoch, or that learns of a new leader epoch while fetching, asks
OffsetForLeaderEpoch where its epoch ended, and goes on consuming when the answer shows
no truncation. The broker's side of each exchange is recorded."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol.errors import ErrorCode

from .api_recorder import Calls, record

OFFSET_FOR_LEADER_EPOCH = 23


def produce(bootstrap: str, topic: str, n: int, start: int = 0) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(start, start + n):
        p.produce(topic, value=f"m{i}".encode(), partition=0)
    assert p.flush(10) == 0


def consume(c: Consumer, n: int, limit: float = 15) -> list[Message]:
    got: list[Message] = []
    deadline = time.monotonic() + limit
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got.append(m)
    assert len(got) == n, f"consumed {len(got)} of {n}"
    return got


def answered(calls: Calls) -> list[tuple[int, int, ErrorCode, int, int]]:
    """(current leader epoch, leader epoch asked, error, epoch, end offset) per partition."""
    out = []
    for _v, req, resp in calls.seen:
        for t, rt in zip(req.topics, resp.topics, strict=True):
            for p, rp in zip(t.partitions, rt.partitions, strict=True):
                out.append((p.current_leader_epoch, p.leader_epoch, rp.error_code,
                            rp.leader_epoch, rp.end_offset))
    return out


def new_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(10)


def consumer(bootstrap: str, topic: str) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-g",
                  "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 500})
    c.assign([TopicPartition(topic, 0, 0)])
    return c


def test_seek_with_a_leader_epoch_is_validated(broker: BrokerThread) -> None:
    new_topic(broker.bootstrap, "v")
    produce(broker.bootstrap, "v", 20)
    calls = record(broker, OFFSET_FOR_LEADER_EPOCH)
    c = consumer(broker.bootstrap, "v")
    try:
        first = consume(c, 10)
        assert {m.leader_epoch() for m in first} == {0}
        # Seek back to a fetched message's position, with the epoch it was fetched in.
        m = first[5]
        c.seek(TopicPartition("v", 0, m.offset(), leader_epoch=m.leader_epoch()))
        again = consume(c, 15)
        assert [x.offset() for x in again] == list(range(5, 20))
    finally:
        c.close()
    assert answered(calls) == [(0, 0, ErrorCode.none, 0, 20)]


def test_a_new_leader_epoch_is_validated_and_consumption_goes_on(broker: BrokerThread) -> None:
    new_topic(broker.bootstrap, "lead")
    produce(broker.bootstrap, "lead", 10)
    calls = record(broker, OFFSET_FOR_LEADER_EPOCH)
    c = consumer(broker.bootstrap, "lead")
    try:
        assert [m.leader_epoch() for m in consume(c, 10)] == [0] * 10
        # A leadership change, as a broker sees one: the partition leads in epoch 1 from
        # its log end (offset 10) on. The consumer's next fetch is fenced, it refreshes
        # metadata, and validates its position (offset 10, epoch 0) against epoch 0's end.
        assert broker.broker is not None
        plog = broker.broker.logs.get("lead", 0)
        assert plog is not None
        broker.call(lambda: plog.become_leader(1))
        deadline = time.monotonic() + 15
        while not calls.seen and time.monotonic() < deadline:
            m = c.poll(0.2)
            assert m is None or m.error() is not None  # nothing new to read yet
        produce(broker.bootstrap, "lead", 5, start=10)
        later = consume(c, 5)
        assert [(m.offset(), m.leader_epoch()) for m in later] == [(o, 1) for o in range(10, 15)]
    finally:
        c.close()
    assert answered(calls) == [(1, 0, ErrorCode.none, 0, 10)]
