"""The coordinator scenarios on a KIP-848 consumer group, through the real runtime on the
manual clock: a forced rebalance (a new group epoch; the members reconcile to it keeping
their partitions), an expired member, a fenced static member (replaced by a member id no
client holds, which then expires), each as Kafka's records, and a failed append that
changes nothing."""

from __future__ import annotations

from kafkalite.protocol.errors import ErrorCode as E

from .consumer_helpers import epoch, owned
from .harness import GROUP, check_replay, topic_id
from .test_consumer_heartbeat import SESSION, make, two_members

FOO = topic_id("foo")


def test_forced_rebalance_is_a_new_group_epoch_the_members_reconcile_to() -> None:
    h = make()
    assert h.run(h.core.consumer.force_rebalance(h.now, GROUP)) is E.group_id_not_found
    two_members(h)
    group = h.cgroup()
    h.fail_with = E.not_coordinator
    assert h.run(h.core.consumer.force_rebalance(h.now, GROUP)) is E.not_coordinator
    assert group.group_epoch == 2
    h.fail_with = None
    assert h.run(h.core.consumer.force_rebalance(h.now, GROUP)) is E.none
    assert h.written[-1] == [epoch(3)]
    assert group.group_epoch == 3
    check_replay(h)
    r1 = h.cg("m1", 2)
    r2 = h.cg("m2", 2)
    assert (r1.error, r1.member_epoch, r2.member_epoch) == (E.none, 3, 3)
    # The sticky target keeps each member's partitions.
    assert group.members["m1"].assigned_partitions == {FOO: frozenset({0, 1})}
    assert group.members["m2"].assigned_partitions == {FOO: frozenset({2, 3})}
    h.cg("m1", 3, owned=owned({"foo": [0, 1]}))
    h.cg("m2", 3, owned=owned({"foo": [2, 3]}))
    assert h.cgroup().state.value == "Stable"


def test_expired_member_is_fenced_and_the_other_takes_its_partitions() -> None:
    h = make()
    two_members(h)
    assert h.run(h.core.consumer.expire_member(h.now, GROUP, "nobody")) is E.unknown_member_id
    assert h.run(h.core.consumer.expire_member(h.now, GROUP, "m2")) is E.none
    assert "m2" not in h.cgroup().members and h.cgroup().group_epoch == 3
    assert h.cg("m2", 2).error is E.unknown_member_id
    r = h.cg("m1", 2, owned=owned({"foo": [0, 1]}))
    assert r.member_epoch == 3 and r.assignment == {FOO: frozenset({0, 1, 2, 3})}
    check_replay(h)


def test_fenced_static_member_is_replaced_then_expires() -> None:
    h = make()
    r = h.cg("m1", 0, names=["foo"], instance="i1")
    assert r.assignment == {FOO: frozenset({0, 1, 2, 3})}
    assert h.run(h.core.consumer.fence_static_member(h.now, GROUP, "nope")) \
        is E.unknown_member_id
    assert h.run(h.core.consumer.fence_static_member(h.now, GROUP, "i1")) is E.none
    group = h.cgroup()
    new = group.static_members["i1"]
    assert new != "m1" and set(group.members) == {new}
    member = group.members[new]
    assert member.subscribed_topic_names == frozenset({"foo"})
    assert member.assigned_partitions == {FOO: frozenset({0, 1, 2, 3})}
    # The old member id is fenced by the new one.
    assert h.cg("m1", 1, instance="i1").error is E.fenced_instance_id
    check_replay(h)
    # Nobody heartbeats as the new member: it is fenced when its session ends.
    assert h.cg("m3", 0, names=["foo"], instance="i1").error is E.unreleased_instance_id
    h.advance(SESSION)
    assert not h.cgroup().members
    assert h.cg("m3", 0, names=["foo"], instance="i1").error is E.none
