"""Record schemas of ``__consumer_offsets`` and of the consumer embedded protocol.

Written by hand (kio has neither) to match Kafka's ``group-coordinator`` message JSON
byte for byte: the key starts with an int16 version that is also the record type
(0/1 offset commit, 2 group metadata); the value starts with its own int16 version.
Values from version 4 on are flexible (compact strings, tagged fields).

Pure: no imports from the coordinator or broker.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias, overload

from .errors import ProtocolError
from .schema_io import Reader as _Reader
from .schema_io import Writer as _Writer

if TYPE_CHECKING:
    # KIP-848 consumer group and KIP-932 share group records are read and written only
    # where such groups are used: their modules are imported on the first record, not by
    # every broker at start-up.
    from . import consumer_group_records as cg
    from . import share_group_records as sg
    from . import streams_group_records as st

OFFSET_COMMIT_KEY_V0 = 0
OFFSET_COMMIT_KEY_V1 = 1
GROUP_METADATA_KEY = 2

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


# --- keys ---------------------------------------------------------------------------------


# Offset commit keys and values are made once per committed partition: plain slotted
# classes (a frozen dataclass costs four times as much to create). Treat them as values.
@dataclass(slots=True, unsafe_hash=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int
    version: int = OFFSET_COMMIT_KEY_V1


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


#: The classic records: offset commits and classic group metadata.
Key = OffsetCommitKey | GroupMetadataKey
#: Any record this broker knows, KIP-848 consumer group keys (types 3-8, 16) and KIP-932
#: share group keys (types 10-15) and KIP-1071 streams group keys (17, 19-23) included.
RecordKey: TypeAlias = "Key | cg.ConsumerGroupKey | sg.ShareGroupKey | st.StreamsGroupKey"


#: Encoded (version, group, topic) prefixes of offset commit keys: a commit repeats them.
_KEY_PREFIXES: dict[tuple[str, str], bytes] = {}


def offset_key_prefix(group: str, topic: str) -> bytes:
    """The encoded key of an offset commit of ``group`` on ``topic`` but its partition
    (append ``>i`` of the partition): a commit of many partitions shares it."""
    return _key_prefix(group, topic)


def _key_prefix(group: str, topic: str) -> bytes:
    prefix = _KEY_PREFIXES.get((group, topic))
    if prefix is None:
        if len(_KEY_PREFIXES) >= 4096:
            _KEY_PREFIXES.clear()
        w = _Writer()
        w.i16(OFFSET_COMMIT_KEY_V1)
        w.string(group)
        w.string(topic)
        prefix = _KEY_PREFIXES[(group, topic)] = bytes(w.buf)
    return prefix


def encode_key(key: RecordKey) -> bytes:
    if type(key) is OffsetCommitKey and key.version == OFFSET_COMMIT_KEY_V1:
        return _key_prefix(key.group, key.topic) + _I32.pack(key.partition)
    w = _Writer()
    if isinstance(key, GroupMetadataKey):
        w.i16(GROUP_METADATA_KEY)
        w.string(key.group)
    elif not isinstance(key, OffsetCommitKey):
        from . import consumer_group_records as cg

        if isinstance(key, cg.KEY_CLASSES):
            return cg.encode_key(key)
        from . import share_group_records as sg

        if isinstance(key, sg.KEY_CLASSES):
            return sg.encode_key(key)
        from . import streams_group_records as st

        return st.encode_key(key)
    else:
        w.i16(key.version)
        w.string(key.group)
        w.string(key.topic)
        w.i32(key.partition)
    return bytes(w.buf)


class UnknownRecordType(ProtocolError):
    """A key of a record type this broker does not know: skip it."""


@overload
def decode_key(data: bytes, consumer_groups: Literal[False] = False) -> Key: ...


@overload
def decode_key(data: bytes, consumer_groups: Literal[True]) -> RecordKey: ...


def decode_key(data: bytes, consumer_groups: bool = False) -> RecordKey:
    """The key of a record. KIP-848 consumer group and KIP-932 share group keys are decoded
    when ``consumer_groups`` is set and raise :class:`UnknownRecordType` otherwise, so
    readers that handle classic groups only skip them as before."""
    r = _Reader(data)
    version = r.i16()
    if version in (OFFSET_COMMIT_KEY_V0, OFFSET_COMMIT_KEY_V1):
        return OffsetCommitKey(r.req_string(), r.req_string(), r.i32(), version)
    if version == GROUP_METADATA_KEY:
        return GroupMetadataKey(r.req_string())
    if consumer_groups:
        from . import consumer_group_records as cg

        if version in cg.KEY_TYPES:
            return cg.decode_key_fields(version, r)
        from . import share_group_records as sg

        if version in sg.KEY_TYPES:
            return sg.decode_key_fields(version, r)
        from . import streams_group_records as st

        if version in st.KEY_TYPES:
            return st.decode_key_fields(version, r)
    raise UnknownRecordType(f"unknown __consumer_offsets key type {version}")


# --- offset commit value ------------------------------------------------------------------


@dataclass(slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str
    commit_timestamp: int
    leader_epoch: int = -1
    expire_timestamp: int = -1


def offset_value_version(value: OffsetCommitValue) -> int:
    """Kafka writes v1 when an explicit expire timestamp is set, v3 otherwise."""
    return 1 if value.expire_timestamp >= 0 else 3


_V3_HEAD = struct.Struct(">hqi")


def offset_value_bytes(offset: int, leader_epoch: int, metadata: str, commit_ts: bytes,
                       expire_timestamp: int) -> bytes:
    """``encode_offset_value`` of these fields, ``commit_ts`` already packed (``>q``):
    the commit path encodes each offset in the pass that makes it."""
    if expire_timestamp < 0 and not metadata:
        return _V3_HEAD.pack(3, offset, leader_epoch) + b"\x00\x00" + commit_ts
    (ts,) = _I64.unpack(commit_ts)
    return encode_offset_value(OffsetCommitValue(offset, metadata, ts, leader_epoch,
                                                 expire_timestamp))


def encode_offset_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    v = offset_value_version(value) if version is None else version
    if v == 3 and not value.metadata:  # the usual commit: one pack, no writer
        return (_V3_HEAD.pack(3, value.offset, value.leader_epoch) + b"\x00\x00"
                + _I64.pack(value.commit_timestamp))
    w = _Writer(flexible=v >= 4)
    w.i16(v)
    w.i64(value.offset)
    if v >= 3:
        w.i32(value.leader_epoch)
    w.string(value.metadata)
    w.i64(value.commit_timestamp)
    if v == 1:
        w.i64(value.expire_timestamp)
    w.tags()
    return bytes(w.buf)


def decode_offset_value(data: bytes) -> OffsetCommitValue:
    r = _Reader(data)
    v = r.i16()
    if v < 0 or v > 4:
        raise ProtocolError(f"unknown OffsetCommitValue version {v}")
    r.flexible = v >= 4
    offset = r.i64()
    leader_epoch = r.i32() if v >= 3 else -1
    metadata = r.string() or ""
    commit_ts = r.i64()
    expire_ts = r.i64() if v == 1 else -1
    r.tags()
    return OffsetCommitValue(offset, metadata, commit_ts, leader_epoch, expire_ts)


# --- group metadata value -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadata, ...] = ()


GROUP_VALUE_VERSION = 3


def encode_group_value(value: GroupMetadataValue, version: int = GROUP_VALUE_VERSION) -> bytes:
    v = version
    w = _Writer(flexible=v >= 4)
    w.i16(v)
    w.string(value.protocol_type)
    w.i32(value.generation)
    w.string(value.protocol)
    w.string(value.leader)
    if v >= 2:
        w.i64(value.current_state_timestamp)
    w.array_len(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        if v >= 3:
            w.string(m.group_instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        if v >= 1:
            w.i32(m.rebalance_timeout)
        w.i32(m.session_timeout)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
        w.tags()
    w.tags()
    return bytes(w.buf)


def decode_group_value(data: bytes) -> GroupMetadataValue:
    r = _Reader(data)
    v = r.i16()
    if v < 0 or v > 4:
        raise ProtocolError(f"unknown GroupMetadataValue version {v}")
    r.flexible = v >= 4
    protocol_type = r.string() or ""
    generation = r.i32()
    protocol = r.string()
    leader = r.string()
    ts = r.i64() if v >= 2 else -1
    members: list[MemberMetadata] = []
    for _ in range(r.array_len()):
        member_id = r.req_string()
        instance_id = r.string() if v >= 3 else None
        client_id = r.string() or ""
        client_host = r.string() or ""
        session_timeout_first = r.i32()
        if v >= 1:
            rebalance_timeout, session_timeout = session_timeout_first, r.i32()
        else:
            # v0 has no rebalance timeout: Kafka uses the session timeout for both.
            rebalance_timeout = session_timeout = session_timeout_first
        subscription = r.bytes_() or b""
        assignment = r.bytes_() or b""
        r.tags()
        members.append(MemberMetadata(member_id, client_id, client_host, rebalance_timeout,
                                      session_timeout, subscription, assignment, instance_id))
    r.tags()
    return GroupMetadataValue(protocol_type, generation, protocol, leader, ts, tuple(members))


Value = OffsetCommitValue | GroupMetadataValue
RecordValue: TypeAlias = ("Value | cg.ConsumerGroupValue | sg.ShareGroupValue"
                          " | st.StreamsGroupValue")


def encode_value(value: RecordValue | None) -> bytes | None:
    """Encode a value in the version Kafka writes; None stays None (a tombstone)."""
    if type(value) is OffsetCommitValue:
        if value.expire_timestamp < 0 and not value.metadata:  # the usual commit, inline
            return (_V3_HEAD.pack(3, value.offset, value.leader_epoch) + b"\x00\x00"
                    + _I64.pack(value.commit_timestamp))
        return encode_offset_value(value)
    if value is None:
        return None
    if isinstance(value, GroupMetadataValue):
        return encode_group_value(value)
    if isinstance(value, OffsetCommitValue):
        return encode_offset_value(value)
    from . import consumer_group_records as cg

    if isinstance(value, cg.VALUE_CLASSES):
        return cg.encode_value(value)
    from . import share_group_records as sg

    if isinstance(value, sg.VALUE_CLASSES):
        return sg.encode_value(value)
    from . import streams_group_records as st

    return st.encode_value(value)


@overload
def decode_value(key: Key, data: bytes | None) -> Value | None: ...


@overload
def decode_value(key: cg.ConsumerGroupKey, data: bytes | None) -> cg.ConsumerGroupValue | None: ...


@overload
def decode_value(key: RecordKey, data: bytes | None) -> RecordValue | None: ...


def decode_value(key: RecordKey, data: bytes | None) -> RecordValue | None:
    """Decode the value belonging to ``key``; None for a tombstone."""
    if data is None:
        return None
    if isinstance(key, OffsetCommitKey):
        return decode_offset_value(data)
    if isinstance(key, GroupMetadataKey):
        return decode_group_value(data)
    from . import consumer_group_records as cg

    if isinstance(key, cg.KEY_CLASSES):
        return cg.decode_value(key, data)
    from . import share_group_records as sg

    if isinstance(key, sg.KEY_CLASSES):
        return sg.decode_value(key, data)
    from . import streams_group_records as st

    return st.decode_value(key, data)


# --- group to partition -------------------------------------------------------------------


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def group_partition(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % n`` (``Utils.abs(MIN_VALUE)`` is 0)."""
    h = java_string_hash(group_id)
    a = 0 if h == -(1 << 31) else abs(h)
    return a % num_partitions


