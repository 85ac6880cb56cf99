"""confluent-kafka's ``ShareConsumer`` (KIP-932 share groups) against kafkalite over TCP:
consumers of one share group splitting a topic in implicit acknowledgement mode,
share-partition state surviving a restart (what was acknowledged is never delivered again,
what was only acquired is), and a consumer killed or closed mid-batch whose records go to
another member."""

from __future__ import annotations

import subprocess
import sys
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
    # A fetch takes at most 10 records, each record its own batch: the members take turns.
    consumers = [share_consumer(boot, "workers", "work", **{"max.poll.records": 10})
                 for _ in range(3)]
    try:
        # Every member joins (and is assigned) before the records arrive.
        poll_until(consumers, lambda got: False, timeout=3)
        produce(boot, "work", (f"r{i}" for i in range(200)), partitions=4,
                one_per_batch=True)
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


_CHILD = """
import sys, time
from confluent_kafka import ShareConsumer
c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": "g",
                   "share.acknowledgement.mode": "explicit"})
c.subscribe(["mid"])
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    batch = [m for m in c.poll(0.5) if m.error() is None]
    if batch:
        print(len(batch), flush=True)
        time.sleep(60)
"""


def test_a_consumer_killed_mid_batch_leaves_its_records_to_another_member(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    boot = broker.bootstrap
    create_topic(boot, "mid", 1)
    set_group_configs(boot, "g", {"share.auto.offset.reset": "earliest"})
    produce(boot, "mid", (f"m{i}" for i in range(5)))
    child = subprocess.Popen([sys.executable, "-c", _CHILD, boot], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "5"
        child.kill()  # SIGKILL: no close, no acknowledgement, its connections just drop
        child.wait(10)
        heir = share_consumer(boot, "g", "mid", explicit=True)
        try:
            [got] = poll_until([heir], lambda got: len(got[0]) >= 5, timeout=20)
            assert values(got) == [f"m{i}" for i in range(5)]
            assert [m.delivery_count() for m in got] == [2] * 5
            for m in got:
                heir.acknowledge(m, AcknowledgeType.ACCEPT)
            heir.commit_sync(10)
        finally:
            heir.close()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)


def test_a_consumer_closed_mid_batch_hands_over_what_it_did_not_acknowledge(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    boot = broker.bootstrap
    create_topic(boot, "close", 1)
    set_group_configs(boot, "g", {"share.auto.offset.reset": "earliest"})
    produce(boot, "close", (f"c{i}" for i in range(6)))
    first = share_consumer(boot, "g", "close", explicit=True)
    [got] = poll_until([first], lambda got: len(got[0]) >= 6)
    for m in got[:3]:
        first.acknowledge(m, AcknowledgeType.ACCEPT)
    first.close()  # sends the three acknowledgements and ends its share session
    second = share_consumer(boot, "g", "close", explicit=True)
    try:
        [rest] = poll_until([second], lambda got: len(got[0]) >= 3)
        assert values(rest) == ["c3", "c4", "c5"]
        assert [m.delivery_count() for m in rest] == [2, 2, 2]
        for m in rest:
            second.acknowledge(m, AcknowledgeType.ACCEPT)
        second.commit_sync(10)
        assert poll_until([second], lambda got: False, timeout=2) == [[]]
    finally:
        second.close()
