"""Share group membership (KIP-932's ShareGroupHeartbeat), as Kafka's
``GroupMetadataManager`` runs it for share groups, in a pure form: a heartbeat gives the
records to write and the answer; the group changes only when those records are replayed
(:func:`replay`), as the coordinator's other groups do.

A share group has no revocation: the target assignment (the ``simple`` assignor over the
members' subscriptions) is the members' assignment at once, each member taking the
target's epoch on its next heartbeat. Records are Kafka's (``share_group_records``): 10
member metadata, 11 group epoch, 12 target assignment epoch, 13 a member's target
assignment, 14 a member's current assignment. Member ids come from the clients (KIP-1082).

The group epoch also moves when a subscribed topic appears, goes or changes its partition
count: the group epoch record keeps a hash of the subscribed topics' metadata (Kafka's
field; kafkalite's own hash function, not Kafka's KIP-1101 one).

Record 15 (ShareGroupStatePartitionMetadata) keeps which share-partitions have their
state initialized in ``__share_group_state``, which are initializing and which topics are
being deleted (:func:`state_partition_metadata`); the
group coordinator's share part (``share.membership``) writes it and calls :func:`leave`
from its session timers.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from kafkalite.protocol import share_group_records as sg
from kafkalite.protocol.consumer_group_records import TopicIdPartitions
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from .assignor import assign

LEAVE_EPOCH = -1

#: An assigned share-partition: (topic id, partition).
Assigned = frozenset[tuple[uuid.UUID, int]]
Record = tuple[sg.ShareGroupKey, sg.ShareGroupValue | None]


@dataclass(frozen=True, slots=True)
class ShareMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    assigned: Assigned = frozenset()


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    #: Each member's target assignment.
    target: dict[str, Assigned] = field(default_factory=dict)
    #: The share-partitions whose state is initialized in ``__share_group_state``: topic
    #: id -> (topic name, partitions), as record 15 (ShareGroupStatePartitionMetadata)
    #: holds them.
    initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] = field(default_factory=dict)
    #: Share-partitions whose first state is being written (record 15's initializing).
    initializing: dict[uuid.UUID, tuple[str, frozenset[int]]] = field(default_factory=dict)
    #: Topics whose share-partition state is being deleted: topic id -> name.
    deleting: dict[uuid.UUID, str] = field(default_factory=dict)

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}


@dataclass(frozen=True, slots=True)
class ShareHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    #: None: unchanged since the last heartbeat.
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ShareHeartbeatResult:
    error: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: The member's partitions, when they changed or the request was a full one.
    assignment: tuple[TopicIdPartitions, ...] | None = None


@dataclass(frozen=True, slots=True)
class AssignableTopic:
    """What the assignor needs of a topic: its id and partition count."""

    topic_id: uuid.UUID
    partitions: int


def _error(code: ErrorCode, message: str, member_id: str | None = None) -> ShareHeartbeatResult:
    """An error answer: Kafka's carries no member id (its handleOperationException sets
    only the error code and message)."""
    return ShareHeartbeatResult(code, message, None)


def validate(req: ShareHeartbeat) -> ShareHeartbeatResult | None:
    """Kafka's request checks (INVALID_REQUEST with its messages), or None."""
    bad = ErrorCode.invalid_request
    if not req.group_id:
        return _error(bad, "GroupId can't be empty.")
    if req.rack_id is not None and not req.rack_id.strip():
        return _error(bad, "RackId can't be empty.")
    if not req.member_id.strip():
        return _error(bad, "MemberId can't be empty.")
    if req.member_epoch == 0:
        if not req.subscribed_topic_names:
            return _error(bad, "SubscribedTopicNames must be set in first request.")
    elif req.member_epoch < LEAVE_EPOCH:
        return _error(bad, "MemberEpoch is invalid.")
    return None


