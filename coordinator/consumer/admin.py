"""Offsets and administration of KIP-848 consumer groups: Kafka's ``ConsumerGroup`` rules
for OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups, offset retention and
ConsumerGroupDescribe. Pure functions of the group as it stands; ``offsets.committed``
and ``group_admin`` call them for a group id that names a consumer group."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..offsets.store import CommitRequest, OffsetStore, Record
from ..results import DescribedConsumerGroup, DescribedConsumerMember, DescribedTopicPartitions
from ..topics_image import TopicsImage
from . import records as cr
from .assignors import java_uuid_key
from .group import ConsumerGroup, ConsumerGroupMember


def _member_epoch_error(member: ConsumerGroupMember, epoch: int) -> ErrorCode:
    if epoch == member.member_epoch:
        return NO_ERROR
    # A classic-protocol member sends its generation, which is its member epoch.
    return ErrorCode.illegal_generation if member.classic_member_metadata is not None \
        else ErrorCode.stale_member_epoch


def validate_commit(group: ConsumerGroup, req: CommitRequest,
                    transactional: bool = False) -> ErrorCode:
    """``ConsumerGroup.validateOffsetCommit`` and OffsetMetadataManager's version rule: a
    stale epoch below OffsetCommit v9 is UNSUPPORTED_VERSION."""
    epoch = req.generation_id
    if epoch < 0 and not group.members:
        return NO_ERROR
    if transactional and epoch == -1 and req.member_id == "" and req.instance_id is None:
        return NO_ERROR
    member = group.members.get(req.member_id)
    if member is None:
        return ErrorCode.unknown_member_id
    if not transactional and member.classic_member_metadata is None and req.api_version < 9:
        return ErrorCode.unsupported_version
    err = _member_epoch_error(member, epoch)
    if err is ErrorCode.stale_member_epoch and transactional:
        return ErrorCode.illegal_generation  # validateTransactionalOffsetCommit
    if err is ErrorCode.stale_member_epoch and req.api_version < 9:
        return ErrorCode.unsupported_version
    return err


def validate_fetch(group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode:
    """``ConsumerGroup.validateOffsetFetch``: OffsetFetch v9's member id and epoch."""
    if member_id is None and member_epoch < 0:
        return NO_ERROR
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.unknown_member_id
    return _member_epoch_error(member, member_epoch)


def is_subscribed(group: ConsumerGroup, topic: str) -> bool:
    """``ModernGroup.isSubscribedToTopic``: by name or through a resolved regex."""
    return topic in group.subscribed_topic_names


def delete_offsets(store: OffsetStore, group: ConsumerGroup,
                   topics: Sequence[tuple[str, Sequence[int]]]
                   ) -> tuple[list[tuple[str, list[tuple[int, ErrorCode]]]], list[Record]]:
    """OffsetDelete (KIP-496) for a consumer group: topics it subscribes to are refused."""
    gid = group.group_id
    rows: list[tuple[str, list[tuple[int, ErrorCode]]]] = []
    records: list[Record] = []
    for topic, partitions in topics:
        if is_subscribed(group, topic):
            rows.append((topic, [(p, ErrorCode.group_subscribed_to_topic) for p in partitions]))
            continue
        for p in partitions:
            if store.get(gid, topic, p) is not None:
                records.append((co.OffsetCommitKey(gid, topic, p), None))
        rows.append((topic, [(p, NO_ERROR) for p in partitions]))
    return rows, records


def validate_delete_group(group: ConsumerGroup) -> ErrorCode:
    return NO_ERROR if not group.members else ErrorCode.non_empty_group


def delete_group_records(store: OffsetStore, group: ConsumerGroup) -> list[Record]:
    """Tombstones for every offset of the group, then for every record of the group."""
    gid = group.group_id
    records: list[Record] = [(co.OffsetCommitKey(gid, t, p), None)
                             for (t, p) in store.offsets(gid)]
    records.extend(group_tombstones(group))
    return records


def group_tombstones(group: ConsumerGroup) -> list[Record]:
    return cr.group_tombstone_records(group)  # type: ignore[return-value]


def expire(store: OffsetStore, group: ConsumerGroup, now: int) -> tuple[list[Record], bool]:
    """Offset retention of a consumer group (its ``offsetExpirationCondition``: from each
    commit, for topics no member subscribes to): tombstones, and whether the group, empty
    and left without offsets, is to be deleted too."""
    gid = group.group_id
    offsets = store.offsets(gid)
    records: list[Record] = []
    all_expired = True
    for (topic, partition), c in offsets.items():
        if is_subscribed(group, topic):
            all_expired = False
            continue
        if c.expire_timestamp >= 0:
            expired = now >= c.expire_timestamp
        else:
            expired = now - c.commit_timestamp >= store.retention_ms
        if expired:
            records.append((co.OffsetCommitKey(gid, topic, partition), None))
        else:
            all_expired = False
    return records, all_expired and not group.members


def _described(assignment: Mapping[uuid.UUID, frozenset[int]], image: TopicsImage
               ) -> tuple[DescribedTopicPartitions, ...]:
    out = []
    for topic_id in sorted(assignment, key=java_uuid_key):
        name = image.name_of(topic_id)
        if name is None:
            continue  # deleted since: Kafka leaves out topics missing from its image
        out.append(DescribedTopicPartitions(topic_id, name, tuple(sorted(assignment[topic_id]))))
    return tuple(out)


def describe(group: ConsumerGroup, image: TopicsImage, default_assignor: str
             ) -> DescribedConsumerGroup:
    """``ConsumerGroup.asDescribedGroup``."""
    members = tuple(
        DescribedConsumerMember(
            m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
            tuple(sorted(m.subscribed_topic_names)), m.subscribed_topic_regex,
            _described(m.assigned_partitions, image),
            _described(group.target_assignment.get(m.member_id, {}), image),
            0 if m.classic_member_metadata is not None else 1, m.state.name,
            _described(m.partitions_pending_revocation, image))
        for m in group.members.values())
    return DescribedConsumerGroup(
        group.group_id, NO_ERROR, None, group.state.value, group.group_epoch,
        group.assignment_epoch, group.preferred_server_assignor() or default_assignor,
        members)
