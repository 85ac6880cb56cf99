"""The ``__consumer_offsets`` records of KIP-932 share groups, in Kafka 4.4's binary format.

Written by hand from Kafka's ``group-coordinator`` messages (``ShareGroup*Key`` and
``ShareGroup*Value``), in the layout of ``consumer_group_records``: a key is its int16
record type followed by its fields in the non-flexible encoding; a value is its int16
version (always 0) followed by its fields in the flexible encoding.

Record types: 10 member metadata, 11 group metadata (epoch and subscribed topics' hash),
12 target assignment epoch, 13 target assignment of a member, 14 current assignment of a
member, 15 share-partition state metadata (the topics whose share-partition state is
being initialized, is initialized, or is being deleted in ``__share_group_state``).

Pure: no imports from the coordinator or broker.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import ClassVar

from .consumer_group_records import TopicIdPartitions
from .errors import ProtocolError
from .group_record_keys import GroupKeyCodec
from .schema_io import Reader, Writer

SHARE_GROUP_MEMBER_METADATA = 10
SHARE_GROUP_METADATA = 11
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
SHARE_GROUP_STATE_PARTITION_METADATA = 15

VALUE_VERSION = 0


# --- keys ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataKey:
    record_type: ClassVar[int] = SHARE_GROUP_MEMBER_METADATA
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataKey:
    record_type: ClassVar[int] = SHARE_GROUP_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataKey:
    record_type: ClassVar[int] = SHARE_GROUP_TARGET_ASSIGNMENT_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberKey:
    record_type: ClassVar[int] = SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentKey:
    record_type: ClassVar[int] = SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataKey:
    record_type: ClassVar[int] = SHARE_GROUP_STATE_PARTITION_METADATA
    group: str


ShareGroupKey = (
    ShareGroupMemberMetadataKey
    | ShareGroupMetadataKey
    | ShareGroupTargetAssignmentMetadataKey
    | ShareGroupTargetAssignmentMemberKey
    | ShareGroupCurrentMemberAssignmentKey
    | ShareGroupStatePartitionMetadataKey
)

KEY_CLASSES = (
    ShareGroupMemberMetadataKey,
    ShareGroupMetadataKey,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupStatePartitionMetadataKey,
)

KEY_TYPES = frozenset(k.record_type for k in KEY_CLASSES)

MEMBER_KEY_CLASSES = (
    ShareGroupMemberMetadataKey,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupCurrentMemberAssignmentKey,
)

_KEYS: GroupKeyCodec[ShareGroupKey] = GroupKeyCodec("share group", KEY_CLASSES, MEMBER_KEY_CLASSES)


def encode_key(key: ShareGroupKey) -> bytes:
    return _KEYS.encode(key)


def decode_key_fields(record_type: int, r: Reader) -> ShareGroupKey:
    """The key of ``record_type`` (one of :data:`KEY_TYPES`), read after its type."""
    return _KEYS.decode_fields(record_type, r)


# --- values -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadataValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ShareGroupMetadataValue:
    epoch: int
    #: The hash of the subscribed topics' metadata (a plain field here, unlike consumer
    #: groups' tagged one).
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    #: Tagged field 0: when the assignment was computed, -1 when unknown.
    assignment_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicIdPartitions, ...]


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    #: Kafka's ``MemberState`` byte (share group members are always 0, stable).
    state: int
    assigned_partitions: tuple[TopicIdPartitions, ...]


@dataclass(frozen=True, slots=True)
class TopicPartitionsInfo:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicIdAndName:
    topic_id: uuid.UUID
    topic_name: str


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadataValue:
    initializing_topics: tuple[TopicPartitionsInfo, ...]
    initialized_topics: tuple[TopicPartitionsInfo, ...]
    deleting_topics: tuple[TopicIdAndName, ...]


ShareGroupValue = (
    ShareGroupMemberMetadataValue
    | ShareGroupMetadataValue
    | ShareGroupTargetAssignmentMetadataValue
    | ShareGroupTargetAssignmentMemberValue
    | ShareGroupCurrentMemberAssignmentValue
    | ShareGroupStatePartitionMetadataValue
)

VALUE_CLASSES = (
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataValue,
    ShareGroupTargetAssignmentMetadataValue,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupStatePartitionMetadataValue,
)


def _write_tps(w: Writer, tps: tuple[TopicIdPartitions, ...]) -> None:
    w.array_len(len(tps))
    for tp in tps:
        w.uuid(tp.topic_id)
        w.array_len(len(tp.partitions))
        for p in tp.partitions:
            w.i32(p)
        w.tags()


def _read_tps(r: Reader) -> tuple[TopicIdPartitions, ...]:
    out: list[TopicIdPartitions] = []
    for _ in range(r.array_len()):
        topic_id = r.uuid()
        parts = tuple(r.i32() for _ in range(r.array_len()))
        r.tags()
        out.append(TopicIdPartitions(topic_id, parts))
    return tuple(out)


def _write_infos(w: Writer, infos: tuple[TopicPartitionsInfo, ...]) -> None:
    w.array_len(len(infos))
    for t in infos:
        w.uuid(t.topic_id)
        w.string(t.topic_name)
        w.array_len(len(t.partitions))
        for p in t.partitions:
            w.i32(p)
        w.tags()


def _read_infos(r: Reader) -> tuple[TopicPartitionsInfo, ...]:
    out: list[TopicPartitionsInfo] = []
    for _ in range(r.array_len()):
        topic_id = r.uuid()
        name = r.req_string()
        parts = tuple(r.i32() for _ in range(r.array_len()))
        r.tags()
        out.append(TopicPartitionsInfo(topic_id, name, parts))
    return tuple(out)


def encode_value(value: ShareGroupValue) -> bytes:
    w = Writer(flexible=True)
    w.i16(VALUE_VERSION)
    tags: list[tuple[int, bytes]] = []
    if isinstance(value, ShareGroupMemberMetadataValue):
        w.string(value.rack_id)
        w.string(value.client_id)
        w.string(value.client_host)
        w.array_len(len(value.subscribed_topic_names))
        for name in value.subscribed_topic_names:
            w.string(name)
    elif isinstance(value, ShareGroupMetadataValue):
        w.i32(value.epoch)
        w.i64(value.metadata_hash)
    elif isinstance(value, ShareGroupTargetAssignmentMetadataValue):
        w.i32(value.assignment_epoch)
        # A tagged field goes out only when it differs from its default, as Kafka writes.
        if value.assignment_timestamp != -1:
            tags.append((0, value.assignment_timestamp.to_bytes(8, "big", signed=True)))
    elif isinstance(value, ShareGroupTargetAssignmentMemberValue):
        _write_tps(w, value.topic_partitions)
    elif isinstance(value, ShareGroupCurrentMemberAssignmentValue):
        w.i32(value.member_epoch)
        w.i32(value.previous_member_epoch)
        w.i8(value.state)
        _write_tps(w, value.assigned_partitions)
    else:
        _write_infos(w, value.initializing_topics)
        _write_infos(w, value.initialized_topics)
        w.array_len(len(value.deleting_topics))
        for t in value.deleting_topics:
            w.uuid(t.topic_id)
            w.string(t.topic_name)
            w.tags()
    w.tags(tags)
    return bytes(w.buf)


def decode_value(key: ShareGroupKey, data: bytes) -> ShareGroupValue:
    """The value belonging to ``key`` (not a tombstone: the caller handles None)."""
    r = Reader(data)
    version = r.i16()
    if version != VALUE_VERSION:
        raise ProtocolError(f"unknown value version {version} of record type {key.record_type}")
    r.flexible = True
    out: ShareGroupValue
    if isinstance(key, ShareGroupMemberMetadataKey):
        rack = r.string()
        client_id = r.req_string()
        client_host = r.req_string()
        names = tuple(r.req_string() for _ in range(r.array_len()))
        out = ShareGroupMemberMetadataValue(rack, client_id, client_host, names)
    elif isinstance(key, ShareGroupMetadataKey):
        out = ShareGroupMetadataValue(r.i32(), r.i64())
    elif isinstance(key, ShareGroupTargetAssignmentMetadataKey):
        epoch = r.i32()
        tagged = r.tagged()
        stamp = -1
        if 0 in tagged:
            if len(tagged[0]) != 8:
                raise ProtocolError("bad int64 tagged field")
            stamp = int.from_bytes(tagged[0], "big", signed=True)
        return ShareGroupTargetAssignmentMetadataValue(epoch, stamp)
    elif isinstance(key, ShareGroupTargetAssignmentMemberKey):
        out = ShareGroupTargetAssignmentMemberValue(_read_tps(r))
    elif isinstance(key, ShareGroupCurrentMemberAssignmentKey):
        epoch = r.i32()
        previous = r.i32()
        state = r.i8()
        out = ShareGroupCurrentMemberAssignmentValue(epoch, previous, state, _read_tps(r))
    else:
        initializing = _read_infos(r)
        initialized = _read_infos(r)
        deleting: list[TopicIdAndName] = []
        for _ in range(r.array_len()):
            topic_id = r.uuid()
            name = r.req_string()
            r.tags()
            deleting.append(TopicIdAndName(topic_id, name))
        out = ShareGroupStatePartitionMetadataValue(initializing, initialized, tuple(deleting))
    r.tags()
    return out
