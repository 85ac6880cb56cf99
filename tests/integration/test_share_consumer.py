"""confluent-kafka's ``ShareConsumer`` (KIP-932 share groups) against kafkalite over TCP:
consumers of one share group splitting a topic, and share-partition state surviving a
restart (what was acknowledged is never delivered again, what was only acquired is)."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import AcknowledgeType

from kafkalite.broker.testing.fixtures import BrokerThread

from .share_helpers import (
    create_topic,
    poll_until,
    produce,
    set_group_configs,
    share_consumer,
    values,
)


def test_three_share_consumers_split_a_topic_each_record_once(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    boot = broker.bootstrap
    create_topic(boot, "work", 4)
    set_group_configs(boot, "workers", {"share.auto.offset.reset": "earliest"})
    consumers = [share_consumer(boot, "workers", "work") for _ in range(3)]
    try:
        # Every member joins (and is assigned) before the records arrive.
        poll_until(consumers, lambda got: False, timeout=3)
        produce(boot, "work", (f"r{i}" for i in range(200)), partitions=4)
        got = poll_until(consumers, lambda got: sum(map(len, got)) >= 200, timeout=30)
        # Implicit acknowledgement: the next poll (or a commit) accepts the last batch.
        for c in consumers:
            c.commit_sync(10)
        everything = [v for g in got for v in values(g)]
        assert sorted(everything) == sorted(f"r{i}" for i in range(200))
        assert sum(1 for g in got if g) >= 2, [len(g) for g in got]
        assert all(m.delivery_count() == 1 for g in got for m in g)
        # Nothing comes again: every record was accepted.
        again = poll_until(consumers, lambda got: False, timeout=2)
        assert sum(map(len, again)) == 0
    finally:
        for c in consumers:
            c.close()


def test_acknowledged_records_never_come_back_after_a_restart_acquired_ones_do(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    boot = broker.bootstrap
    create_topic(boot, "jobs", 1)
    set_group_configs(boot, "g", {"share.auto.offset.reset": "earliest"})
    produce(boot, "jobs", (f"j{i}" for i in range(10)))
    c = share_consumer(boot, "g", "jobs", explicit=True)
    [first] = poll_until([c], lambda got: len(got[0]) >= 10)
    assert values(first) == [f"j{i}" for i in range(10)]
    for m in first[:5]:
        c.acknowledge(m, AcknowledgeType.ACCEPT)
    results = c.commit_sync(10)
    assert all(err is None for err in results.values()), results
    # j5..j9 stay acquired when the broker goes down.
    broker.restart()
    c.close()
    c2 = share_consumer(broker.bootstrap, "g", "jobs", explicit=True)
    try:
        [second] = poll_until([c2], lambda got: len(got[0]) >= 5)
        assert values(second) == [f"j{i}" for i in range(5, 10)]
        assert [m.delivery_count() for m in second] == [2] * 5
        for m in second:
            c2.acknowledge(m, AcknowledgeType.ACCEPT)
        c2.commit_sync(10)
        more = poll_until([c2], lambda got: False, timeout=2)
        assert more == [[]]
    finally:
        c2.close()
