"""Consumer group state is what its records say: replay of every record type and tombstone."""

from __future__ import annotations

import uuid

import pytest

from kafkalite.coordinator.consumer import records as cr
from kafkalite.coordinator.consumer.assignors import SubscriptionType
from kafkalite.coordinator.consumer.group import (
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupState,
    MemberState,
    ReplayError,
    SubscriptionCount,
    TopicMetadata,
    replay,
)
from kafkalite.coordinator.consumer.topic_regex import ResolvedRegularExpression
from kafkalite.protocol import consumer_group_records as cg

T1 = uuid.UUID(int=1)


def apply(groups: dict[str, ConsumerGroup], records: list[cr.Record]) -> None:
    for key, value in records:
        assert isinstance(key, cg.KEY_CLASSES)
        assert value is None or isinstance(value, cg.VALUE_CLASSES)
        replay(groups, key, value)


def member(mid: str, epoch: int, parts: list[int], **kw: object) -> ConsumerGroupMember:
    return ConsumerGroupMember(mid, member_epoch=epoch, previous_member_epoch=epoch - 1,
                               subscribed_topic_names=frozenset({"t"}),
                               assigned_partitions={T1: frozenset(parts)} if parts else {},
                               **kw)  # type: ignore[arg-type]


def test_a_group_loads_from_its_records() -> None:
    groups: dict[str, ConsumerGroup] = {}
    m1 = member("m1", 2, [0, 1], instance_id="i1", server_assignor_name="range")
    m2 = member("m2", 2, [2])
    apply(groups, [
        cr.member_subscription_record("g", m1),
        cr.member_subscription_record("g", m2),
        cr.subscription_metadata_record("g", {"t": TopicMetadata(T1, "t", 3)}),
        cr.group_epoch_record("g", 2),
        cr.target_assignment_record("g", "m1", {T1: frozenset({0, 1})}),
        cr.target_assignment_record("g", "m2", {T1: frozenset({2})}),
        cr.target_assignment_epoch_record("g", 2),
        cr.current_assignment_record("g", m1),
        cr.current_assignment_record("g", m2),
    ])
    g = groups["g"]
    assert g.members == {"m1": m1, "m2": m2}
    assert (g.group_epoch, g.assignment_epoch) == (2, 2)
    assert g.state is ConsumerGroupState.STABLE
    assert g.static_members == {"i1": "m1"}
    assert g.preferred_server_assignor() == "range"
    assert g.subscribed_topic_names == {"t": SubscriptionCount(by_name=2)}
    assert g.subscription_type is SubscriptionType.HOMOGENEOUS
    assert g.inverted_target_assignment == {T1: {0: "m1", 1: "m1", 2: "m2"}}
    assert [g.current_partition_epoch(T1, p) for p in range(4)] == [2, 2, 2, -1]


def test_states_follow_the_epochs() -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, [cr.member_subscription_record("g", member("m1", 0, [])),
                   cr.group_epoch_record("g", 1)])
    assert groups["g"].state is ConsumerGroupState.ASSIGNING
    apply(groups, [cr.target_assignment_record("g", "m1", {T1: frozenset({0})}),
                   cr.target_assignment_epoch_record("g", 1)])
    assert groups["g"].state is ConsumerGroupState.RECONCILING
    apply(groups, [cr.current_assignment_record("g", member("m1", 1, [0]))])
    assert groups["g"].state is ConsumerGroupState.STABLE


def test_a_partition_cannot_get_a_second_owner() -> None:
    groups: dict[str, ConsumerGroup] = {}
    apply(groups, [cr.current_assignment_record("g", member("m1", 1, [0]))])
    with pytest.raises(ReplayError, match="still owned at epoch 1"):
        apply(groups, [cr.current_assignment_record("g", member("m2", 1, [0]))])


def test_pending_revocation_counts_as_owned() -> None:
    groups: dict[str, ConsumerGroup] = {}
    revoking = ConsumerGroupMember("m1", member_epoch=3, state=MemberState.UNREVOKED_PARTITIONS,
                                   partitions_pending_revocation={T1: frozenset({5})})
    apply(groups, [cr.current_assignment_record("g", revoking)])
    assert groups["g"].current_partition_epoch(T1, 5) == 3
    with pytest.raises(ReplayError):
        apply(groups, [cr.current_assignment_record("g", member("m2", 4, [5]))])