# --- consumer embedded protocol -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ConsumerProtocolSubscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartitions, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerProtocolAssignment:
    assigned_partitions: tuple[TopicPartitions, ...] = field(default_factory=tuple)
    user_data: bytes | None = None
    version: int = 0


def _read_topic_partitions(r: _Reader) -> tuple[TopicPartitions, ...]:
    out: list[TopicPartitions] = []
    for _ in range(r.array_len()):
        topic = r.req_string()
        parts = tuple(r.i32() for _ in range(r.array_len()))
        out.append(TopicPartitions(topic, parts))
    return tuple(out)


def _write_topic_partitions(w: _Writer, tps: tuple[TopicPartitions, ...]) -> None:
    w.array_len(len(tps))
    for tp in tps:
        w.string(tp.topic)
        w.array_len(len(tp.partitions))
        for p in tp.partitions:
            w.i32(p)


def decode_subscription(data: bytes) -> ConsumerProtocolSubscription:
    """Parse a consumer subscription. Versions above 3 read as 3 (Kafka's forward rule)."""
    r = _Reader(data)
    v = r.i16()
    if v < 0:
        raise ProtocolError(f"bad ConsumerProtocolSubscription version {v}")
    topics = tuple(r.req_string() for _ in range(r.array_len()))
    user_data = r.bytes_()
    owned: tuple[TopicPartitions, ...] = ()
    gen = -1
    rack: str | None = None
    if v >= 1 and r.remaining:
        owned = _read_topic_partitions(r)
    if v >= 2 and r.remaining:
        gen = r.i32()
    if v >= 3 and r.remaining:
        rack = r.string()
    return ConsumerProtocolSubscription(topics, user_data, owned, gen, rack, v)


def encode_subscription(sub: ConsumerProtocolSubscription) -> bytes:
    w = _Writer()
    v = sub.version
    w.i16(v)
    w.array_len(len(sub.topics))
    for t in sub.topics:
        w.string(t)
    w.bytes_(sub.user_data)
    if v >= 1:
        _write_topic_partitions(w, sub.owned_partitions)
    if v >= 2:
        w.i32(sub.generation_id)
    if v >= 3:
        w.string(sub.rack_id)
    return bytes(w.buf)


def decode_assignment(data: bytes) -> ConsumerProtocolAssignment:
    r = _Reader(data)
    v = r.i16()
    if v < 0:
        raise ProtocolError(f"bad ConsumerProtocolAssignment version {v}")
    parts = _read_topic_partitions(r)
    user_data = r.bytes_() if r.remaining else None
    return ConsumerProtocolAssignment(parts, user_data, v)


def encode_assignment(a: ConsumerProtocolAssignment) -> bytes:
    w = _Writer()
    w.i16(a.version)
    _write_topic_partitions(w, a.assigned_partitions)
    w.bytes_(a.user_data)
    return bytes(w.buf)