def _tps(assigned: Assigned) -> tuple[TopicIdPartitions, ...]:
    by_topic: dict[uuid.UUID, list[int]] = {}
    for topic_id, p in assigned:
        by_topic.setdefault(topic_id, []).append(p)
    return tuple(TopicIdPartitions(t, tuple(sorted(ps))) for t, ps in sorted(
        by_topic.items(), key=lambda kv: kv[0].bytes))


def _assigned(tps: tuple[TopicIdPartitions, ...]) -> Assigned:
    return frozenset((tp.topic_id, p) for tp in tps for p in tp.partitions)


def _target(group: ShareGroup, members: Mapping[str, ShareMember],
            topics: Mapping[str, AssignableTopic]) -> dict[str, Assigned]:
    names = {info.topic_id: name for name, info in topics.items()}
    current = {m: frozenset((names[t], p) for t, p in group.target.get(m, frozenset())
                            if t in names) for m in members}
    got = assign({m: frozenset(members[m].subscribed_topic_names) for m in members},
                 {name: info.partitions for name, info in topics.items()}, current)
    return {m: frozenset((topics[t].topic_id, p) for t, p in ps) for m, ps in got.items()}


def metadata_hash(names: Iterable[str], topics: Mapping[str, AssignableTopic]) -> int:
    """A hash of the subscribed topics that exist: their names, ids and partition counts."""
    h = hashlib.blake2b(digest_size=8)
    for name in sorted(set(names)):
        info = topics.get(name)
        if info is not None:
            h.update(f"{name}\0{info.topic_id}\0{info.partitions}\0".encode())
    return int.from_bytes(h.digest(), "big", signed=True)


def _epoch_and_target(group: ShareGroup, members: Mapping[str, ShareMember],
                      topics: Mapping[str, AssignableTopic], records: list[Record]
                      ) -> tuple[int, dict[str, Assigned]]:
    """The records of a new group epoch and the target assignment at it."""
    epoch = group.group_epoch + 1
    gid = group.group_id
    subscribed = (t for m in members.values() for t in m.subscribed_topic_names)
    records.append((sg.ShareGroupMetadataKey(gid),
                    sg.ShareGroupMetadataValue(epoch, metadata_hash(subscribed, topics))))
    target = _target(group, members, topics)
    for m, assigned in sorted(target.items()):
        if group.target.get(m) != assigned:
            records.append((sg.ShareGroupTargetAssignmentMemberKey(gid, m),
                            sg.ShareGroupTargetAssignmentMemberValue(_tps(assigned))))
    records.append((sg.ShareGroupTargetAssignmentMetadataKey(gid),
                    sg.ShareGroupTargetAssignmentMetadataValue(epoch)))
    return epoch, target


def _member_records(gid: str, m: ShareMember) -> list[Record]:
    return [(sg.ShareGroupMemberMetadataKey(gid, m.member_id),
             sg.ShareGroupMemberMetadataValue(m.rack_id, m.client_id, m.client_host,
                                              m.subscribed_topic_names))]