def test_member_leaves_and_group_is_deleted_in_kafkas_order() -> None:
    groups: dict[str, ConsumerGroup] = {}
    m1 = member("m1", 1, [0])
    apply(groups, [cr.member_subscription_record("g", m1), cr.group_epoch_record("g", 1),
                   cr.target_assignment_record("g", "m1", {T1: frozenset({0})}),
                   cr.target_assignment_epoch_record("g", 1),
                   cr.current_assignment_record("g", m1)])
    # The subscription cannot go before the current assignment's tombstone.
    with pytest.raises(ReplayError, match="did not receive ConsumerGroupCurrentMemberAssignment"):
        apply(groups, [cr.member_subscription_tombstone("g", "m1")])
    apply(groups, [*cr.remove_member_records("g", "m1"), cr.group_epoch_record("g", 2)])
    g = groups["g"]
    assert g.members == {} and g.target_assignment == {} and g.partition_epochs == {}
    assert g.state is ConsumerGroupState.EMPTY
    with pytest.raises(ReplayError, match="did not receive ConsumerGroupTargetAssignmentMetadata"):
        apply(groups, [cr.group_epoch_tombstone("g")])
    apply(groups, cr.group_tombstone_records(g))
    assert groups == {}
    # Tombstones of a group that is gone are ignored.
    apply(groups, cr.group_tombstone_records(ConsumerGroup("g")))
    apply(groups, cr.remove_member_records("g", "m9"))
    assert groups == {}


def test_static_member_replacement_records() -> None:
    groups: dict[str, ConsumerGroup] = {}
    old = member("old", 3, [0, 1], instance_id="i")
    apply(groups, [cr.member_subscription_record("g", old),
                   cr.target_assignment_record("g", "old", {T1: frozenset({0, 1})}),
                   cr.current_assignment_record("g", old)])
    new = ConsumerGroupMember("new", member_epoch=0, previous_member_epoch=0, instance_id="i",
                              subscribed_topic_names=frozenset({"t"}),
                              assigned_partitions={T1: frozenset({0, 1})})
    apply(groups, cr.replace_member_records(groups["g"], old, new))
    g = groups["g"]
    assert set(g.members) == {"new"} and g.static_members == {"i": "new"}
    assert g.target_assignment == {"new": {T1: frozenset({0, 1})}}
    assert g.current_partition_epoch(T1, 0) == 0


def test_regexes_count_their_topics_once() -> None:
    groups: dict[str, ConsumerGroup] = {}
    r1 = ConsumerGroupMember("m1", subscribed_topic_regex="t.*")
    r2 = ConsumerGroupMember("m2", subscribed_topic_regex="t.*")
    apply(groups, [cr.member_subscription_record("g", r1), cr.member_subscription_record("g", r2),
                   cr.regular_expression_record(
                       "g", "t.*", ResolvedRegularExpression(frozenset({"t1", "t2"}), 4, 9))])
    g = groups["g"]
    assert g.subscribed_regexes == {"t.*": 2}
    assert g.subscribed_topic_names == {"t1": SubscriptionCount(by_regex=1),
                                        "t2": SubscriptionCount(by_regex=1)}
    assert g.subscription_type is SubscriptionType.HOMOGENEOUS
    # Only the last subscriber leaving takes the regex's topics away.
    assert g.compute_subscribed_topic_names(r1, None) == g.subscribed_topic_names
    apply(groups, [cr.current_assignment_tombstone("g", "m1"),
                   cr.member_subscription_tombstone("g", "m1")])
    assert g.compute_subscribed_topic_names(r2, None) == {}
    apply(groups, [cr.regular_expression_tombstone("g", "t.*")])
    assert g.resolved_regexes == {} and g.subscribed_topic_names == {}


def test_kafka_41_metadata_hash_is_read() -> None:
    groups: dict[str, ConsumerGroup] = {}
    replay(groups, cg.ConsumerGroupMetadataKey("g"),
           cg.ConsumerGroupMetadataValue(7, metadata_hash=12345))
    assert groups["g"].metadata_hash == 12345 and groups["g"].group_epoch == 7
    assert groups["g"].subscription_metadata == {}
