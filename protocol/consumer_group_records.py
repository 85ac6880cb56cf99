"""The ``__consumer_offsets`` records of KIP-848 consumer groups, in Kafka's binary format.

Written by hand from Kafka's ``group-coordinator`` message JSON (``ConsumerGroup*Key`` and
``ConsumerGroup*Value``): a key starts with an int16 that is the record type (Kafka's
``apiKey``, formerly the key version), followed by the key's fields in the non-flexible
encoding; a value starts with its int16 version (always 0) followed by its fields in the
flexible encoding (compact strings and arrays, uuids as 16 bytes, a tagged-field section
at the end of every struct).

Record types: 3 group epoch, 4 subscription (partition) metadata, 5 member subscription,
6 target assignment epoch, 7 target assignment of a member, 8 current assignment of a
member, 16 resolved regular expression. Types 10-15 (share groups) are in
``share_group_records``; 17+ (streams groups) stay unknown to this broker.

Kafka 4.1 (KIP-1101) stopped writing type 4 and keeps a hash of the subscribed topics in
the group epoch record instead (tagged field 0, ``MetadataHash``); both are read here,
and what Kafka 4.0 writes is written: type 4 records and no hash.

Pure: no imports from the coordinator or broker.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import ClassVar

from .errors import ProtocolError
from .schema_io import Reader, Writer

CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_PARTITION_METADATA = 4
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
CONSUMER_GROUP_REGULAR_EXPRESSION = 16

VALUE_VERSION = 0


# --- keys ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_PARTITION_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_MEMBER_METADATA
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionKey:
    record_type: ClassVar[int] = CONSUMER_GROUP_REGULAR_EXPRESSION
    group: str
    regular_expression: str


ConsumerGroupKey = (
    ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
    | ConsumerGroupRegularExpressionKey
)

#: For ``isinstance`` checks against any consumer-group key.
KEY_CLASSES = (
    ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupRegularExpressionKey,
)

KEY_TYPES = frozenset(k.record_type for k in KEY_CLASSES)

#: The keys of per-member records.
MEMBER_KEY_CLASSES = (
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupCurrentMemberAssignmentKey,
)


def encode_key(key: ConsumerGroupKey) -> bytes:
    w = Writer()
    w.i16(key.record_type)
    w.string(key.group)
    if isinstance(key, ConsumerGroupRegularExpressionKey):
        w.string(key.regular_expression)
    elif isinstance(key, MEMBER_KEY_CLASSES):
        w.string(key.member_id)
    return bytes(w.buf)


def decode_key_fields(record_type: int, r: Reader) -> ConsumerGroupKey:
    """The key of ``record_type`` (one of :data:`KEY_TYPES`), read after its type."""
    group = r.req_string()
    if record_type == CONSUMER_GROUP_METADATA:
        return ConsumerGroupMetadataKey(group)
    if record_type == CONSUMER_GROUP_PARTITION_METADATA:
        return ConsumerGroupPartitionMetadataKey(group)
    if record_type == CONSUMER_GROUP_MEMBER_METADATA:
        return ConsumerGroupMemberMetadataKey(group, r.req_string())
    if record_type == CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
        return ConsumerGroupTargetAssignmentMetadataKey(group)
    if record_type == CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
        return ConsumerGroupTargetAssignmentMemberKey(group, r.req_string())
    if record_type == CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        return ConsumerGroupCurrentMemberAssignmentKey(group, r.req_string())
    if record_type == CONSUMER_GROUP_REGULAR_EXPRESSION:
        return ConsumerGroupRegularExpressionKey(group, r.req_string())
    raise ProtocolError(f"not a consumer group record type: {record_type}")


# --- values -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int
    #: Kafka 4.1+ (KIP-1101), tagged field 0: the hash of the subscribed topics' metadata.
    metadata_hash: int = 0
    #: Tagged field 1 (KIP-1282): when the group was created, -1 when unknown.
    creation_time_ms: int = -1


@dataclass(frozen=True, slots=True)
class PartitionRacks:
    partition: int
    racks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PartitionMetadataTopic:
    topic_id: uuid.UUID
    topic_name: str
    num_partitions: int
    #: Racks per partition: written by Kafka 3.7-3.9 only, empty since 4.0.
    partition_metadata: tuple[PartitionRacks, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[PartitionMetadataTopic, ...]


@dataclass(frozen=True, slots=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """Set for a member of a consumer group that speaks the classic protocol."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic_member_metadata: ClassicMemberMetadata | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class TopicIdPartitions:
    topic_id: uuid.UUID
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicIdPartitions, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    #: Kafka's ``MemberState`` byte: 0 stable, 1 unrevoked, 2 unreleased partitions.
    state: int
    assigned_partitions: tuple[TopicIdPartitions, ...]
    partitions_pending_revocation: tuple[TopicIdPartitions, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupRegularExpressionValue:
    topics: tuple[str, ...]
    #: The metadata version the expression was resolved against.
    version: int
    timestamp: int


ConsumerGroupValue = (
    ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
    | ConsumerGroupRegularExpressionValue
)

VALUE_CLASSES = (
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupRegularExpressionValue,
)


def _write_strings(w: Writer, items: tuple[str, ...]) -> None:
    w.array_len(len(items))
    for s in items:
        w.string(s)


def _read_strings(r: Reader) -> tuple[str, ...]:
    return tuple(r.req_string() for _ in range(r.array_len()))


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


def _int64(v: int) -> bytes:
    return v.to_bytes(8, "big", signed=True)


def _classic_bytes(c: ClassicMemberMetadata) -> bytes:
    w = Writer(flexible=True)
    w.i32(c.session_timeout_ms)
    w.array_len(len(c.supported_protocols))
    for p in c.supported_protocols:
        w.string(p.name)
        w.bytes_(p.metadata)
        w.tags()
    w.tags()
    return bytes(w.buf)


def _read_classic(data: bytes) -> ClassicMemberMetadata:
    r = Reader(data, flexible=True)
    session_timeout = r.i32()
    protocols: list[ClassicProtocol] = []
    for _ in range(r.array_len()):
        name = r.req_string()
        metadata = r.bytes_()
        if metadata is None:
            raise ProtocolError("null metadata in a classic protocol")
        r.tags()
        protocols.append(ClassicProtocol(name, metadata))
    r.tags()
    return ClassicMemberMetadata(session_timeout, tuple(protocols))


def encode_value(value: ConsumerGroupValue) -> bytes:
    w = Writer(flexible=True)
    w.i16(VALUE_VERSION)
    tags: list[tuple[int, bytes]] = []
    if isinstance(value, ConsumerGroupMetadataValue):
        w.i32(value.epoch)
        # Tagged fields go out only when they differ from their default, as Kafka writes.
        if value.metadata_hash != 0:
            tags.append((0, _int64(value.metadata_hash)))
        if value.creation_time_ms != -1:
            tags.append((1, _int64(value.creation_time_ms)))
    elif isinstance(value, ConsumerGroupPartitionMetadataValue):
        w.array_len(len(value.topics))
        for t in value.topics:
            w.uuid(t.topic_id)
            w.string(t.topic_name)
            w.i32(t.num_partitions)
            w.array_len(len(t.partition_metadata))
            for pm in t.partition_metadata:
                w.i32(pm.partition)
                _write_strings(w, pm.racks)
                w.tags()
            w.tags()
    elif isinstance(value, ConsumerGroupMemberMetadataValue):
        w.string(value.instance_id)
        w.string(value.rack_id)
        w.string(value.client_id)
        w.string(value.client_host)
        _write_strings(w, value.subscribed_topic_names)
        w.string(value.subscribed_topic_regex)
        w.i32(value.rebalance_timeout_ms)
        w.string(value.server_assignor)
        if value.classic_member_metadata is not None:
            tags.append((0, _classic_bytes(value.classic_member_metadata)))
    elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
        w.i32(value.assignment_epoch)
    elif isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
        _write_tps(w, value.topic_partitions)
    elif isinstance(value, ConsumerGroupCurrentMemberAssignmentValue):
        w.i32(value.member_epoch)
        w.i32(value.previous_member_epoch)
        w.i8(value.state)
        _write_tps(w, value.assigned_partitions)
        _write_tps(w, value.partitions_pending_revocation)
    else:
        _write_strings(w, value.topics)
        w.i64(value.version)
        w.i64(value.timestamp)
    w.tags(tags)
    return bytes(w.buf)


def _int64_tag(data: bytes) -> int:
    if len(data) != 8:
        raise ProtocolError("bad int64 tagged field")
    return int.from_bytes(data, "big", signed=True)


def decode_value(key: ConsumerGroupKey, data: bytes) -> ConsumerGroupValue:
    """The value belonging to ``key`` (not a tombstone: the caller handles None)."""
    r = Reader(data)
    version = r.i16()
    if version != VALUE_VERSION:
        raise ProtocolError(f"unknown value version {version} of record type {key.record_type}")
    r.flexible = True
    out: ConsumerGroupValue
    if isinstance(key, ConsumerGroupMetadataKey):
        epoch = r.i32()
        tagged = r.tagged()
        out = ConsumerGroupMetadataValue(
            epoch,
            _int64_tag(tagged[0]) if 0 in tagged else 0,
            _int64_tag(tagged[1]) if 1 in tagged else -1,
        )
        return out
    if isinstance(key, ConsumerGroupPartitionMetadataKey):
        topics: list[PartitionMetadataTopic] = []
        for _ in range(r.array_len()):
            topic_id = r.uuid()
            name = r.req_string()
            num_partitions = r.i32()
            racks: list[PartitionRacks] = []
            for _ in range(r.array_len()):
                partition = r.i32()
                racks.append(PartitionRacks(partition, _read_strings(r)))
                r.tags()
            r.tags()
            topics.append(PartitionMetadataTopic(topic_id, name, num_partitions, tuple(racks)))
        out = ConsumerGroupPartitionMetadataValue(tuple(topics))
    elif isinstance(key, ConsumerGroupMemberMetadataKey):
        instance_id = r.string()
        rack_id = r.string()
        client_id = r.req_string()
        client_host = r.req_string()
        names = _read_strings(r)
        regex = r.string()
        rebalance_timeout = r.i32()
        assignor = r.string()
        tagged = r.tagged()
        classic = _read_classic(tagged[0]) if 0 in tagged else None
        return ConsumerGroupMemberMetadataValue(
            instance_id, rack_id, client_id, client_host, names, regex, rebalance_timeout,
            assignor, classic)
    elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
        out = ConsumerGroupTargetAssignmentMetadataValue(r.i32())
    elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
        out = ConsumerGroupTargetAssignmentMemberValue(_read_tps(r))
    elif isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
        epoch = r.i32()
        previous = r.i32()
        state = r.i8()
        out = ConsumerGroupCurrentMemberAssignmentValue(
            epoch, previous, state, _read_tps(r), _read_tps(r))
    else:
        out = ConsumerGroupRegularExpressionValue(_read_strings(r), r.i64(), r.i64())
    r.tags()
    return out
