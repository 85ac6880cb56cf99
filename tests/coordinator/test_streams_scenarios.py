"""The coordinator scenarios on a streams group, through the real runtime on the manual
clock: a forced rebalance (a new group epoch, the members reconcile to it keeping their
tasks), a fenced static member (replaced by a member id no client holds, which then
expires), an expired member; each written as records a reload rebuilds, and a failed
append changes nothing."""

from __future__ import annotations

from typing import Any

from kafkalite.protocol import streams_group_records as st
from kafkalite.protocol.errors import ErrorCode as E

from .harness import Harness
from .test_streams_group import APP, SESSION, hb, make, ready, tasks

ALL = tasks("0_0", "0_1", "1_0", "1_1")


def _persisted(group: Any) -> tuple[Any, ...]:
    return (group.group_epoch, group.metadata_hash, group.topology, group.target_epoch,
            dict(group.members), dict(group.target))


def _stable_pair(h: Harness) -> tuple[int, Any, Any]:
    """a and b, each with two tasks, Stable; (their epoch, a's tasks, b's tasks)."""
    hb(h, "a", 0)
    ready(h)
    a = hb(h, "a", 2, frozenset())
    assert a.active_tasks == ALL
    b = hb(h, "b", 0)
    a = hb(h, "a", a.member_epoch, ALL)
    kept = a.active_tasks
    a = hb(h, "a", a.member_epoch, kept)
    b = hb(h, "b", b.member_epoch, frozenset())
    group = h.core.streams_group(APP)
    assert group is not None and group.state == "Stable", group
    assert a.member_epoch == b.member_epoch
    return a.member_epoch, kept, b.active_tasks


def test_forced_rebalance_moves_every_member_to_a_new_epoch_with_its_tasks() -> None:
    h = make()
    epoch, a_tasks, b_tasks = _stable_pair(h)
    assert h.run(h.core.streams.force_rebalance(h.now, APP)) is E.none
    group = h.core.streams_group(APP)
    assert group is not None
    assert (group.group_epoch, group.target_epoch, group.state) == (
        epoch + 1, epoch + 1, "Reconciling")
    # The group epoch and the target are records: a reload has them.
    assert any(isinstance(k, st.StreamsGroupMetadataKey) for k, _v in h.written[-1])
    assert _persisted(h.reload().core.streams_group(APP)) == _persisted(group)
    # Each member's next heartbeat takes it to the new epoch, with the tasks it had (not
    # sent again: Kafka sends task lists only when they change).
    a = hb(h, "a", epoch)
    b = hb(h, "b", epoch)
    assert (a.member_epoch, a.active_tasks, b.member_epoch, b.active_tasks) == (
        epoch + 1, None, epoch + 1, None)
    assert (group.members["a"].active, group.members["b"].active) == (a_tasks, b_tasks)
    assert group.state == "Stable"


def test_forced_rebalance_errors_and_a_failed_append() -> None:
    h = make()
    assert h.run(h.core.streams.force_rebalance(h.now, APP)) is E.group_id_not_found
    _stable_pair(h)
    group = h.core.streams_group(APP)
    before = _persisted(group)
    h.fail_with = E.not_coordinator
    assert h.run(h.core.streams.force_rebalance(h.now, APP)) is E.not_coordinator
    assert _persisted(group) == before
    h.fail_with = None
    # The members leave: an empty group has nothing to rebalance.
    hb(h, "a", -1)
    hb(h, "b", -1)
    assert h.run(h.core.streams.force_rebalance(h.now, APP)) is E.non_empty_group


def test_fenced_static_member_is_replaced_by_one_no_client_holds() -> None:
    h = make()
    hb(h, "a", 0, instance="i1", process="p1")
    ready(h)
    a = hb(h, "a", 2, frozenset(), instance="i1")
    assert a.active_tasks == ALL
    hb(h, "a", a.member_epoch, ALL, instance="i1")
    assert h.run(h.core.streams.fence_static_member(h.now, APP, "nope")) is E.unknown_member_id
    assert h.run(h.core.streams.fence_static_member(h.now, APP, "i1")) is E.none
    group = h.core.streams_group(APP)
    assert group is not None
    (new,) = group.members
    member = group.members[new]
    assert new != "a" and (member.instance_id, member.process_id) == ("i1", "p1")
    # It took a's place and tasks; a is fenced by it.
    assert group.target[new].active == ALL and member.active == ALL
    assert hb(h, "a", a.member_epoch, ALL, instance="i1").error is E.fenced_instance_id
    assert _persisted(h.reload().core.streams_group(APP)) == _persisted(group)
    # Nobody heartbeats as the new member: its session ends and the group empties; then
    # the instance id may join again.
    assert hb(h, "a3", 0, instance="i1", process="p1").error is E.unreleased_instance_id
    h.advance(SESSION)
    assert not group.members and group.state == "Empty"
    assert hb(h, "a3", 0, instance="i1", process="p1").error is E.none


def test_expired_member_leaves_and_the_other_gets_every_task() -> None:
    h = make()
    epoch, _a, _b = _stable_pair(h)
    assert h.run(h.core.streams.expire_member(h.now, APP, "zz")) is E.unknown_member_id
    assert h.run(h.core.streams.expire_member(h.now, APP, "b")) is E.none
    assert hb(h, "b", epoch).error is E.unknown_member_id
    a = hb(h, "a", epoch)
    assert a.active_tasks == ALL


def test_forced_rebalance_during_the_initial_delay_leaves_the_target_to_its_end() -> None:
    h = make(streams_initial_rebalance_delay_ms=3000)
    a = hb(h, "a", 0)
    ready(h)
    hb(h, "a", a.member_epoch, frozenset())  # sees the internal topics, still delayed
    group = h.core.streams_group(APP)
    assert group is not None
    target_epoch = group.target_epoch
    assert h.run(h.core.streams.force_rebalance(h.now, APP)) is E.none
    assert group.group_epoch > target_epoch and group.target_epoch == target_epoch
    h.advance(3000)
    assert group.target_epoch == group.group_epoch
    assert group.target["a"].active == ALL
