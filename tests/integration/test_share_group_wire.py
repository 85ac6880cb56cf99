"""Share group membership over TCP, on the real broker: ShareGroupHeartbeat and
ShareGroupDescribe v1 framed and answered on a socket, the group's records reloaded from
the log after a restart, a member's session expiring on the broker's manual clock, and
ListGroups v5 filtering on the share type. (No client's share
consumer can run yet: ShareFetch is not served, so the share APIs are not advertised.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request

from .group_helpers import create_topic

GROUP, TOPIC = "share-wire", "share-wire-in"


def heartbeat(conn: RawConnection, member: str, epoch: int,
              names: tuple[str, ...] | None = (TOPIC,)) -> Any:
    return conn.call(request(76, 1, group_id=GROUP, member_id=member, member_epoch=epoch,
                             rack_id=None, subscribed_topic_names=names))


def describe(conn: RawConnection) -> Any:
    [g] = conn.call(request(77, 1, group_ids=(GROUP,),
                            include_authorized_operations=False)).groups
    assert int(g.error_code) == 0, g
    return g


def test_share_group_heartbeats_describe_restart_and_session_expiry(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker(manual_clock=True)
    create_topic(broker, TOPIC, 4)
    conn = RawConnection(broker.bootstrap, "share-wire")
    try:
        assert conn.versions[76] == (1, 1) and conn.versions[77] == (1, 1)
        a = heartbeat(conn, "member-a", 0)
        assert (int(a.error_code), a.member_epoch) == (0, 1)
        b = heartbeat(conn, "member-b", 0)
        assert (int(b.error_code), b.member_epoch) == (0, 2)
        a = heartbeat(conn, "member-a", 1, None)
        owned = {m: {p for tp in r.assignment.topic_partitions for p in tp.partitions}
                 for m, r in (("a", a), ("b", b))}
        assert owned["a"] | owned["b"] == {0, 1, 2, 3} and not owned["a"] & owned["b"]
        g = describe(conn)
        assert (g.group_state, g.group_epoch, g.assignor_name) == ("Stable", 2, "simple")
        assert sorted(m.member_id for m in g.members) == ["member-a", "member-b"]
        listed = conn.call(request(16, 5, states_filter=(), types_filter=("share",)))
        assert [(x.group_id, x.protocol_type, x.group_state, x.group_type)
                for x in listed.groups] == [(GROUP, "share", "Stable", "share")]
    finally:
        conn.close()

    broker.restart()
    conn = RawConnection(broker.bootstrap, "share-wire")
    try:
        g = describe(conn)
        assert g.group_epoch == 2
        assert sorted(m.member_id for m in g.members) == ["member-a", "member-b"]
        # Only member-a heartbeats: member-b's session (45 s) runs out on the manual clock.
        broker.advance(40_000)
        assert int(heartbeat(conn, "member-a", 2, None).error_code) == 0
        broker.advance(6_000)
        g = describe(conn)
        assert [m.member_id for m in g.members] == ["member-a"]
        back = heartbeat(conn, "member-a", 2, None)
        assert {p for tp in back.assignment.topic_partitions for p in tp.partitions} == {
            0, 1, 2, 3}
        assert int(heartbeat(conn, "member-b", 2, None).error_code) == 25  # UNKNOWN_MEMBER_ID
    finally:
        conn.close()
