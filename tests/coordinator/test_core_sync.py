"""SyncGroup, Heartbeat and LeaveGroup across group states; the records written; replay."""

from __future__ import annotations

from kafkalite.coordinator.classic.states import GroupState
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ErrorCode as E

from .harness import GROUP, REBALANCE, SESSION, Harness, check_replay

# --- SyncGroup ---------------------------------------------------------------------------


def _completing(h: Harness, n: int = 2) -> list[str]:
    boxes = [h.join() for _ in range(n)]
    h.settle(boxes)
    g = h.group()
    return [g.leader_id] + [b.value.member_id for b in boxes if b.value.member_id != g.leader_id]


def test_sync_validation() -> None:
    h = Harness.make()
    assert h.sync("x", 1, group="nope").value.error is E.unknown_member_id
    leader, _follower = _completing(h)
    assert h.sync("x", 1).value.error is E.unknown_member_id
    assert h.sync(leader, 7).value.error is E.illegal_generation
    assert h.sync(leader, 1, protocol_type="connect").value.error is E.inconsistent_group_protocol
    assert h.sync(leader, 1, protocol_name="rr").value.error is E.inconsistent_group_protocol
    assert h.sync(leader, 1, group="").value.error is E.invalid_group_id


def test_sync_in_preparing_rebalance() -> None:
    h = Harness.make()
    leader, follower = h.stable_group(2)
    h.join(leader)
    assert h.sync(follower, 1).value.error is E.rebalance_in_progress


def test_sync_in_empty_group() -> None:
    h = Harness.make()
    [m] = h.stable_group(1)
    h.leave((m, None))
    assert h.sync(m, 2).value.error is E.unknown_member_id


def test_sync_dead_group() -> None:
    h = Harness.make()
    [m] = h.stable_group(1)
    h.group().state = GroupState.DEAD
    assert h.sync(m, 1).value.error is E.coordinator_not_available


def test_follower_waits_for_leader_and_record_is_written_first() -> None:
    h = Harness.make()
    leader, follower = _completing(h)
    f = h.sync(follower, 1, protocol_type="consumer", protocol_name="range")
    assert not f.done and h.written == []
    lead = h.sync(leader, 1, {leader: b"A", follower: b"F"})
    assert lead.value.error is E.none and lead.value.assignment == b"A"
    assert lead.value.protocol_type == "consumer" and lead.value.protocol_name == "range"
    assert f.value.assignment == b"F"
    g = h.group()
    assert g.state is GroupState.STABLE
    [[(key, value)]] = h.written
    assert key == co.GroupMetadataKey(GROUP)
    assert list(g.members) == [leader, follower]
    assert value == co.GroupMetadataValue(
        protocol_type="consumer", generation=1, protocol="range", leader=leader,
        current_state_timestamp=g.current_state_timestamp,
        members=tuple(
            co.MemberMetadata(m, "c", "/127.0.0.1", REBALANCE, SESSION, b"m", a)
            for m, a in ((leader, b"A"), (follower, b"F"))
        ),
    )
    assert {m.member_id: m.assignment for m in value.members} == {leader: b"A", follower: b"F"}
    # The record round-trips through Kafka's value schema v3.
    raw = co.encode_value(value)
    assert raw is not None and raw[:2] == b"\x00\x03"


def test_leader_missing_assignments_are_empty() -> None:
    h = Harness.make()
    leader, follower = _completing(h)
    h.sync(leader, 1, {leader: b"A"})
    assert h.sync(follower, 1).value.assignment == b""


def test_sync_in_stable_returns_the_assignment() -> None:
    h = Harness.make()
    _leader, follower = h.stable_group(2)
    assert h.sync(follower, 1).value.assignment == follower.encode()


def test_failed_store_answers_error_and_goes_back_to_preparing_rebalance() -> None:
    h = Harness.make()
    leader, follower = _completing(h)
    f = h.sync(follower, 1)
    h.fail_with = E.not_coordinator
    lead = h.sync(leader, 1, {leader: b"A", follower: b"F"})
    assert lead.value.error is E.not_coordinator and f.value.error is E.not_coordinator
    g = h.group()
    assert g.state is GroupState.PREPARING_REBALANCE
    assert all(m.assignment == b"" for m in g.members.values())
    assert h.written == []
    h.fail_with = None
    assert h.sync(follower, 1).value.error is E.rebalance_in_progress
    assert h.heartbeat(follower, 1) is E.rebalance_in_progress


