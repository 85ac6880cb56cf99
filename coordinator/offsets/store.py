"""Committed offsets: the pure part of OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups
and offset retention, as Kafka's ``OffsetMetadataManager`` and ``ClassicGroup`` do them.

Nothing here reads a clock or touches a file: callers pass ``now`` and get back the records
to append (``(key, value)`` pairs; value ``None`` is a tombstone) and the per-partition
errors. State only changes through ``apply`` (the replay of an offset commit record), for
live writes and log loading alike.

The group is seen through ``GroupForOffsets`` so this module does not depend on the group state
machine's classes; ``None`` stands for a group that does not exist.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..classic.states import COMPLETING, DEAD, EMPTY, PREPARING, STABLE, GroupState

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

#: OffsetCommit's retention_time_ms meaning "use the broker's retention" (v2-v4).
DEFAULT_RETENTION_TIME = -1

Record = tuple[co.Key, co.Value | None]
TopicPartition = tuple[str, int]
#: An OffsetFetch answer row: (partition, offset, leader epoch, metadata, error).
OffsetRow = tuple[int, int, int, str, int]


class GroupForOffsets(Protocol):
    """What offset handling reads of a group (``GroupMetadata`` is one)."""

    @property
    def state(self) -> GroupState: ...

    @property
    def generation(self) -> int: ...

    @property
    def protocol_type(self) -> str | None: ...

    @property
    def current_state_timestamp(self) -> int:
        """When the group entered its current state (ms), -1 if unknown."""
        ...

    def has(self, member_id: str) -> bool: ...

    def static_member_id(self, instance_id: str | None) -> str | None: ...

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (parsed ConsumerProtocolSubscription v0 prefix),
        or None when unknown (not the consumer protocol, or unparseable)."""
        ...


#: A committed offset is kept as the value of its record (offset, metadata, commit and
#: expire timestamps, leader epoch).
CommittedOffset = co.OffsetCommitValue


class PartitionCommitView(Protocol):
    """One partition of an OffsetCommit, with the request's own field names: the handler
    passes the decoded request's partitions through (v6+) instead of copying them."""

    @property
    def partition_index(self) -> int: ...

    @property
    def committed_offset(self) -> int: ...

    @property
    def committed_leader_epoch(self) -> int: ...

    @property
    def committed_metadata(self) -> str | None: ...


@dataclass(slots=True)
class PartitionCommit:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = ""


@dataclass(slots=True)
class CommitRequest:
    group_id: str
    member_id: str = ""
    instance_id: str | None = None
    generation_id: int = -1
    retention_time_ms: int = DEFAULT_RETENTION_TIME
    topics: Sequence[tuple[str, Sequence[PartitionCommitView]]] = ()
    api_version: int = 8


@dataclass(slots=True)
class CommitResult:
    #: (topic, partition) -> error code, in request order.
    errors: dict[TopicPartition, ErrorCode] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)
    #: ``records`` encoded (key, value), made in the same pass: the runtime appends these.
    encoded: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    #: Re-arm this member's session timer (a member commit in Stable/PreparingRebalance).
    heartbeat_member: str | None = None


def subscribed_topics_of(protocol_type: str | None, protocol_name: str | None,
                         metadata: Iterable[bytes]) -> set[str] | None:
    """ClassicGroup.computeSubscribedTopics: the union of members' subscribed topics, parsed
    with the v0 prefix every version shares; None if unknown."""
    if protocol_type != "consumer":
        return None
    topics: set[str] = set()
    metas = list(metadata)
    if not metas:
        return topics
    if protocol_name is None:
        return None
    try:
        for m in metas:
            topics.update(co.decode_subscription(m).topics)
    except Exception:
        return None
    return topics


def _is_subscribed(group: GroupForOffsets, topic: str) -> bool:
    subscribed = group.subscribed_topics()
    if subscribed is None:
        return group.protocol_type == "consumer"
    return topic in subscribed