def heartbeat(group: ShareGroup | None, req: ShareHeartbeat, topics: Mapping[str, AssignableTopic],
              heartbeat_interval_ms: int, max_size: int) -> tuple[list[Record],
                                                                  ShareHeartbeatResult]:
    """The records a heartbeat writes and its answer. ``group`` is None for a group id
    that names no group yet; ``topics`` the broker's topics by name."""
    invalid = validate(req)
    if invalid is not None:
        return [], invalid
    gid, mid = req.group_id, req.member_id
    if group is None and req.member_epoch != 0:
        # Kafka looks the group up first: a member of a group that does not exist.
        return [], _error(ErrorCode.group_id_not_found, f"Group {gid} not found.", mid)
    if req.member_epoch == LEAVE_EPOCH:
        assert group is not None
        if mid not in group.members:
            return [], _error(ErrorCode.unknown_member_id,
                              f"Member {mid} is not a member of group {gid}.", mid)
        # A member leaving is told no heartbeat interval, as Kafka's answer.
        return leave(group, mid, topics), ShareHeartbeatResult(
            NO_ERROR, None, mid, LEAVE_EPOCH, 0)
    group = group if group is not None else ShareGroup(gid)
    member = group.members.get(mid)
    if req.member_epoch == 0:
        if member is None and len(group.members) >= max_size:
            return [], _error(ErrorCode.group_max_size_reached,
                              f"The share group has reached its maximum capacity of "
                              f"{max_size} members.", mid)
        member = member or ShareMember(mid)
    elif member is None:
        return [], _error(ErrorCode.unknown_member_id,
                          f"Member {mid} is not a member of group {gid}.", mid)
    elif req.member_epoch not in (member.member_epoch, member.previous_member_epoch):
        which = "greater" if req.member_epoch > member.member_epoch else "smaller"
        return [], _error(ErrorCode.fenced_member_epoch,
                          f"The share group member has a {which} member epoch "
                          f"({req.member_epoch}) than the one known by the group coordinator "
                          f"({member.member_epoch}). The member must abandon all its "
                          "partitions and rejoin.", mid)
    records: list[Record] = []
    updated = replace(
        member, rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
        client_id=req.client_id, client_host=req.client_host,
        subscribed_topic_names=tuple(sorted(req.subscribed_topic_names))
        if req.subscribed_topic_names is not None else member.subscribed_topic_names)
    new_member = mid not in group.members
    if new_member or updated != member:
        records += _member_records(gid, updated)
    members = {**group.members, mid: updated}
    epoch = group.group_epoch
    subscribed = (t for m in members.values() for t in m.subscribed_topic_names)
    if new_member or updated.subscribed_topic_names != member.subscribed_topic_names \
            or metadata_hash(subscribed, topics) != group.metadata_hash:
        epoch, target = _epoch_and_target(group, members, topics, records)
    else:
        target = dict(group.target)
    # No revocation in a share group: the member takes its target at the target's epoch.
    assigned = target.get(mid, frozenset())
    if updated.member_epoch != epoch or updated.assigned != assigned:
        records.append((sg.ShareGroupCurrentMemberAssignmentKey(gid, mid),
                        sg.ShareGroupCurrentMemberAssignmentValue(
                            epoch, updated.member_epoch, 0, _tps(assigned))))
    full = req.member_epoch == 0 or req.subscribed_topic_names is not None
    changed = assigned != member.assigned
    return records, ShareHeartbeatResult(
        NO_ERROR, None, mid, epoch, heartbeat_interval_ms,
        _tps(assigned) if full or changed else None)


def leave(group: ShareGroup, member_id: str, topics: Mapping[str, AssignableTopic]) -> list[Record]:
    """The records removing a member (it left, or its session timed out) and giving the
    others a new target assignment."""
    gid = group.group_id
    records: list[Record] = [
        (sg.ShareGroupCurrentMemberAssignmentKey(gid, member_id), None),
        (sg.ShareGroupTargetAssignmentMemberKey(gid, member_id), None),
        (sg.ShareGroupMemberMetadataKey(gid, member_id), None),
    ]
    rest = {m: v for m, v in group.members.items() if m != member_id}
    without = ShareGroup(gid, group.group_epoch, group.metadata_hash, group.assignment_epoch,
                         rest, {m: a for m, a in group.target.items() if m != member_id})
    _epoch_and_target(without, rest, topics, records)
    return records


@dataclass(frozen=True, slots=True)
class DescribedShareGroup:
    """What ShareGroupDescribe answers for a group (Kafka's ShareGroup.asDescribedGroup)."""

    group_id: str
    #: "Empty" or "Stable" (Kafka's share group states; "Dead" is a group that is gone).
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[ShareMember, ...]


