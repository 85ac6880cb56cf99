"""How much one ShareFetch answer holds, seen through confluent-kafka's ``ShareConsumer``
(librdkafka) against kafkalite over TCP, as Apache Kafka 4.4 answers the same steps:

- the fetch that makes a group's share-partitions answers once the first of them is ready
  with records, so an explicit-acknowledgement consumer sees one partition's records per
  poll (the next partition's come in the next ShareFetch, which starts at the next
  partition of the session);
- a share consumer with ``fetch.max.bytes=0`` gets nothing: unlike Fetch (KIP-74), a
  ShareFetch with MaxBytes 0 reads no record at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Message, Producer, ShareConsumer

from kafkalite.broker.testing.fixtures import BrokerThread

from .share_helpers import create_topic, set_group_configs, share_consumer


def produce_per_partition(bootstrap: str, topic: str, partitions: int, each: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for part in range(partitions):
        for i in range(each):
            p.produce(topic, value=f"{part}-{i}".encode(), partition=part)
    assert p.flush(20) == 0


def polls(c: ShareConsumer, want: int, timeout: float, ack: bool
          ) -> list[list[Message]]:
    """Each non-empty poll's records until ``want`` came or ``timeout`` seconds; with
    ``ack`` every record is accepted before the next poll (explicit mode)."""
    batches: list[list[Message]] = []
    deadline = time.monotonic() + timeout
    while sum(map(len, batches)) < want and time.monotonic() < deadline:
        batch = [m for m in c.poll(0.5) if m.error() is None]
        if not batch:
            continue
        batches.append(batch)
        if ack:
            for m in batch:
                c.acknowledge(m)
    return batches


def test_explicit_consumer_gets_one_partitions_records_per_batch(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    boot = broker.bootstrap
    create_topic(boot, "two", 2)
    set_group_configs(boot, "g", {"share.auto.offset.reset": "earliest"})
    produce_per_partition(boot, "two", 2, 50)
    c = share_consumer(boot, "g", "two", explicit=True)
    try:
        batches = polls(c, 100, timeout=30, ack=True)
        c.commit_sync(10)
    finally:
        c.close()
    shape = [[*sorted({m.partition() for m in b}), len(b)] for b in batches]
    # Two batches, each all of one partition's 50 records.
    assert sorted(shape) == [[0, 50], [1, 50]], shape
    assert sorted(int(bytes(m.value() or b"").split(b"-")[1]) for b in batches
                  for m in b) == sorted(list(range(50)) * 2)


def test_fetch_max_bytes_zero_gets_no_records(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    boot = broker.bootstrap
    create_topic(boot, "one", 1)
    set_group_configs(boot, "g", {"share.auto.offset.reset": "earliest"})
    produce_per_partition(boot, "one", 1, 10)
    starved = share_consumer(boot, "g", "one", **{"fetch.max.bytes": 0})
    try:
        # librdkafka asks again at once after each empty answer: a short bounded wait.
        assert polls(starved, 1, timeout=2, ack=False) == []
    finally:
        starved.close()
    # The records were there all along: a consumer of the same group with the default
    # limit gets all ten.
    fed = share_consumer(boot, "g", "one")
    try:
        got = polls(fed, 10, timeout=20, ack=False)
        fed.commit_sync(10)
    finally:
        fed.close()
    assert sum(map(len, got)) == 10
