"""JoinGroup across every group state, with a fake clock."""

from __future__ import annotations

from kafkalite.coordinator.classic.group import GroupState
from kafkalite.protocol.errors import ErrorCode as E

from .harness import DELAY, GROUP, REBALANCE, SESSION, Harness


def test_validation_errors() -> None:
    h = Harness.make()
    assert h.join(group="").value.error is E.invalid_group_id
    assert h.join(session=5).value.error is E.invalid_session_timeout
    assert h.join(session=60001).value.error is E.invalid_session_timeout
    assert h.join("someone").value.error is E.unknown_member_id
    # A partition still loading, or not ours.
    p = h.core.partition_for(GROUP)
    h.core.begin_load(p)
    assert h.join().value.error is E.coordinator_load_in_progress
    h.core.unload(p)
    assert h.join().value.error is E.not_coordinator


def test_member_id_required_then_join_with_it() -> None:
    h = Harness.make()
    first = h.join(require_known=True, client_id="cli")
    assert first.value.error is E.member_id_required
    mid = first.value.member_id
    assert mid == "cli-id1"
    assert h.group().pending_members == {mid}
    assert h.group().state is GroupState.EMPTY
    second = h.join(mid, require_known=True)
    assert not second.done
    assert h.group().pending_members == set()
    h.advance(DELAY)
    assert second.value.error is E.none and second.value.generation == 1


def test_empty_group_first_join_waits_initial_delay() -> None:
    h = Harness.make()
    a = h.join()
    g = h.group()
    assert g.state is GroupState.PREPARING_REBALANCE
    h.advance(DELAY - 1)
    assert not a.done
    h.advance(1)
    r = a.value
    assert r.error is E.none and r.generation == 1 and r.leader == r.member_id
    assert r.protocol_type == "consumer" and r.protocol_name == "range"
    assert r.members == [(r.member_id, None, b"m")]
    assert g.state is GroupState.COMPLETING_REBALANCE
    assert g.pending_sync == {r.member_id}


def test_initial_delay_extends_per_new_member_up_to_rebalance_timeout() -> None:
    h = Harness.make()
    a = h.join(rebalance=250)
    h.advance(DELAY - 10)
    b = h.join(rebalance=250)
    h.advance(10)  # first delay over, but a member came: extend by the delay
    assert not a.done and not b.done
    c = h.join(rebalance=250)
    h.advance(DELAY)  # extended again (remaining 150 -> 50)
    assert not a.done
    h.advance(50)  # remaining budget spent: complete
    assert a.done and b.done and c.done
    assert {x.value.generation for x in (a, b, c)} == {1}
    assert len(a.value.members) == 3


def test_initial_delay_zero_completes_when_everyone_joined() -> None:
    h = Harness.make(initial_rebalance_delay_ms=0)
    a = h.join()
    assert a.done and a.value.generation == 1


def test_join_unknown_member_in_empty_group() -> None:
    h = Harness.make()
    [m] = h.stable_group(1)
    h.leave((m, None))
    assert h.group().state is GroupState.EMPTY
    assert h.join(m).value.error is E.unknown_member_id


def test_preparing_rebalance_new_member_completes_when_all_rejoin() -> None:
    h = Harness.make()
    a, b = h.stable_group(2)
    c = h.join()  # Stable -> PreparingRebalance
    g = h.group()
    assert g.state is GroupState.PREPARING_REBALANCE and not c.done
    assert h.heartbeat(a, 1) is E.rebalance_in_progress
    ja = h.join(a)
    assert not ja.done
    jb = h.join(b)  # everyone joined: completes at once
    assert ja.done and jb.done and c.done
    assert ja.value.generation == 2 and g.state is GroupState.COMPLETING_REBALANCE
    assert len(ja.value.members) == 3 and jb.value.members == []


def test_completing_rebalance_same_protocols_returns_current_generation() -> None:
    h = Harness.make()
    a = h.join()
    h.advance(DELAY)
    mid = a.value.member_id
    again = h.join(mid)
    assert again.value.error is E.none and again.value.generation == 1
    assert again.value.members  # the leader gets the member list again
    assert h.group().state is GroupState.COMPLETING_REBALANCE