def test_pending_sync_expiry_removes_members_that_never_synced() -> None:
    h = Harness.make()
    leader, follower = _completing(h)
    h.sync(leader, 1, {leader: b"A", follower: b"F"})
    g = h.group()
    assert g.state is GroupState.STABLE and g.pending_sync == {follower}
    for _ in range(REBALANCE // 500 - 1):
        h.advance(500)
        assert h.heartbeat(leader, 1) is E.none
        assert h.heartbeat(follower, 1) is E.none  # alive, but never sends SyncGroup
    h.advance(500)
    assert follower not in g.members
    assert g.state is GroupState.PREPARING_REBALANCE


# --- Heartbeat ---------------------------------------------------------------------------


def test_heartbeat_per_state() -> None:
    h = Harness.make()
    assert h.heartbeat("m", 0, group="") is E.invalid_group_id
    assert h.heartbeat("m", 0) is E.unknown_member_id  # no such group
    leader, follower = _completing(h)
    assert h.heartbeat(leader, 1) is E.none  # CompletingRebalance
    h.sync(leader, 1, {})
    h.sync(follower, 1)
    assert h.heartbeat(follower, 1) is E.none  # Stable
    assert h.heartbeat(follower, 0) is E.illegal_generation
    assert h.heartbeat("ghost", 1) is E.unknown_member_id
    h.join(leader)  # PreparingRebalance
    before = h.core.timers.deadline(("heartbeat", GROUP, follower))
    h.now += 10
    assert h.heartbeat(follower, 1) is E.rebalance_in_progress
    assert h.core.timers.deadline(("heartbeat", GROUP, follower)) == before + 10  # re-armed
    h.group().state = GroupState.DEAD
    assert h.heartbeat(follower, 1) is E.coordinator_not_available


def test_heartbeat_empty_group_and_fenced_static_member() -> None:
    h = Harness.make()
    s = h.join(instance="s")
    h.settle([s])
    mid = s.value.member_id
    h.sync(mid, 1, {mid: b""})
    assert h.heartbeat("other", 1, instance="s") is E.fenced_instance_id
    h.leave(("", "s"))
    assert h.group().state is GroupState.EMPTY
    assert h.heartbeat(mid, 2) is E.unknown_member_id


def test_heartbeat_expiry_in_stable_rebalances() -> None:
    h = Harness.make()
    leader, follower = h.stable_group(2)
    for _ in range(3):
        h.advance(SESSION // 2)
        h.heartbeat(leader, 1)
    g = h.group()
    assert follower not in g.members
    assert g.state is GroupState.PREPARING_REBALANCE
    j = h.join(leader)
    assert j.value.generation == 2 and j.value.members == [(leader, None, b"m")]


def test_heartbeat_expiry_of_last_member_empties_group_and_writes_record() -> None:
    h = Harness.make()
    [_m] = h.stable_group(1)
    h.advance(SESSION)
    g = h.group()
    assert g.state is GroupState.EMPTY and g.generation == 2 and not g.members
    _key, value = h.written[-1][0]
    assert value == co.GroupMetadataValue("consumer", 2, None, None,
                                          g.current_state_timestamp, ())


def test_pending_member_expiry() -> None:
    h = Harness.make()
    r = h.join(require_known=True)
    mid = r.value.member_id
    h.advance(SESSION)
    assert h.group().pending_members == set()
    assert h.join(mid, require_known=True).value.error is E.unknown_member_id


# --- LeaveGroup --------------------------------------------------------------------------


def test_leave_unknown_group_and_member() -> None:
    h = Harness.make()
    res = h.leave(("m", None), group="nope")
    assert res.error is E.none and res.members == [("m", None, E.unknown_member_id)]
    h.stable_group(1)
    assert h.leave(("ghost", None)).members == [("ghost", None, E.unknown_member_id)]
    assert h.leave(("", "no-such")).members == [("", "no-such", E.unknown_member_id)]


def test_leave_stable_rebalances_and_remaining_member_takes_over() -> None:
    h = Harness.make()
    leader, follower = h.stable_group(2)
    res = h.leave((leader, None))
    assert res.members == [(leader, None, E.none)]
    g = h.group()
    assert g.state is GroupState.PREPARING_REBALANCE and g.leader_id == follower
    j = h.join(follower)
    assert j.value.generation == 2 and j.value.leader == follower


def test_leave_while_completing_answers_parked_sync_and_rebalances() -> None:
    h = Harness.make()
    leader, follower = _completing(h)
    f = h.sync(follower, 1)
    h.leave((leader, None))
    assert f.value.error is E.rebalance_in_progress
    assert h.group().state is GroupState.PREPARING_REBALANCE


def test_leave_preparing_completes_join_without_the_leaver() -> None:
    h = Harness.make()
    a, b = h.stable_group(2)
    ja = h.join(a)
    h.leave((b, None))
    assert ja.value.generation == 2 and list(h.group().members) == [a]


def test_leave_batch_by_instance_id_and_fenced() -> None:
    h = Harness.make()
    boxes = [h.join(instance=f"i{i}") for i in range(3)]
    h.settle(boxes)
    res = h.leave(("", "i0"), ("", "i1"), ("wrong-id", "i2"))
    assert [e for _m, _i, e in res.members] == [E.none, E.none, E.fenced_instance_id]
    assert len(h.group().members) == 1


def test_leave_pending_member() -> None:
    h = Harness.make()
    r = h.join(require_known=True)
    res = h.leave((r.value.member_id, None))
    assert res.members[0][2] is E.none and not h.group().pending_members


def test_leave_dead_group() -> None:
    h = Harness.make()
    h.stable_group(1)
    h.group().state = GroupState.DEAD
    assert h.leave(("m", None)).error is E.coordinator_not_available


def test_last_leave_empties_group() -> None:
    h = Harness.make()
    [m] = h.stable_group(1)
    h.leave((m, None))
    g = h.group()
    assert g.state is GroupState.EMPTY and g.generation == 2
    assert h.written[-1][0][1].members == ()


# --- replay ------------------------------------------------------------------------------


def test_replay_restores_stable_group_with_timers() -> None:
    h = Harness.make()
    leader, follower = h.stable_group(2)
    check_replay(h)
    r = h.reload()
    g = r.group()
    assert g is not None and g.state is GroupState.STABLE and g.generation == 1
    assert g.leader_id == leader and g.protocol_name == "range"
    assert {m: x.assignment for m, x in g.members.items()} == {
        leader: leader.encode(), follower: follower.encode()}
    r.now += 10
    assert r.heartbeat(follower, 1) is E.none
    assert r.core.timers.deadline(("heartbeat", GROUP, leader)) == h.now + SESSION
    # The leader never heartbeats after the reload: it expires and the group rebalances.
    r.advance(SESSION - 10)
    assert leader not in g.members and g.state is GroupState.PREPARING_REBALANCE


def test_replay_empty_group_and_tombstone() -> None:
    h = Harness.make()
    [m] = h.stable_group(1)
    h.leave((m, None))
    check_replay(h)
    r = h.reload()
    g = r.group()
    assert g is not None and g.state is GroupState.EMPTY and g.generation == 2
    assert r.run(r.core.delete_group(r.now, GROUP)) is E.none
    assert r.written == [[(co.GroupMetadataKey(GROUP), None)]]
    assert r.group() is None
    assert r.reload().group() is None


def test_state_table_refuses_an_illegal_transition() -> None:
    from kafkalite.coordinator.classic.states import IllegalStateTransition

    h = Harness.make()
    h.stable_group(1)
    g = h.group()
    try:
        g.transition(GroupState.COMPLETING_REBALANCE, h.now)
    except IllegalStateTransition as e:
        assert "PreparingRebalance" in str(e) and "Stable" in str(e)
    else:
        raise AssertionError("Stable -> CompletingRebalance must be refused")
    assert g.state is GroupState.STABLE
