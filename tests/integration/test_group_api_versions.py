"""Group APIs over TCP across versions: FindCoordinator batching, old JoinGroup versions,
and the hand-encoded Heartbeat response read back by kio's decoder."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.build import build
from kafkalite.protocol.errors import ErrorCode as E

FIND, JOIN, HEARTBEAT, LEAVE, SYNC = 10, 11, 12, 13, 14


@pytest.fixture
def conn(broker: BrokerThread) -> Iterator[RawConnection]:
    c = RawConnection(broker.bootstrap)
    yield c
    c.close()


def test_find_coordinator_all_versions(broker: BrokerThread, conn: RawConnection) -> None:
    for v in range(4):
        fields: dict[str, Any] = {"key": "grp", "key_type": 0}
        resp = conn.call(request(FIND, v, **fields))
        assert resp.error_code == E.none
        assert (resp.node_id, resp.host, resp.port) == (1, "127.0.0.1", broker.port)
    for v in (4, 5, 6):
        resp = conn.call(request(FIND, v, key_type=0, coordinator_keys=("a", "b", "")))
        got = [(c.key, c.error_code, c.port) for c in resp.coordinators]
        assert got[:2] == [("a", E.none, broker.port), ("b", E.none, broker.port)]
        assert got[2][1] == E.invalid_request
    # The first lookup created the offsets topic, internal and compacted.
    info = broker.call(lambda: broker.broker.topics.get("__consumer_offsets"))  # type: ignore[union-attr]
    assert info is not None and info.internal and info.partitions == 8


def _join(conn: RawConnection, v: int, group: str, member_id: str = "") -> Any:
    proto = request_class(JOIN, v, "JoinGroupRequestProtocol")
    return conn.call(request(
        JOIN, v, group_id=group, session_timeout=timedelta(seconds=6),
        rebalance_timeout=timedelta(seconds=6), member_id=member_id, group_instance_id=None,
        protocol_type="consumer", reason="test",
        protocols=(proto(name="range", metadata=b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"),),
    ))


@pytest.mark.parametrize("v", [0, 1, 3, 4, 5, 7, 9])
def test_join_sync_heartbeat_leave_by_version(conn: RawConnection, v: int) -> None:
    group = f"gv{v}"
    conn.call(request(FIND, 0, key=group))
    resp = _join(conn, v, group)
    if v >= 4:
        assert resp.error_code == E.member_id_required and resp.member_id
        resp = _join(conn, v, group, resp.member_id)
    assert resp.error_code == E.none and resp.generation_id == 1
    assert resp.leader == resp.member_id and len(resp.members) == 1
    mid = resp.member_id
    sv = min(v, 5)
    assign = request_class(SYNC, sv, "SyncGroupRequestAssignment")
    s = conn.call(request(SYNC, sv, group_id=group, generation_id=1, member_id=mid,
                          group_instance_id=None, protocol_type="consumer",
                          protocol_name="range",
                          assignments=(assign(member_id=mid, assignment=b"A"),)))
    assert s.error_code == E.none and s.assignment == b"A"
    hv = min(v, 4)
    for hb_v in range(hv + 1):
        hb = conn.call(request(HEARTBEAT, hb_v, group_id=group, generation_id=1, member_id=mid,
                               group_instance_id=None))
        assert hb.error_code == E.none
        bad = conn.call(request(HEARTBEAT, hb_v, group_id=group, generation_id=7, member_id=mid,
                                group_instance_id=None))
        assert bad.error_code == E.illegal_generation
    lv = min(v, 5)
    if lv >= 3:
        ident = request_class(LEAVE, lv, "MemberIdentity")
        left = conn.call(request(LEAVE, lv, group_id=group, members=(
            build(ident, member_id=mid, group_instance_id=None, reason="done"),
            build(ident, member_id="ghost", group_instance_id=None, reason=None))))
        assert left.error_code == E.none
        assert [m.error_code for m in left.members] == [E.none, E.unknown_member_id]
    else:
        left = conn.call(request(LEAVE, lv, group_id=group, member_id=mid))
        assert left.error_code == E.none
        again = conn.call(request(LEAVE, lv, group_id=group, member_id=mid))
        assert again.error_code == E.unknown_member_id