def test_completing_rebalance_changed_protocols_rebalances() -> None:
    h = Harness.make()
    a, b = (h.join(), h.join())
    h.settle([a, b])
    leader = h.group().leader_id
    follower = b.value.member_id if a.value.member_id == leader else a.value.member_id
    parked = h.sync(follower, 1)
    assert not parked.done
    j = h.join(follower, protocols=[("range", b"new")])
    assert parked.value.error is E.rebalance_in_progress
    assert h.group().state is GroupState.PREPARING_REBALANCE
    assert not j.done


def test_stable_follower_rejoin_same_protocols_no_rebalance() -> None:
    h = Harness.make()
    _leader, follower = h.stable_group(2)
    r = h.join(follower)
    assert r.value.error is E.none and r.value.generation == 1 and r.value.members == []
    assert h.group().state is GroupState.STABLE


def test_stable_leader_rejoin_always_rebalances() -> None:
    h = Harness.make()
    leader, _follower = h.stable_group(2)
    r = h.join(leader)
    assert not r.done
    assert h.group().state is GroupState.PREPARING_REBALANCE


def test_stable_follower_new_metadata_rebalances() -> None:
    h = Harness.make()
    _leader, follower = h.stable_group(2)
    h.join(follower, protocols=[("range", b"more topics")])
    assert h.group().state is GroupState.PREPARING_REBALANCE


def test_dead_group_answers_coordinator_not_available() -> None:
    h = Harness.make()
    [m] = h.stable_group(1)
    h.group().state = GroupState.DEAD
    assert h.join(m).value.error is E.coordinator_not_available
    assert h.join().value.error is E.coordinator_not_available


def test_inconsistent_protocols() -> None:
    h = Harness.make()
    h.stable_group(1)
    assert h.join(protocol_type="connect").value.error is E.inconsistent_group_protocol
    assert h.join(protocols=[("sticky", b"")]).value.error is E.inconsistent_group_protocol
    assert h.join(group="other", protocols=[]).value.error is E.inconsistent_group_protocol


def test_protocol_selected_by_vote_among_common_protocols() -> None:
    h = Harness.make()
    a = h.join(protocols=[("cooperative-sticky", b"1"), ("range", b"1")])
    b = h.join(protocols=[("range", b"2"), ("cooperative-sticky", b"2")])
    c = h.join(protocols=[("cooperative-sticky", b"3"), ("range", b"3"), ("x", b"")])
    h.advance(DELAY)
    assert not a.done  # the joins after the first extended the initial delay
    h.advance(DELAY)
    assert {x.value.protocol_name for x in (a, b, c)} == {"cooperative-sticky"}
    leader = next(x.value for x in (a, b, c) if x.value.members)
    assert sorted(m[2] for m in leader.members) == [b"1", b"2", b"3"]


def test_group_max_size() -> None:
    h = Harness.make(max_size=2)
    h.stable_group(2)
    assert h.join().value.error is E.group_max_size_reached
    assert h.group().state is GroupState.STABLE


def test_static_member_rejoin_in_stable_group_replaces_without_rebalance() -> None:
    h = Harness.make()
    a = h.join(instance="i-a")
    b = h.join(instance="i-b")
    h.settle([a, b])
    g = h.group()
    leader = g.leader_id
    ids = {a.value.member_id, b.value.member_id}
    assignments = {m: m.encode() for m in ids}
    for m in ids:
        h.sync(m, 1, assignments if m == leader else None)
    follower_old = next(m for m in ids if m != leader)
    inst = g.members[follower_old].group_instance_id
    written = len(h.written)
    r = h.join(instance=inst)
    assert r.value.error is E.none and r.value.generation == 1
    new_id = r.value.member_id
    assert new_id != follower_old and r.value.members == [] and not r.value.skip_assignment
    assert g.state is GroupState.STABLE and g.generation == 1
    # The replacement is persisted; the old id is fenced.
    assert len(h.written) == written + 1
    [(_key, value)] = h.written[-1]
    assert new_id in [m.member_id for m in value.members]
    assert h.heartbeat(follower_old, 1, instance=inst) is E.fenced_instance_id
    assert h.heartbeat(new_id, 1, instance=inst) is E.none
    assert h.sync(new_id, 1, instance=inst).value.assignment == follower_old.encode()


