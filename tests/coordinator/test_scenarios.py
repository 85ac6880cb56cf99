"""Test-control scenarios through the runtime on a manual clock: each produces the state a
client would meet on a real broker, through the core's own transitions and records."""

from __future__ import annotations

from kafkalite.coordinator.classic.states import GroupState
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ErrorCode as E
from kafkalite.protocol.names import OFFSETS_TOPIC

from .harness import GROUP, SESSION, Harness, check_replay


def test_force_rebalance_answers_rebalance_in_progress_to_heartbeats() -> None:
    h = Harness.make()
    leader, follower = h.stable_group(2)
    assert h.run(h.core.force_rebalance(h.now, GROUP)) is E.none
    assert h.group().state is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(follower, 1) is E.rebalance_in_progress
    boxes = [h.join(leader), h.join(follower)]
    h.settle(boxes)
    assert [b.value.generation for b in boxes] == [2, 2]
    assert h.run(h.core.force_rebalance(h.now, "nope")) is E.group_id_not_found


def test_expire_and_evict_remove_the_member_and_rebalance() -> None:
    h = Harness.make()
    leader, a, b = h.stable_group(3)
    assert h.run(h.core.expire_member(h.now, GROUP, a)) is E.none
    assert a not in h.group().members and h.group().state is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(a, 1) is E.unknown_member_id
    assert h.run(h.core.evict_member(h.now, GROUP, b)) is E.none
    assert b not in h.group().members
    assert h.run(h.core.evict_member(h.now, GROUP, b)) is E.unknown_member_id
    h.settle([h.join(leader)])
    assert set(h.group().members) == {leader}


def test_fence_static_member_writes_the_new_member_id() -> None:
    h = Harness.make()
    box = h.join(instance="i1")
    h.settle([box])
    old = box.value.member_id
    assert h.sync(old, 1, {old: b"a"}, instance="i1").value.error is E.none
    assert h.run(h.core.fence_static_member(h.now, GROUP, "i1")) is E.none
    new = h.group().static_member_id("i1")
    assert new != old and new in h.group().members
    [(key, value)] = h.written[-1]
    assert key == co.GroupMetadataKey(GROUP)
    assert [m.member_id for m in value.members] == [new]
    assert h.heartbeat(old, 1, instance="i1") is E.fenced_instance_id
    check_replay(h)
    # Nobody holds the new id: it expires with its session and the group empties.
    h.advance(SESSION + 1)
    assert not h.group().members


def test_partition_loading_then_back_with_the_same_generation() -> None:
    h = Harness.make()
    _leader, follower = h.stable_group(2)
    p = h.core.partition_for(GROUP)
    h.runtime.hold_partition(OFFSETS_TOPIC, p, 500, moved=False)
    assert h.heartbeat(follower, 1) is E.coordinator_load_in_progress
    h.advance(499)
    assert h.heartbeat(follower, 1) is E.coordinator_load_in_progress
    h.advance(1)
    assert h.heartbeat(follower, 1) is E.none
    assert h.group().generation == 1 and h.group().state is GroupState.STABLE


def test_partition_moved_answers_not_coordinator_and_parked_joins_too() -> None:
    h = Harness.make()
    leader, follower = h.stable_group(2)
    parked = h.join(leader, protocols=[("range", b"changed")])  # starts a rebalance
    assert not parked.done
    h.runtime.hold_partition(OFFSETS_TOPIC, h.core.partition_for(GROUP), 1000, moved=True)
    assert parked.value.error is E.not_coordinator
    assert h.heartbeat(follower, 1) is E.not_coordinator
    assert h.run(h.core.commit_offsets(h.now, _simple_commit())) == {
        ("t", 0): E.not_coordinator}
    h.advance(1000)
    # Back from its log: the last stored generation, members with fresh sessions.
    g = h.group()
    assert g.generation == 1 and set(g.members) == {leader, follower}
    assert h.heartbeat(follower, 1) is E.none


def _simple_commit() -> object:
    from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit

    return CommitRequest(GROUP, generation_id=-1, topics=[("t", [PartitionCommit(0, 1)])])
