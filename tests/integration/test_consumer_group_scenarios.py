"""The coordinator scenarios on a KIP-848 consumer group with librdkafka's consumer
(``group.protocol=consumer``) over TCP: a forced rebalance (the member moves to the new
group epoch and keeps its partitions), an expired member (it rejoins and gets its
partitions back), and a fenced static member (librdkafka's heartbeat, which names no
instance id, finds its member gone; it rejoins with the instance id, is refused
UNRELEASED_INSTANCE_ID while the replacement holds it, which librdkafka raises as fatal;
the replacement, which no client holds, expires with its session)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer

from kafkalite.broker.testing.fixtures import BrokerThread

from .kip848_helpers import FAST_CONSUMER_GROUPS, SESSION_S

GROUP, TOPIC = "scenes-848", "scenes"


def _group(broker: BrokerThread) -> Any:
    return broker.call(lambda: broker.inner.groups.core.consumer_group(GROUP))


def _until(c: Consumer, done: Callable[[], bool], what: str, limit: float = 20) -> list[Any]:
    """Poll ``c`` until ``done``; the errors it delivered meanwhile."""
    errors = []
    deadline = time.monotonic() + limit
    while not done():
        assert time.monotonic() < deadline, what
        m = c.poll(0.05)
        if m is not None and m.error() is not None:
            errors.append(m.error())
    return errors


def _settled(broker: BrokerThread, members: int) -> Callable[[], bool]:
    def check() -> bool:
        g = _group(broker)
        return (g is not None and len(g.members) == members and g.state.value == "Stable"
                and all(m.member_epoch == g.group_epoch for m in g.members.values()))
    return check


def test_scenarios_reach_a_kip848_consumer(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory(FAST_CONSUMER_GROUPS)
    broker.call(lambda: broker.inner.create_topic(TOPIC, 2))
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(4):
        p.produce(TOPIC, b"v", partition=i % 2)
    assert p.flush(10) == 0
    settings = {"bootstrap.servers": broker.bootstrap, "group.id": GROUP,
                "group.protocol": "consumer", "auto.offset.reset": "earliest"}
    c: Consumer | None = Consumer(settings)
    static = None
    try:
        assert c is not None
        c.subscribe([TOPIC])

        def owns_both() -> bool:
            assert c is not None
            return {tp.partition for tp in c.assignment()} == {0, 1}

        _until(c, _settled(broker, 1), "the consumer never got its partitions")
        (mid,) = _group(broker).members
        epoch = _group(broker).group_epoch

        # A forced rebalance: a new group epoch, which the consumer reconciles to.
        assert broker.scenario("rebalance", group_id=GROUP) == {
            "error": "NONE", "group_id": GROUP}
        _until(c, lambda: _group(broker).members[mid].member_epoch == epoch + 1
               and owns_both(), "the consumer did not move to the new epoch")

        # An expired member: its next heartbeat is answered UNKNOWN_MEMBER_ID, it joins
        # again and gets both partitions.
        assert broker.scenario("expire-member", group_id=GROUP, member_id=mid)[
            "error"] == "NONE"
        # The client applies what the broker sent when it next polls: both are waited for.
        _until(c, lambda: _settled(broker, 1)() and _group(broker).group_epoch > epoch + 2
               and owns_both(), "the expired consumer did not come back")
        assert broker.scenario("expire-member", group_id=GROUP, member_id="nobody")[
            "error"] == "UNKNOWN_MEMBER_ID"
        c.close()
        c = None

        # A static member's instance id taken over: the client is told it was fenced.
        static = Consumer({**settings, "group.instance.id": "instance-1"})
        static.subscribe([TOPIC])
        _until(static, lambda: _group(broker).static_members.get("instance-1") is not None
               and _settled(broker, 1)(), "the static consumer never joined")
        old = _group(broker).static_members["instance-1"]
        fenced = broker.scenario("fence-static-member", group_id=GROUP,
                                 group_instance_id="instance-1")
        assert fenced["error"] == "NONE" and fenced["member_id"] not in (old, None)
        seen: list[Any] = []

        def told() -> bool:
            m = static.poll(0.05)
            if m is not None and m.error() is not None:
                seen.append(m.error())
            return any(e.code() == KafkaError._FATAL for e in seen)

        deadline = time.monotonic() + 20
        while not told():
            assert time.monotonic() < deadline, f"the consumer was not told: {seen}"
        assert "instance ID is still used by another member" in seen[-1].str(), seen
        # Nobody heartbeats as the replacement: it is fenced when its session ends.
        deadline = time.monotonic() + 3 * SESSION_S
        while _group(broker).members:
            assert time.monotonic() < deadline, "the replacement did not expire"
            time.sleep(0.1)
    finally:
        if c is not None:
            c.close()
        if static is not None:
            static.close()
