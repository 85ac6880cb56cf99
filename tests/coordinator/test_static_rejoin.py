"""KIP-345 static member replacement in a Stable group, as Kafka's
updateStaticMemberAndRebalance decides it: a new subscription rebalances only if it changes
the selected protocol, and a JoinGroup before v9 tells a rejoining leader the old leader id
(so it runs no assignment)."""

from __future__ import annotations

from typing import Any

from kafkalite.coordinator.classic.group import GroupState
from kafkalite.coordinator.classic.membership import JoinRequest
from kafkalite.coordinator.results import PARKED
from kafkalite.protocol.errors import ErrorCode as E

from .harness import GROUP, REBALANCE, SESSION, Box, Harness


def _stable_pair(h: Harness) -> tuple[str, str]:
    a, b = h.join(instance="a"), h.join(instance="b")
    h.settle([a, b])
    ids = [a.value.member_id, b.value.member_id]
    leader = h.group().leader_id
    assert leader is not None
    for m in ids:
        h.sync(m, 1, {x: x.encode() for x in ids} if m == leader else None)
    follower = next(m for m in ids if m != leader)
    return leader, follower


def _join_v(h: Harness, instance: str, version: int, meta: bytes = b"m") -> Any:
    box = Box()
    resp = h.run(h.core.join(h.now, box, JoinRequest(
        group_id=GROUP, member_id="", group_instance_id=instance,
        require_known_member_id=False, client_id="c", client_host="/127.0.0.1",
        rebalance_timeout_ms=REBALANCE, session_timeout_ms=SESSION, protocol_type="consumer",
        protocols=[("range", meta)], reason="test", version=version,
    )))
    if resp is not PARKED:
        box(resp)
    return box


def test_new_metadata_same_protocol_replaces_without_rebalance() -> None:
    h = Harness.make()
    _leader, follower = _stable_pair(h)
    inst = h.group().members[follower].group_instance_id
    assert inst is not None
    r = _join_v(h, inst, 5, meta=b"owned-partitions-changed")
    assert r.value.error is E.none and r.value.generation == 1
    g = h.group()
    assert g.state is GroupState.STABLE and g.generation == 1
    new_id = r.value.member_id
    assert g.members[new_id].metadata("range") == b"owned-partitions-changed"
    [(_key, value)] = h.written[-1]
    assert [m.subscription for m in value.members if m.member_id == new_id] == [
        b"owned-partitions-changed"]
    assert h.sync(new_id, 1, instance=inst).value.assignment == follower.encode()


def test_leader_rejoin_before_v9_gets_old_leader_id_and_no_members() -> None:
    h = Harness.make()
    leader, _follower = _stable_pair(h)
    inst = h.group().members[leader].group_instance_id
    assert inst is not None
    r = _join_v(h, inst, 7)
    res = r.value
    assert res.error is E.none and res.generation == 1
    assert res.member_id != leader and res.leader == leader
    assert res.members == [] and not res.skip_assignment
    assert h.group().leader_id == res.member_id
    assert h.sync(res.member_id, 1, instance=inst).value.assignment == leader.encode()


def test_leader_rejoin_v9_gets_members_and_skip_assignment() -> None:
    h = Harness.make()
    leader, _follower = _stable_pair(h)
    inst = h.group().members[leader].group_instance_id
    assert inst is not None
    res = _join_v(h, inst, 9).value
    assert res.error is E.none and res.skip_assignment
    assert res.leader == res.member_id and len(res.members) == 2
