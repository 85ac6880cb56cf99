"""confluent-kafka's ``ShareConsumer`` in explicit acknowledgement mode against kafkalite:
ACCEPT, RELEASE and REJECT, a released record delivered again with a higher delivery
count, the delivery count limit archiving a poison record, and an acquisition lock expiring
when the broker's manual clock is advanced."""

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

EARLIEST = {"share.auto.offset.reset": "earliest"}


def test_accept_release_reject_and_redelivery_with_a_higher_count(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    boot = broker.bootstrap
    create_topic(boot, "acks", 1)
    set_group_configs(boot, "g", EARLIEST)
    produce(boot, "acks", ["accept-me", "release-me", "reject-me"])
    c = share_consumer(boot, "g", "acks", explicit=True)
    try:
        [first] = poll_until([c], lambda got: len(got[0]) >= 3)
        assert values(first) == ["accept-me", "release-me", "reject-me"]
        assert [m.delivery_count() for m in first] == [1, 1, 1]
        kinds = [AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT]
        for m, kind in zip(first, kinds, strict=True):
            c.acknowledge(m, kind)
        assert all(e is None for e in c.commit_sync(10).values())
        [again] = poll_until([c], lambda got: len(got[0]) >= 1)
        assert values(again) == ["release-me"]
        assert again[0].delivery_count() == 2
        assert again[0].offset() == first[1].offset()
        c.acknowledge(again[0], AcknowledgeType.ACCEPT)
        c.commit_sync(10)
        assert poll_until([c], lambda got: False, timeout=2) == [[]]
    finally:
        c.close()


def test_the_delivery_count_limit_archives_a_poison_record(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    boot = broker.bootstrap
    create_topic(boot, "poison", 1)
    set_group_configs(boot, "g", {**EARLIEST, "share.delivery.count.limit": "2"})
    produce(boot, "poison", ["bad", "good"])
    c = share_consumer(boot, "g", "poison", explicit=True)
    seen: list[tuple[str, int]] = []
    try:
        for _ in range(2):
            [batch] = poll_until([c], lambda got: len(got[0]) >= 1)
            for m in batch:
                seen.append((values([m])[0], m.delivery_count()))
                bad = m.value() == b"bad"
                c.acknowledge(m, AcknowledgeType.RELEASE if bad else AcknowledgeType.ACCEPT)
            c.commit_sync(10)
        assert seen == [("bad", 1), ("good", 1), ("bad", 2)]
        # Released at the limit: archived, never delivered again; later records still are.
        produce(boot, "poison", ["after"])
        [rest] = poll_until([c], lambda got: len(got[0]) >= 1)
        assert values(rest) == ["after"]
        c.acknowledge(rest[0], AcknowledgeType.ACCEPT)
        c.commit_sync(10)
    finally:
        c.close()


def test_a_lock_expires_when_the_manual_clock_passes_it(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory(manual_clock=True)
    boot = broker.bootstrap
    create_topic(boot, "slow", 1)
    set_group_configs(boot, "g", {**EARLIEST, "share.record.lock.duration.ms": "15000"})
    produce(boot, "slow", ["held"])
    holder = share_consumer(boot, "g", "slow", explicit=True)
    other = share_consumer(boot, "g", "slow", explicit=True)
    try:
        [got, _none] = poll_until([holder, other], lambda got: len(got[0]) >= 1)
        assert values(got) == ["held"] and got[0].delivery_count() == 1
        # Nothing for the other member while the lock holds.
        assert poll_until([other], lambda got: False, timeout=1.5) == [[]]
        broker.advance(14_999)
        assert poll_until([other], lambda got: False, timeout=1) == [[]]
        broker.advance(1)
        [late] = poll_until([other], lambda got: len(got[0]) >= 1, timeout=10)
        assert values(late) == ["held"] and late[0].delivery_count() == 2
        other.acknowledge(late[0], AcknowledgeType.ACCEPT)
        other.commit_sync(10)
    finally:
        holder.close()
        other.close()


def test_implicit_mode_accepts_a_batch_on_the_next_poll(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    boot = broker.bootstrap
    create_topic(boot, "auto", 1)
    set_group_configs(boot, "g", EARLIEST)
    produce(boot, "auto", (f"a{i}" for i in range(5)))
    first = share_consumer(boot, "g", "auto")
    [got] = poll_until([first], lambda got: len(got[0]) >= 5)
    assert values(got) == [f"a{i}" for i in range(5)]
    first.poll(0.5)  # accepts the previous batch
    first.close()
    second = share_consumer(boot, "g", "auto")
    try:
        assert poll_until([second], lambda got: False, timeout=2) == [[]]
        produce(boot, "auto", ["a5"])
        [late] = poll_until([second], lambda got: len(got[0]) >= 1)
        assert values(late) == ["a5"] and late[0].delivery_count() == 1
        second.commit_sync(10)
    finally:
        second.close()