def describe(group: ShareGroup) -> DescribedShareGroup:
    return DescribedShareGroup(
        group.group_id, "Stable" if group.members else "Empty", group.group_epoch,
        group.assignment_epoch, "simple",
        tuple(group.members[m] for m in sorted(group.members)))


def replay(groups: dict[str, ShareGroup], key: sg.ShareGroupKey,
           value: sg.ShareGroupValue | None) -> None:
    """Apply one share group record to ``groups`` (live and at load)."""
    gid = key.group
    group = groups.get(gid)
    if group is None:
        if value is None:
            return
        group = groups[gid] = ShareGroup(gid)
    if isinstance(key, sg.ShareGroupMetadataKey):
        if value is None:
            del groups[gid]
            return
        assert isinstance(value, sg.ShareGroupMetadataValue)
        group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
    elif isinstance(key, sg.ShareGroupTargetAssignmentMetadataKey):
        if isinstance(value, sg.ShareGroupTargetAssignmentMetadataValue):
            group.assignment_epoch = value.assignment_epoch
    elif isinstance(key, sg.ShareGroupTargetAssignmentMemberKey):
        if value is None:
            group.target.pop(key.member_id, None)
        else:
            assert isinstance(value, sg.ShareGroupTargetAssignmentMemberValue)
            group.target[key.member_id] = _assigned(value.topic_partitions)
    elif isinstance(key, sg.ShareGroupMemberMetadataKey):
        if value is None:
            group.members.pop(key.member_id, None)
        else:
            assert isinstance(value, sg.ShareGroupMemberMetadataValue)
            old = group.members.get(key.member_id, ShareMember(key.member_id))
            group.members[key.member_id] = replace(
                old, rack_id=value.rack_id, client_id=value.client_id,
                client_host=value.client_host,
                subscribed_topic_names=value.subscribed_topic_names)
    elif isinstance(key, sg.ShareGroupCurrentMemberAssignmentKey):
        m = group.members.get(key.member_id)
        if isinstance(value, sg.ShareGroupCurrentMemberAssignmentValue) and m is not None:
            group.members[key.member_id] = replace(
                m, member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                assigned=_assigned(value.assigned_partitions))
    elif isinstance(key, sg.ShareGroupStatePartitionMetadataKey):
        if isinstance(value, sg.ShareGroupStatePartitionMetadataValue):
            group.initialized = {t.topic_id: (t.topic_name, frozenset(t.partitions))
                                 for t in value.initialized_topics}
            group.initializing = {t.topic_id: (t.topic_name, frozenset(t.partitions))
                                  for t in value.initializing_topics}
            group.deleting = {t.topic_id: t.topic_name for t in value.deleting_topics}
        else:
            group.initialized, group.initializing, group.deleting = {}, {}, {}


def state_partition_metadata(gid: str, initialized: Mapping[uuid.UUID, tuple[str, frozenset[int]]],
                             initializing: Mapping[uuid.UUID, tuple[str, frozenset[int]]],
                             deleting: Mapping[uuid.UUID, str]) -> Record:
    """Record 15 with these initialized, initializing and deleting topics (Kafka's
    coordinator names a share-partition initializing until the share coordinator has
    written its first state, and a topic deleting until its state is gone)."""
    def infos(topics: Mapping[uuid.UUID, tuple[str, frozenset[int]]]
              ) -> tuple[sg.TopicPartitionsInfo, ...]:
        return tuple(sg.TopicPartitionsInfo(tid, name, tuple(sorted(parts)))
                     for tid, (name, parts) in sorted(topics.items(), key=lambda kv: kv[1][0])
                     if parts)

    return (sg.ShareGroupStatePartitionMetadataKey(gid),
            sg.ShareGroupStatePartitionMetadataValue(
                initializing_topics=infos(initializing),
                initialized_topics=infos(initialized),
                deleting_topics=tuple(sg.TopicIdAndName(tid, name) for tid, name in
                                      sorted(deleting.items(), key=lambda kv: kv[1]))))