def test_static_leader_rejoin_gets_members_and_skip_assignment() -> None:
    h = Harness.make()
    a = h.join(instance="lead")
    h.advance(DELAY)
    old = a.value.member_id
    h.sync(old, 1, {old: b"x"})
    r = h.join(instance="lead")
    assert r.value.error is E.none and r.value.skip_assignment
    assert r.value.leader == r.value.member_id and len(r.value.members) == 1
    assert h.group().state is GroupState.STABLE


def test_static_rejoin_replacement_store_failure_reverts() -> None:
    h = Harness.make()
    a = h.join(instance="s")
    h.advance(DELAY)
    old = a.value.member_id
    h.sync(old, 1, {old: b"x"})
    h.fail_with = E.not_coordinator
    r = h.join(instance="s")
    assert r.value.error is E.not_coordinator
    assert list(h.group().members) == [old]
    assert h.heartbeat(old, 1, instance="s") is E.none


def test_static_rejoin_with_new_protocols_rebalances_and_fences_old_waiter() -> None:
    h = Harness.make()
    both = [("range", b""), ("roundrobin", b"")]
    a, b = h.join(instance="a", protocols=both), h.join(instance="b", protocols=both)
    h.settle([a, b])
    ids = [a.value.member_id, b.value.member_id]
    leader = h.group().leader_id
    for m in ids:
        h.sync(m, 1, {x: b"" for x in ids} if m == leader else None)
    # Only roundrobin is common now: the selected protocol changes, so the group rebalances.
    r = h.join(instance="b", protocols=[("roundrobin", b"changed")])
    assert h.group().state is GroupState.PREPARING_REBALANCE
    assert not r.done
    r2 = h.join(instance="b", protocols=[("roundrobin", b"changed")])
    assert r.value.error is E.fenced_instance_id
    assert not r2.done
    ra = h.join(ids[0], instance="a", protocols=both)
    assert r2.done and ra.done and r2.value.generation == 2


def test_static_members_survive_join_completion_without_rejoining() -> None:
    h = Harness.make()
    s = h.join(instance="s")
    d = h.join()
    h.settle([s, d])
    leader = h.group().leader_id
    ids = [s.value.member_id, d.value.member_id]
    for m in ids:
        h.sync(m, 1, {x: b"" for x in ids} if m == leader else None)
    h.join(ids[1], protocols=[("range", b"new")])  # rebalance; the static one only heartbeats
    g = h.group()
    for _ in range(REBALANCE // 100 + 1):
        h.advance(100)
        h.heartbeat(ids[0], 1)
        if g.state is not GroupState.PREPARING_REBALANCE:
            break
    assert set(g.members) == set(ids)  # static member kept
    assert g.generation == 2


def test_member_awaiting_join_is_kept_alive_past_its_session_timeout() -> None:
    h = Harness.make()
    a, b = h.stable_group(2)
    ja = h.join(a)  # PreparingRebalance, waiting for b up to the rebalance timeout
    for _ in range(4):
        h.advance(SESSION // 2)  # a sends nothing while awaiting join: kept alive
        assert h.heartbeat(b, 1) is E.rebalance_in_progress
    assert a in h.group().members and not ja.done
    h.advance(REBALANCE)  # b never rejoined: removed at completion
    assert ja.value.generation == 2 and list(h.group().members) == [a]


def test_new_member_expires_by_the_new_member_join_timeout() -> None:
    h = Harness.make(new_member_join_timeout_ms=300)
    _a, _b = h.stable_group(2)
    c = h.join()  # a new member waits for the others to rejoin
    h.advance(299)
    assert not c.done
    h.advance(1)
    assert c.value.error is E.unknown_member_id
    assert len(h.group().members) == 2
