"""The ``__consumer_offsets`` records of consumer group changes (Kafka's
``GroupCoordinatorRecordHelpers``): what the core returns for the runtime to append.

Lists Kafka builds from hash maps are written sorted (topic names, topic ids in Kafka's
``Uuid`` order, partitions, member ids), so the same change always gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

from kafkalite.protocol import consumer_group_records as cg
from kafkalite.protocol.consumer_offsets import RecordKey, RecordValue

from .assignors import Assignment, java_uuid_key
from .group import ConsumerGroup, ConsumerGroupMember, TopicMetadata
from .topic_regex import ResolvedRegularExpression

Record: TypeAlias = "tuple[RecordKey, RecordValue | None]"


def topic_partitions(assignment: Assignment) -> tuple[cg.TopicIdPartitions, ...]:
    return tuple(cg.TopicIdPartitions(t, tuple(sorted(assignment[t])))
                 for t in sorted(assignment, key=java_uuid_key))


def member_subscription_record(group_id: str, member: ConsumerGroupMember) -> Record:
    """ConsumerGroupMemberMetadata (``newConsumerGroupMemberSubscriptionRecord``)."""
    return (cg.ConsumerGroupMemberMetadataKey(group_id, member.member_id),
            cg.ConsumerGroupMemberMetadataValue(
                instance_id=member.instance_id, rack_id=member.rack_id,
                client_id=member.client_id, client_host=member.client_host,
                subscribed_topic_names=tuple(sorted(member.subscribed_topic_names)),
                subscribed_topic_regex=member.subscribed_topic_regex,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                server_assignor=member.server_assignor_name,
                classic_member_metadata=member.classic_member_metadata))


def member_subscription_tombstone(group_id: str, member_id: str) -> Record:
    return (cg.ConsumerGroupMemberMetadataKey(group_id, member_id), None)


def subscription_metadata_record(group_id: str,
                                 metadata: Mapping[str, TopicMetadata]) -> Record:
    """ConsumerGroupPartitionMetadata (``newConsumerGroupSubscriptionMetadataRecord``), as
    Kafka 4.0 writes it: no racks."""
    return (cg.ConsumerGroupPartitionMetadataKey(group_id),
            cg.ConsumerGroupPartitionMetadataValue(tuple(
                cg.PartitionMetadataTopic(metadata[n].topic_id, metadata[n].name,
                                 metadata[n].num_partitions)
                for n in sorted(metadata))))


def subscription_metadata_tombstone(group_id: str) -> Record:
    return (cg.ConsumerGroupPartitionMetadataKey(group_id), None)


def group_epoch_record(group_id: str, epoch: int) -> Record:
    """ConsumerGroupMetadata (``newConsumerGroupEpochRecord``)."""
    return (cg.ConsumerGroupMetadataKey(group_id), cg.ConsumerGroupMetadataValue(epoch))


def group_epoch_tombstone(group_id: str) -> Record:
    return (cg.ConsumerGroupMetadataKey(group_id), None)


def target_assignment_record(group_id: str, member_id: str, partitions: Assignment) -> Record:
    """ConsumerGroupTargetAssignmentMember (``newConsumerGroupTargetAssignmentRecord``)."""
    return (cg.ConsumerGroupTargetAssignmentMemberKey(group_id, member_id),
            cg.ConsumerGroupTargetAssignmentMemberValue(topic_partitions(partitions)))


def target_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return (cg.ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), None)


def target_assignment_epoch_record(group_id: str, epoch: int) -> Record:
    """ConsumerGroupTargetAssignmentMetadata (``newConsumerGroupTargetAssignmentEpochRecord``)."""
    return (cg.ConsumerGroupTargetAssignmentMetadataKey(group_id),
            cg.ConsumerGroupTargetAssignmentMetadataValue(epoch))


def target_assignment_epoch_tombstone(group_id: str) -> Record:
    return (cg.ConsumerGroupTargetAssignmentMetadataKey(group_id), None)


def current_assignment_record(group_id: str, member: ConsumerGroupMember) -> Record:
    """ConsumerGroupCurrentMemberAssignment (``newConsumerGroupCurrentAssignmentRecord``)."""
    return (cg.ConsumerGroupCurrentMemberAssignmentKey(group_id, member.member_id),
            cg.ConsumerGroupCurrentMemberAssignmentValue(
                member.member_epoch, member.previous_member_epoch, int(member.state),
                topic_partitions(member.assigned_partitions),
                topic_partitions(member.partitions_pending_revocation)))


def current_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return (cg.ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), None)


def regular_expression_record(group_id: str, regex: str,
                              resolved: ResolvedRegularExpression) -> Record:
    """ConsumerGroupRegularExpression (``newConsumerGroupRegularExpressionRecord``)."""
    return (cg.ConsumerGroupRegularExpressionKey(group_id, regex),
            cg.ConsumerGroupRegularExpressionValue(
                tuple(sorted(resolved.topics)), resolved.version, resolved.timestamp))


def regular_expression_tombstone(group_id: str, regex: str) -> Record:
    return (cg.ConsumerGroupRegularExpressionKey(group_id, regex), None)


def remove_member_records(group_id: str, member_id: str) -> list[Record]:
    """A member leaves or is fenced (Kafka's ``removeMember``); the caller adds the
    subscription metadata, if it changed, and the group epoch bump."""
    return [current_assignment_tombstone(group_id, member_id),
            target_assignment_tombstone(group_id, member_id),
            member_subscription_tombstone(group_id, member_id)]


def replace_member_records(group: ConsumerGroup, old: ConsumerGroupMember,
                           new: ConsumerGroupMember) -> list[Record]:
    """A static member rejoins under a new member id and takes over the old one's target
    (Kafka's ``replaceMember``)."""
    gid = group.group_id
    return [*remove_member_records(gid, old.member_id),
            member_subscription_record(gid, new),
            target_assignment_record(gid, new.member_id,
                                     group.target_assignment.get(old.member_id, {})),
            current_assignment_record(gid, new)]


def group_tombstone_records(group: ConsumerGroup) -> list[Record]:
    """Every record of the group, deleted (Kafka's ``createGroupTombstoneRecords``)."""
    gid = group.group_id
    members = sorted(group.members)
    return [
        *(current_assignment_tombstone(gid, m) for m in members),
        *(target_assignment_tombstone(gid, m) for m in members),
        target_assignment_epoch_tombstone(gid),
        *(member_subscription_tombstone(gid, m) for m in members),
        *(regular_expression_tombstone(gid, r) for r in sorted(group.resolved_regexes)),
        subscription_metadata_tombstone(gid),
        group_epoch_tombstone(gid),
    ]

