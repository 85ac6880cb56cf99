"""KIP-848 reconciliation (Kafka's CurrentAssignmentBuilder), epoch checks, target assignment."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from kafkalite.coordinator.consumer import records as cr
from kafkalite.coordinator.consumer.assignors import SubscriptionType
from kafkalite.coordinator.consumer.group import (
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    TopicMetadata,
)
from kafkalite.coordinator.consumer.reconciliation import (
    FencedMemberEpoch,
    build_target_assignment,
    reconcile,
    validate_member_epoch,
)
from kafkalite.coordinator.consumer.topic_regex import ResolvedRegularExpression
from kafkalite.protocol import consumer_group_records as cg

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)


def a(**topics: list[int]) -> dict[uuid.UUID, frozenset[int]]:
    ids = {"t1": T1, "t2": T2}
    return {ids[t]: frozenset(p) for t, p in topics.items()}


def free(_t: uuid.UUID, _p: int) -> int:
    return -1


def owned_by(epochs: dict[tuple[uuid.UUID, int], int]):  # type: ignore[no-untyped-def]
    return lambda t, p: epochs.get((t, p), -1)


def stable(epoch: int, **topics: list[int]) -> ConsumerGroupMember:
    return ConsumerGroupMember("m", member_epoch=epoch, previous_member_epoch=epoch - 1,
                               assigned_partitions=a(**topics))


def test_stable_to_stable_with_new_partitions() -> None:
    m = stable(10, t1=[1, 2], t2=[4])
    out = reconcile(m, 11, a(t1=[1, 2, 3], t2=[4, 5]), free, [(T1, [1, 2]), (T2, [4])])
    assert out == replace(m, member_epoch=11, previous_member_epoch=10,
                          assigned_partitions=a(t1=[1, 2, 3], t2=[4, 5]))


def test_same_epoch_stable_member_is_unchanged() -> None:
    m = stable(10, t1=[1])
    assert reconcile(m, 10, a(t1=[1, 2]), free, []) is m


def test_stable_to_unrevoked_revokes_first_at_the_same_epoch() -> None:
    m = stable(10, t1=[1, 2, 3], t2=[4, 5, 6])
    out = reconcile(m, 11, a(t1=[2, 3, 4], t2=[5, 6, 7]), free,
                    [(T1, [1, 2, 3]), (T2, [4, 5, 6])])
    # The new partitions (t1-4, t2-7) wait until the revocation is acknowledged.
    assert out == replace(m, member_epoch=10, previous_member_epoch=10,
                          state=MemberState.UNREVOKED_PARTITIONS,
                          assigned_partitions=a(t1=[2, 3], t2=[5, 6]),
                          partitions_pending_revocation=a(t1=[1], t2=[4]))


def test_revocation_already_done_by_the_member_skips_the_wait() -> None:
    m = stable(10, t1=[1, 2])
    out = reconcile(m, 11, a(t1=[2]), free, [(T1, [2])])
    assert out == replace(m, member_epoch=11, previous_member_epoch=10,
                          assigned_partitions=a(t1=[2]))


def test_stable_to_unreleased_when_the_previous_owner_holds_them() -> None:
    m = stable(10, t1=[1])
    out = reconcile(m, 11, a(t1=[1, 2]), owned_by({(T1, 2): 10}), [(T1, [1])])
    assert out == replace(m, member_epoch=11, previous_member_epoch=10,
                          state=MemberState.UNRELEASED_PARTITIONS, assigned_partitions=a(t1=[1]))
    # Once released, the partition is assigned at the same epoch.
    out2 = reconcile(out, 11, a(t1=[1, 2]), free, [(T1, [1])])
    assert out2 == replace(out, state=MemberState.STABLE, previous_member_epoch=11,
                           assigned_partitions=a(t1=[1, 2]))


def test_unrevoked_waits_until_the_partitions_are_gone() -> None:
    m = ConsumerGroupMember("m", member_epoch=10, previous_member_epoch=10,
                            state=MemberState.UNREVOKED_PARTITIONS,
                            assigned_partitions=a(t1=[2, 3]),
                            partitions_pending_revocation=a(t1=[1]))
    target = a(t1=[2, 3, 4])
    assert reconcile(m, 11, target, free, [(T1, [1, 2, 3])]) is m
    assert reconcile(m, 11, target, free, None) is m  # owned not sent: assume still owned
    out = reconcile(m, 11, target, free, [(T1, [2, 3])])
    assert out == replace(m, member_epoch=11, previous_member_epoch=10,
                          state=MemberState.STABLE, assigned_partitions=a(t1=[2, 3, 4]),
                          partitions_pending_revocation={})


def test_a_partition_the_member_revokes_can_come_back_to_it() -> None:
    m = ConsumerGroupMember("m", member_epoch=10, previous_member_epoch=10,
                            state=MemberState.UNREVOKED_PARTITIONS,
                            assigned_partitions=a(t1=[2]), partitions_pending_revocation=a(t1=[1]))
    # t1-1 is owned at epoch 10: by this very member, so it is not "unreleased".
    out = reconcile(m, 12, a(t1=[1, 2]), owned_by({(T1, 1): 10, (T1, 2): 10}), [(T1, [2])])
    assert out.state is MemberState.STABLE and out.member_epoch == 12
    assert out.assigned_partitions == a(t1=[1, 2])


def test_unsubscribed_topics_are_revoked_before_a_new_target() -> None:
    m = stable(10, t1=[1], t2=[2])
    out = reconcile(m, 10, a(t1=[1], t2=[2]), free, [(T1, [1]), (T2, [2])],
                    subscribed_topic_ids={T1}, has_subscription_changed=True)
    assert out == replace(m, state=MemberState.UNREVOKED_PARTITIONS, assigned_partitions=a(t1=[1]),
                          partitions_pending_revocation=a(t2=[2]))
    # Revoked, but the group has no new target yet: the epoch stays (min(epoch + 1, target)).
    out2 = reconcile(out, 10, a(t1=[1], t2=[2]), free, [(T1, [1])], subscribed_topic_ids={T1})
    assert out2.member_epoch == 10 and out2.state is MemberState.STABLE
    assert out2.assigned_partitions == a(t1=[1])


def test_unknown_state_fences_unless_the_member_owns_nothing() -> None:
    m = replace(stable(10, t1=[1]), state=MemberState.UNKNOWN)
    with pytest.raises(FencedMemberEpoch):
        reconcile(m, 11, a(t1=[1]), free, [(T1, [1])])
    with pytest.raises(FencedMemberEpoch):
        reconcile(m, 11, a(t1=[1]), free, None)
    assert reconcile(m, 11, a(t1=[1]), free, []).state is MemberState.STABLE


def test_member_epoch_validation() -> None:
    m = replace(stable(10, t1=[1, 2]), previous_member_epoch=9)
    validate_member_epoch(m, 10, None)
    # The previous epoch with a subset of the assignment: the bump's response was lost.
    validate_member_epoch(m, 9, [(T1, [1])])
    with pytest.raises(FencedMemberEpoch, match=r"greater member epoch \(11\)"):
        validate_member_epoch(m, 11, [])
    with pytest.raises(FencedMemberEpoch, match=r"smaller member epoch \(8\)"):
        validate_member_epoch(m, 8, [])
    with pytest.raises(FencedMemberEpoch):
        validate_member_epoch(m, 9, [(T1, [3])])
    with pytest.raises(FencedMemberEpoch):
        validate_member_epoch(m, 9, None)


def group_with(*members: ConsumerGroupMember, targets: dict[str, dict] | None = None
               ) -> ConsumerGroup:
    g = ConsumerGroup("g", group_epoch=1, assignment_epoch=1)
    for m in members:
        g.update_member(m)
    for mid, t in (targets or {}).items():
        g.update_target_assignment(mid, t)
    return g


META = {"t1": TopicMetadata(T1, "t1", 4), "t2": TopicMetadata(T2, "t2", 2)}


def test_target_assignment_records_only_what_changed() -> None:
    m1 = ConsumerGroupMember("m1", member_epoch=1, subscribed_topic_names=frozenset({"t1"}),
                             assigned_partitions=a(t1=[0, 1, 2, 3]))
    g = group_with(m1, targets={"m1": a(t1=[0, 1, 2, 3])})
    m2 = ConsumerGroupMember("m2", subscribed_topic_names=frozenset({"t1"}))
    res = build_target_assignment(g, 2, "uniform", META, SubscriptionType.HOMOGENEOUS,
                                  {"m2": m2})
    assert res.assignment == {"m1": a(t1=[0, 1]), "m2": a(t1=[2, 3])}
    assert res.records == [
        (cg.ConsumerGroupTargetAssignmentMemberKey("g", "m1"),
         cg.ConsumerGroupTargetAssignmentMemberValue((cg.TopicIdPartitions(T1, (0, 1)),))),
        (cg.ConsumerGroupTargetAssignmentMemberKey("g", "m2"),
         cg.ConsumerGroupTargetAssignmentMemberValue((cg.TopicIdPartitions(T1, (2, 3)),))),
        (cg.ConsumerGroupTargetAssignmentMetadataKey("g"),
         cg.ConsumerGroupTargetAssignmentMetadataValue(2)),
    ]


def test_target_assignment_static_member_takes_over_its_instance() -> None:
    old = ConsumerGroupMember("old", member_epoch=-2, instance_id="i",
                              subscribed_topic_names=frozenset({"t1"}),
                              assigned_partitions=a(t1=[0, 1]))
    other = ConsumerGroupMember("o", member_epoch=1, subscribed_topic_names=frozenset({"t1"}),
                                assigned_partitions=a(t1=[2, 3]))
    g = group_with(old, other, targets={"old": a(t1=[0, 1]), "o": a(t1=[2, 3])})
    new = ConsumerGroupMember("new", instance_id="i", subscribed_topic_names=frozenset({"t1"}))
    res = build_target_assignment(g, 2, "uniform", META, SubscriptionType.HOMOGENEOUS,
                                  {"new": new})
    assert res.assignment == {"new": a(t1=[0, 1]), "o": a(t1=[2, 3])}
    assert [k for k, _ in res.records] == [
        cg.ConsumerGroupTargetAssignmentMemberKey("g", "new"),
        cg.ConsumerGroupTargetAssignmentMetadataKey("g")]


def test_target_assignment_follows_resolved_regexes() -> None:
    m1 = ConsumerGroupMember("m1", subscribed_topic_regex="t.*")
    g = group_with()
    g.update_resolved_regex("t.*", ResolvedRegularExpression(frozenset({"t1", "t2"}), 1, 0))
    res = build_target_assignment(g, 1, "range", META, SubscriptionType.HOMOGENEOUS,
                                  {"m1": m1})
    assert res.assignment == {"m1": a(t1=[0, 1, 2, 3], t2=[0, 1])}


def test_record_helpers_exact_values() -> None:
    m = ConsumerGroupMember("m", member_epoch=3, previous_member_epoch=2,
                            state=MemberState.UNREVOKED_PARTITIONS, client_id="c",
                            client_host="/h", rebalance_timeout_ms=500,
                            subscribed_topic_names=frozenset({"z", "a"}),
                            server_assignor_name="range", assigned_partitions=a(t2=[1], t1=[3, 0]),
                            partitions_pending_revocation=a(t1=[2]))
    assert cr.member_subscription_record("g", m) == (
        cg.ConsumerGroupMemberMetadataKey("g", "m"),
        cg.ConsumerGroupMemberMetadataValue(None, None, "c", "/h", ("a", "z"), "", 500, "range"))
    assert cr.current_assignment_record("g", m) == (
        cg.ConsumerGroupCurrentMemberAssignmentKey("g", "m"),
        cg.ConsumerGroupCurrentMemberAssignmentValue(
            3, 2, 1, (cg.TopicIdPartitions(T1, (0, 3)), cg.TopicIdPartitions(T2, (1,))),
            (cg.TopicIdPartitions(T1, (2,)),)))
    assert cr.subscription_metadata_record("g", META) == (
        cg.ConsumerGroupPartitionMetadataKey("g"), cg.ConsumerGroupPartitionMetadataValue((
            cg.PartitionMetadataTopic(T1, "t1", 4), cg.PartitionMetadataTopic(T2, "t2", 2))))
    assert cr.regular_expression_record(
        "g", "t.*", ResolvedRegularExpression(frozenset({"t2", "t1"}), 5, 6)) == (
        cg.ConsumerGroupRegularExpressionKey("g", "t.*"),
        cg.ConsumerGroupRegularExpressionValue(("t1", "t2"), 5, 6))
    assert cr.remove_member_records("g", "m") == [
        (cg.ConsumerGroupCurrentMemberAssignmentKey("g", "m"), None),
        (cg.ConsumerGroupTargetAssignmentMemberKey("g", "m"), None),
        (cg.ConsumerGroupMemberMetadataKey("g", "m"), None)]
