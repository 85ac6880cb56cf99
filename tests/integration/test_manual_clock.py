"""The manual clock and coordinator scenarios on a real broker over TCP: a 45 s session
expires and a week of offset retention passes in milliseconds of wall time, and forced
coordinator states reach a real consumer as Kafka would send them."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode as E

FIND, JOIN, HEARTBEAT, SYNC, DESCRIBE = 10, 11, 12, 14, 15
GROUP = "clock-group"
SESSION = 45_000
WEEK = 7 * 24 * 3_600_000
CHECK = 600_000  # offsets.retention.check.interval.ms (Kafka's default)


def _join(conn: RawConnection) -> Any:
    proto = request_class(JOIN, 9, "JoinGroupRequestProtocol")
    member_id = ""
    for _ in range(2):
        resp = conn.call(request(
            JOIN, 9, group_id=GROUP, session_timeout=timedelta(milliseconds=SESSION),
            rebalance_timeout=timedelta(milliseconds=SESSION), member_id=member_id,
            group_instance_id=None, protocol_type="consumer", reason=None,
            protocols=(proto(name="range", metadata=b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"),),
        ))
        if resp.error_code != E.member_id_required:
            return resp
        member_id = resp.member_id
    raise AssertionError("no member id")


def _members(conn: RawConnection) -> tuple[str, list[str]]:
    [g] = conn.call(request(DESCRIBE, 5, groups=(GROUP,),
                            include_authorized_operations=False)).groups
    return str(g.group_state), [m.member_id for m in g.members]


def test_a_45_second_session_expires_when_the_clock_is_advanced(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory(manual_clock=True)
    conn = RawConnection(broker.bootstrap)
    try:
        conn.call(request(FIND, 4, key_type=0, coordinator_keys=(GROUP,)))
        joined = _join(conn)
        assert joined.error_code == E.none
        assign = request_class(SYNC, 5, "SyncGroupRequestAssignment")
        synced = conn.call(request(
            SYNC, 5, group_id=GROUP, generation_id=joined.generation_id,
            member_id=joined.member_id, group_instance_id=None, protocol_type="consumer",
            protocol_name="range", assignments=(assign(member_id=joined.member_id,
                                                       assignment=b""),)))
        assert synced.error_code == E.none
        assert _members(conn) == ("Stable", [joined.member_id])
        broker.advance(SESSION - 1)
        assert _members(conn) == ("Stable", [joined.member_id])  # not a millisecond early
        broker.advance(1)
        assert _members(conn) == ("Empty", [])
        hb = conn.call(request(HEARTBEAT, 4, group_id=GROUP, generation_id=1,
                               member_id=joined.member_id, group_instance_id=None))
        assert hb.error_code == E.unknown_member_id
    finally:
        conn.close()


def test_a_week_of_offset_retention_passes_on_advance(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory({"offsets.retention.minutes": str(WEEK // 60_000)},
                               manual_clock=True)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "retained",
                  "enable.auto.commit": False})
    try:
        tp = TopicPartition("clocked", 0)
        broker.call(lambda: broker.inner.create_topic("clocked", 1))
        c.assign([tp])
        c.commit(offsets=[TopicPartition("clocked", 0, 5)], asynchronous=False)
        assert c.committed([tp], timeout=10)[0].offset == 5
        broker.advance(WEEK - CHECK)
        assert c.committed([tp], timeout=10)[0].offset == 5
        broker.advance(2 * CHECK)  # the first retention check past a week since the commit
        assert c.committed([tp], timeout=10)[0].offset < 0
    finally:
        c.close()


def _consume_until(c: Consumer, done: Callable[[], bool], limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while not done():
        assert time.monotonic() < deadline, "timed out"
        c.poll(0.05)


def test_scenarios_reach_a_real_consumer(kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory({"group.min.session.timeout.ms": "1000"})
    broker.call(lambda: broker.inner.create_topic("scenes", 2))
    assignments: list[list[int]] = []
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "scenes-group",
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 100})

    def on_assign(_c: Any, parts: list[TopicPartition]) -> None:
        assignments.append(sorted(p.partition for p in parts))

    try:
        c.subscribe(["scenes"], on_assign=on_assign)
        _consume_until(c, lambda: len(assignments) == 1)
        conn_group = broker.call(lambda: broker.inner.groups.core.group("scenes-group"))
        first = conn_group.generation
        member = next(iter(conn_group.members))
        # A forced rebalance: the consumer rejoins the same way as for a new member.
        assert broker.scenario("rebalance", group_id="scenes-group")["error"] == "NONE"
        _consume_until(c, lambda: conn_group.generation > first and
                       conn_group.state.value == "Stable")
        # An expired member rejoins with a new member id.
        assert broker.scenario("expire-member", group_id="scenes-group",
                               member_id=member)["error"] == "NONE"
        _consume_until(c, lambda: bool(conn_group.members) and member not in conn_group.members
                       and conn_group.state.value == "Stable")
        assert broker.scenario("expire-member", group_id="scenes-group",
                               member_id="nobody")["error"] == "UNKNOWN_MEMBER_ID"
        # The coordinator moves away for a while: the consumer rediscovers it and stays.
        before = conn_group.generation
        moved = broker.scenario("partition-moved", group_id="scenes-group", for_ms=500)
        assert moved["answers"] == "NOT_COORDINATOR"
        time.sleep(1.5)
        _consume_until(c, lambda: (g := broker.call(
            lambda: broker.inner.groups.core.group("scenes-group"))) is not None
            and g.state.value == "Stable" and g.generation >= before)
    finally:
        c.close()
