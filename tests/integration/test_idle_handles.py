"""A broker's idle partitions give their file descriptors back (``storage/handles.py``)
and a real client produces and consumes through the reopened files as before."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.storage import handles

TOPIC = "idle-handles"


def produce(broker: BrokerThread, first: int, last: int) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "acks": "all",
                  "enable.idempotence": True})
    for i in range(first, last):
        p.produce(TOPIC, key=str(i).encode(), value=b"v%d" % i, partition=i % 3)
    assert p.flush(30) == 0


def consume_all(broker: BrokerThread, want: int) -> dict[int, list[bytes]]:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "idle",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(3)])
    got: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    deadline = time.monotonic() + 30
    while sum(map(len, got.values())) < want and time.monotonic() < deadline:
        for m in c.consume(500, 0.5):
            assert m.error() is None, m.error()
            got[m.partition()].append(m.value())
    c.close()
    return got


def test_partitions_swept_idle_serve_produce_and_fetch(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker({"num.partitions": "3", "log.segment.bytes": "8192"})
    produce(broker, 0, 600)
    # Two sweeps with nothing in between: every descriptor of the idle logs is closed.
    broker.call(lambda: handles.sweep(force=True))
    broker.call(lambda: handles.sweep(force=True))
    assert broker.call(handles.count) == 0
    got = consume_all(broker, 600)
    assert {p: len(v) for p, v in got.items()} == {0: 200, 1: 200, 2: 200}
    assert got[1][:2] == [b"v1", b"v4"]
    broker.call(lambda: handles.release_all())
    produce(broker, 600, 900)
    got = consume_all(broker, 900)
    assert [got[p] for p in range(3)] == [
        [b"v%d" % i for i in range(p, 900, 3)] for p in range(3)]