class OffsetStore:
    """Committed offsets of every group this coordinator owns."""

    def __init__(self, max_metadata_bytes: int = 4096, retention_ms: int = 7 * 86_400_000,
                 ) -> None:
        self.max_metadata_bytes = max_metadata_bytes
        self.retention_ms = retention_ms
        self.by_group: dict[str, dict[TopicPartition, CommittedOffset]] = {}

    # --- state --------------------------------------------------------------------------

    def apply(self, key: co.OffsetCommitKey, value: co.OffsetCommitValue | None) -> None:
        tp = (key.topic, key.partition)
        if value is None:
            offsets = self.by_group.get(key.group)
            if offsets is not None:
                offsets.pop(tp, None)
                if not offsets:
                    del self.by_group[key.group]
            return
        offsets = self.by_group.get(key.group)
        if offsets is None:
            offsets = self.by_group[key.group] = {}
        offsets[tp] = value

    def replay_record(self, key: co.Key, value: co.Value | None) -> None:
        """Apply a record of any type (group metadata records are not ours: ignored)."""
        if isinstance(key, co.OffsetCommitKey) and not isinstance(value, co.GroupMetadataValue):
            self.apply(key, value)

    def get(self, group_id: str, topic: str, partition: int) -> CommittedOffset | None:
        offsets = self.by_group.get(group_id)
        return None if offsets is None else offsets.get((topic, partition))

    def offsets(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        return self.by_group.get(group_id, {})

    def has_offsets(self, group_id: str) -> bool:
        return bool(self.by_group.get(group_id))

    # --- OffsetCommit -------------------------------------------------------------------

    def validate_commit(self, group: GroupForOffsets | None, req: CommitRequest,
                        transactional: bool = False) -> ErrorCode:
        """As OffsetMetadataManager.validateOffsetCommit (ClassicGroup.validateOffsetCommit;
        ``transactional``: a TxnOffsetCommit, which is not held to the group's state). A
        commit for a group that does not exist creates a simple group when its records are
        replayed."""
        if group is None:
            if req.generation_id < 0:
                return NO_ERROR
            if req.api_version >= 9:
                return ErrorCode.group_id_not_found
            return ErrorCode.illegal_generation
        state = group.state
        if state is DEAD:
            return ErrorCode.coordinator_not_available
        if req.generation_id < 0 and state is EMPTY:
            return NO_ERROR
        if req.generation_id >= 0 or req.member_id or req.instance_id is not None:
            if req.instance_id is not None:
                existing = group.static_member_id(req.instance_id)
                if existing is None:
                    return ErrorCode.unknown_member_id
                if existing != req.member_id:
                    return ErrorCode.fenced_instance_id
            if not group.has(req.member_id):
                return ErrorCode.unknown_member_id
            if req.generation_id != group.generation:
                return ErrorCode.illegal_generation
        elif state is not EMPTY and not transactional:
            return ErrorCode.unknown_member_id
        if state is COMPLETING and not transactional:
            return ErrorCode.rebalance_in_progress
        return NO_ERROR

    def commit(self, group: GroupForOffsets | None, req: CommitRequest, now: int) -> CommitResult:
        """Validate a commit and return its records (not yet applied: replay them once
        appended) and per-partition errors."""
        result = CommitResult()
        error = self.validate_commit(group, req)
        if error is not NO_ERROR:
            for topic, parts in req.topics:
                for p in parts:
                    result.errors[(topic, p.partition_index)] = error
            return result
        if group is not None and group.state in (STABLE, PREPARING) \
                and group.has(req.member_id):
            result.heartbeat_member = req.member_id
        return self.commit_records(req, now, result)

    def commit_records(self, req: CommitRequest, now: int,
                       result: CommitResult | None = None) -> CommitResult:
        """The records and per-partition errors of a commit already validated (by the
        group's own rules: a consumer group's are in ``consumer.admin``)."""
        result = CommitResult() if result is None else result
        expire = -1 if req.retention_time_ms == DEFAULT_RETENTION_TIME \
            else now + req.retention_time_ms
        limit = self.max_metadata_bytes
        errors, records, encoded = result.errors, result.records, result.encoded
        ok = NO_ERROR
        group_id = req.group_id
        Key, Value = co.OffsetCommitKey, co.OffsetCommitValue
        pack_partition, value_bytes = _I32.pack, co.offset_value_bytes
        commit_ts = _I64.pack(now)
        for topic, parts in req.topics:
            prefix = co.offset_key_prefix(group_id, topic)
            for p in parts:
                index = p.partition_index
                metadata = p.committed_metadata or ""
                # A UTF-8 character is at most 4 bytes: short metadata needs no encoding.
                if len(metadata) * 4 > limit and len(metadata.encode("utf-8")) > limit:
                    errors[(topic, index)] = ErrorCode.offset_metadata_too_large
                    continue
                errors[(topic, index)] = ok
                offset, epoch = p.committed_offset, p.committed_leader_epoch
                records.append((Key(group_id, topic, index),
                                Value(offset, metadata, now, epoch, expire)))
                encoded.append((prefix + pack_partition(index),
                                value_bytes(offset, epoch, metadata, commit_ts, expire)))
        return result

    # --- OffsetFetch --------------------------------------------------------------------

    def fetch(
        self,
        group: GroupForOffsets | None,
        group_id: str,
        topics: Sequence[tuple[str, Sequence[int]]] | None,
    ) -> list[tuple[str, list[OffsetRow]]]:
        """Per topic: (partition, offset, leader_epoch, metadata, error). ``topics`` None
        means every partition the group has an offset for. A missing group is no error."""
        dead = group is not None and group.state is DEAD
        offsets = {} if dead else self.by_group.get(group_id, {})
        out: list[tuple[str, list[OffsetRow]]] = []
        if topics is None:
            by_topic: dict[str, list[OffsetRow]] = {}
            for (topic, partition), c in offsets.items():
                by_topic.setdefault(topic, []).append(
                    (partition, c.offset, c.leader_epoch, c.metadata, NO_ERROR))
            for topic in sorted(by_topic):
                out.append((topic, sorted(by_topic[topic])))
            return out
        for topic, partitions in topics:
            rows: list[OffsetRow] = []
            for partition in partitions:
                found = offsets.get((topic, partition))
                if found is None:
                    rows.append((partition, -1, -1, "", NO_ERROR))
                else:
                    rows.append((partition, found.offset, found.leader_epoch, found.metadata,
                                 NO_ERROR))
            out.append((topic, rows))
        return out

    # --- OffsetDelete -------------------------------------------------------------------

    def delete_offsets(
        self, group: GroupForOffsets | None, group_id: str,
        topics: Sequence[tuple[str, Sequence[int]]],
    ) -> tuple[ErrorCode, list[tuple[str, list[tuple[int, ErrorCode]]]], list[Record]]:
        """(group error, per topic [(partition, error)], tombstones)."""
        if group is None or group.state is DEAD:
            return ErrorCode.group_id_not_found, [], []
        if group.state is not EMPTY and group.protocol_type != "consumer":
            return ErrorCode.non_empty_group, [], []
        records: list[Record] = []
        out: list[tuple[str, list[tuple[int, ErrorCode]]]] = []
        for topic, partitions in topics:
            if _is_subscribed(group, topic):
                out.append((topic, [(p, ErrorCode.group_subscribed_to_topic) for p in partitions]))
                continue
            for p in partitions:
                if self.get(group_id, topic, p) is not None:
                    records.append((co.OffsetCommitKey(group_id, topic, p), None))
            out.append((topic, [(p, NO_ERROR) for p in partitions]))
        return NO_ERROR, out, records

    # --- DeleteGroups -------------------------------------------------------------------

    @staticmethod
    def validate_delete_group(group: GroupForOffsets | None) -> ErrorCode:
        if group is None or group.state is DEAD:
            return ErrorCode.group_id_not_found
        if group.state in (STABLE, PREPARING, COMPLETING):
            return ErrorCode.non_empty_group
        return NO_ERROR

    def delete_group_records(self, group_id: str) -> list[Record]:
        """Tombstones for every offset of the group, then for the group itself."""
        records: list[Record] = [(co.OffsetCommitKey(group_id, t, p), None)
                                 for (t, p) in self.offsets(group_id)]
        records.append((co.GroupMetadataKey(group_id), None))
        return records

    # --- retention ----------------------------------------------------------------------

    def _expiry_base(self, group: GroupForOffsets) -> str | None:
        """ClassicGroup.offsetExpirationCondition: which timestamp offsets expire from."""
        if group.protocol_type is None or group.protocol_type == "":
            return "commit"  # a simple group: from each commit
        if group.state is EMPTY:
            return "empty"  # from when the group became Empty
        if group.protocol_type == "consumer" and group.state is STABLE \
                and group.subscribed_topics() is not None:
            return "commit"  # topics no member subscribes to any more
        return None

    def expire(self, group_id: str, group: GroupForOffsets | None, now: int
               ) -> tuple[list[Record], bool]:
        """Tombstones for expired offsets of a group and whether the group, now without
        offsets, is to be removed too (only an Empty one)."""
        offsets = self.by_group.get(group_id)
        if group is None:
            return [], False
        if not offsets:
            return [], group.state is EMPTY
        base = self._expiry_base(group)
        if base is None:
            return [], False
        records: list[Record] = []
        all_expired = True
        for (topic, partition), c in offsets.items():
            if _is_subscribed(group, topic):
                all_expired = False
                continue
            if c.expire_timestamp >= 0:
                expired = now >= c.expire_timestamp
            else:
                since = c.commit_timestamp if base == "commit" else group.current_state_timestamp
                expired = now - since >= self.retention_ms
            if expired:
                records.append((co.OffsetCommitKey(group_id, topic, partition), None))
            else:
                all_expired = False
        return records, all_expired and group.state is EMPTY
