"""The ``__consumer_offsets`` records of KIP-1071 streams groups, in Kafka 4.4's binary
format (its ``group-coordinator`` messages ``StreamsGroup*Key`` and ``StreamsGroup*Value``),
in the layout of ``share_group_records``: a key is its int16 record type followed by its
fields in the non-flexible encoding; a value is its int16 version (always 0) followed by
its fields in the flexible encoding.

Record types: 17 group metadata (epoch, topics' hash; tagged: the validated topology
epoch), 19 member metadata, 20 target assignment epoch, 21 target assignment of a member,
22 current assignment of a member, 23 topology. (18 was a partition metadata record that
Kafka no longer writes.) The current assignment's active TaskIds carry their assignment
epochs in tagged field 0. Tagged fields kafkalite does not use are skipped on reading.

Pure: no imports from the coordinator or broker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .errors import ProtocolError
from .group_record_keys import GroupKeyCodec
from .schema_io import Reader, Writer

STREAMS_GROUP_METADATA = 17
STREAMS_GROUP_MEMBER_METADATA = 19
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = 20
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = 21
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = 22
STREAMS_GROUP_TOPOLOGY = 23

VALUE_VERSION = 0

#: Tasks as the records list them: (subtopology id, partitions).
TaskIds = tuple[tuple[str, tuple[int, ...]], ...]


# --- keys ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StreamsGroupMetadataKey:
    record_type: ClassVar[int] = STREAMS_GROUP_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class StreamsGroupMemberMetadataKey:
    record_type: ClassVar[int] = STREAMS_GROUP_MEMBER_METADATA
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMetadataKey:
    record_type: ClassVar[int] = STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA
    group: str


@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMemberKey:
    record_type: ClassVar[int] = STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class StreamsGroupCurrentMemberAssignmentKey:
    record_type: ClassVar[int] = STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT
    group: str
    member_id: str


@dataclass(frozen=True, slots=True)
class StreamsGroupTopologyKey:
    record_type: ClassVar[int] = STREAMS_GROUP_TOPOLOGY
    group: str


StreamsGroupKey = (
    StreamsGroupMetadataKey
    | StreamsGroupMemberMetadataKey
    | StreamsGroupTargetAssignmentMetadataKey
    | StreamsGroupTargetAssignmentMemberKey
    | StreamsGroupCurrentMemberAssignmentKey
    | StreamsGroupTopologyKey
)

KEY_CLASSES = (
    StreamsGroupMetadataKey,
    StreamsGroupMemberMetadataKey,
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupTopologyKey,
)

KEY_TYPES = frozenset(k.record_type for k in KEY_CLASSES)

MEMBER_KEY_CLASSES = (
    StreamsGroupMemberMetadataKey,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupCurrentMemberAssignmentKey,
)

_KEYS: GroupKeyCodec[StreamsGroupKey] = GroupKeyCodec("streams group", KEY_CLASSES,
                                                      MEMBER_KEY_CLASSES)


def encode_key(key: StreamsGroupKey) -> bytes:
    return _KEYS.encode(key)


def decode_key_fields(record_type: int, r: Reader) -> StreamsGroupKey:
    """The key of ``record_type`` (one of :data:`KEY_TYPES`), read after its type."""
    return _KEYS.decode_fields(record_type, r)


# --- values -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StreamsGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0
    #: Tagged field 0: the topology epoch whose topics were found valid, -1 none.
    validated_topology_epoch: int = -1


@dataclass(frozen=True, slots=True)
class StreamsGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    topology_epoch: int
    process_id: str
    user_endpoint: tuple[str, int] | None
    client_tags: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    #: Tagged field 0: when the assignment was computed (0: not written).
    assignment_timestamp: int = 0


@dataclass(frozen=True, slots=True)
class StreamsGroupTargetAssignmentMemberValue:
    active_tasks: TaskIds
    standby_tasks: TaskIds = ()
    warmup_tasks: TaskIds = ()


@dataclass(frozen=True, slots=True)
class StreamsGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    #: Kafka's streams ``MemberState`` byte: 1 stable, 2 unrevoked, 3 unreleased tasks.
    state: int
    active_tasks: TaskIds
    standby_tasks: TaskIds = ()
    warmup_tasks: TaskIds = ()
    active_tasks_pending_revocation: TaskIds = ()
    standby_tasks_pending_revocation: TaskIds = ()
    warmup_tasks_pending_revocation: TaskIds = ()
    #: Tagged field 0 of the active TaskIds: each partition's assignment epoch, in the
    #: order of ``active_tasks`` (subtopology id -> epochs); None: not written.
    active_epochs: TaskIds | None = None
    active_pending_epochs: TaskIds | None = None


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: int
    replication_factor: int
    topic_configs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    source_topics: tuple[int, ...]
    source_topic_regex: tuple[int, ...]
    repartition_source_topics: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    source_topic_regex: tuple[str, ...]
    state_changelog_topics: tuple[TopicInfo, ...]
    repartition_sink_topics: tuple[str, ...]
    repartition_source_topics: tuple[TopicInfo, ...]
    copartition_groups: tuple[CopartitionGroup, ...]


@dataclass(frozen=True, slots=True)
class StreamsGroupTopologyValue:
    epoch: int
    subtopologies: tuple[Subtopology, ...]


StreamsGroupValue = (
    StreamsGroupMetadataValue
    | StreamsGroupMemberMetadataValue
    | StreamsGroupTargetAssignmentMetadataValue
    | StreamsGroupTargetAssignmentMemberValue
    | StreamsGroupCurrentMemberAssignmentValue
    | StreamsGroupTopologyValue
)

VALUE_CLASSES = (
    StreamsGroupMetadataValue,
    StreamsGroupMemberMetadataValue,
    StreamsGroupTargetAssignmentMetadataValue,
    StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupTopologyValue,
)


def _write_tasks(w: Writer, tasks: TaskIds, epochs: TaskIds | None = None) -> None:
    """TaskIds; with ``epochs`` (aligned by subtopology), their AssignmentEpochs tag."""
    by_sub = dict(epochs or ())
    w.array_len(len(tasks))
    for sub, parts in tasks:
        w.string(sub)
        w.array_len(len(parts))
        for p in parts:
            w.i32(p)
        if epochs is None:
            w.tags()
            continue
        tag = Writer(flexible=True)
        es = by_sub.get(sub, ())
        tag.array_len(len(es))
        for e in es:
            tag.i32(e)
        w.tags([(0, bytes(tag.buf))])


def _read_tasks(r: Reader, epochs: list[tuple[str, tuple[int, ...]]] | None = None
                ) -> TaskIds:
    """TaskIds; their AssignmentEpochs tags, when present, appended to ``epochs``."""
    out = []
    for _ in range(r.array_len()):
        sub = r.req_string()
        parts = tuple(r.i32() for _ in range(r.array_len()))
        tagged = r.tagged()
        if epochs is not None and 0 in tagged:
            t = Reader(tagged[0])
            t.flexible = True
            n = t.uvarint() - 1
            epochs.append((sub, tuple(t.i32() for _ in range(max(n, 0)))))
        out.append((sub, parts))
    return tuple(out)


def _write_strings(w: Writer, items: tuple[str, ...]) -> None:
    w.array_len(len(items))
    for s in items:
        w.string(s)


def _read_strings(r: Reader) -> tuple[str, ...]:
    return tuple(r.req_string() for _ in range(r.array_len()))


def _write_pairs(w: Writer, pairs: tuple[tuple[str, str], ...]) -> None:
    w.array_len(len(pairs))
    for k, v in pairs:
        w.string(k)
        w.string(v)
        w.tags()


def _read_pairs(r: Reader) -> tuple[tuple[str, str], ...]:
    out = []
    for _ in range(r.array_len()):
        k, v = r.req_string(), r.req_string()
        r.tags()
        out.append((k, v))
    return tuple(out)


def _write_infos(w: Writer, infos: tuple[TopicInfo, ...]) -> None:
    w.array_len(len(infos))
    for t in infos:
        w.string(t.name)
        w.i32(t.partitions)
        w.i16(t.replication_factor)
        _write_pairs(w, t.topic_configs)
        w.tags()


def _read_infos(r: Reader) -> tuple[TopicInfo, ...]:
    out = []
    for _ in range(r.array_len()):
        name, partitions, rf = r.req_string(), r.i32(), r.i16()
        configs = _read_pairs(r)
        r.tags()
        out.append(TopicInfo(name, partitions, rf, configs))
    return tuple(out)


def _write_i16s(w: Writer, items: tuple[int, ...]) -> None:
    w.array_len(len(items))
    for i in items:
        w.i16(i)


def _read_i16s(r: Reader) -> tuple[int, ...]:
    return tuple(r.i16() for _ in range(r.array_len()))


def encode_value(value: StreamsGroupValue) -> bytes:
    w = Writer(flexible=True)
    w.i16(VALUE_VERSION)
    tags: list[tuple[int, bytes]] = []
    if isinstance(value, StreamsGroupMetadataValue):
        w.i32(value.epoch)
        w.i64(value.metadata_hash)
        # A tagged field goes out only when it differs from its default, as Kafka writes.
        if value.validated_topology_epoch != -1:
            tags.append((0, value.validated_topology_epoch.to_bytes(4, "big", signed=True)))
    elif isinstance(value, StreamsGroupMemberMetadataValue):
        w.string(value.instance_id)
        w.string(value.rack_id)
        w.string(value.client_id)
        w.string(value.client_host)
        w.i32(value.rebalance_timeout_ms)
        w.i32(value.topology_epoch)
        w.string(value.process_id)
        if value.user_endpoint is None:
            w.i8(-1)
        else:
            w.i8(1)
            w.string(value.user_endpoint[0])
            w.buf += value.user_endpoint[1].to_bytes(2, "big")
            w.tags()
        _write_pairs(w, value.client_tags)
    elif isinstance(value, StreamsGroupTargetAssignmentMetadataValue):
        w.i32(value.assignment_epoch)
        if value.assignment_timestamp != 0:
            tags.append((0, value.assignment_timestamp.to_bytes(8, "big", signed=True)))
    elif isinstance(value, StreamsGroupTargetAssignmentMemberValue):
        _write_tasks(w, value.active_tasks)
        _write_tasks(w, value.standby_tasks)
        _write_tasks(w, value.warmup_tasks)
    elif isinstance(value, StreamsGroupCurrentMemberAssignmentValue):
        w.i32(value.member_epoch)
        w.i32(value.previous_member_epoch)
        w.i8(value.state)
        _write_tasks(w, value.active_tasks, value.active_epochs)
        _write_tasks(w, value.standby_tasks)
        _write_tasks(w, value.warmup_tasks)
        _write_tasks(w, value.active_tasks_pending_revocation, value.active_pending_epochs)
        _write_tasks(w, value.standby_tasks_pending_revocation)
        _write_tasks(w, value.warmup_tasks_pending_revocation)
    else:
        w.i32(value.epoch)
        w.array_len(len(value.subtopologies))
        for s in value.subtopologies:
            w.string(s.subtopology_id)
            _write_strings(w, s.source_topics)
            _write_strings(w, s.source_topic_regex)
            _write_infos(w, s.state_changelog_topics)
            _write_strings(w, s.repartition_sink_topics)
            _write_infos(w, s.repartition_source_topics)
            w.array_len(len(s.copartition_groups))
            for c in s.copartition_groups:
                _write_i16s(w, c.source_topics)
                _write_i16s(w, c.source_topic_regex)
                _write_i16s(w, c.repartition_source_topics)
                w.tags()
            w.tags()
    w.tags(tags)
    return bytes(w.buf)


def decode_value(key: StreamsGroupKey, data: bytes) -> StreamsGroupValue:
    """The value belonging to ``key`` (not a tombstone: the caller handles None)."""
    r = Reader(data)
    version = r.i16()
    if version != VALUE_VERSION:
        raise ProtocolError(f"unknown value version {version} of record type {key.record_type}")
    r.flexible = True
    out: StreamsGroupValue
    if isinstance(key, StreamsGroupMetadataKey):
        epoch, metadata_hash = r.i32(), r.i64()
        tagged = r.tagged()
        validated = -1
        if 0 in tagged:
            if len(tagged[0]) != 4:
                raise ProtocolError("bad int32 tagged field")
            validated = int.from_bytes(tagged[0], "big", signed=True)
        return StreamsGroupMetadataValue(epoch, metadata_hash, validated)
    if isinstance(key, StreamsGroupTargetAssignmentMetadataKey):
        epoch = r.i32()
        tagged = r.tagged()
        stamp = 0
        if 0 in tagged:
            if len(tagged[0]) != 8:
                raise ProtocolError("bad int64 tagged field")
            stamp = int.from_bytes(tagged[0], "big", signed=True)
        return StreamsGroupTargetAssignmentMetadataValue(epoch, stamp)
    if isinstance(key, StreamsGroupMemberMetadataKey):
        instance_id, rack_id = r.string(), r.string()
        client_id, client_host = r.req_string(), r.req_string()
        rebalance_timeout, topology_epoch = r.i32(), r.i32()
        process_id = r.req_string()
        endpoint = None
        if r.i8() >= 0:
            host = r.req_string()
            port = r.i16() & 0xFFFF
            r.tags()
            endpoint = (host, port)
        out = StreamsGroupMemberMetadataValue(instance_id, rack_id, client_id, client_host,
                                              rebalance_timeout, topology_epoch, process_id,
                                              endpoint, _read_pairs(r))
    elif isinstance(key, StreamsGroupTargetAssignmentMemberKey):
        out = StreamsGroupTargetAssignmentMemberValue(_read_tasks(r), _read_tasks(r),
                                                      _read_tasks(r))
    elif isinstance(key, StreamsGroupCurrentMemberAssignmentKey):
        epoch, previous, state = r.i32(), r.i32(), r.i8()
        active_epochs: list[tuple[str, tuple[int, ...]]] = []
        pending_epochs: list[tuple[str, tuple[int, ...]]] = []
        active = _read_tasks(r, active_epochs)
        standby, warmup = _read_tasks(r), _read_tasks(r)
        pending = _read_tasks(r, pending_epochs)
        out = StreamsGroupCurrentMemberAssignmentValue(
            epoch, previous, state, active, standby, warmup, pending, _read_tasks(r),
            _read_tasks(r), tuple(active_epochs) or None, tuple(pending_epochs) or None)
    else:
        epoch = r.i32()
        subs = []
        for _ in range(r.array_len()):
            sid = r.req_string()
            sources, regex = _read_strings(r), _read_strings(r)
            changelogs = _read_infos(r)
            sinks = _read_strings(r)
            repartition = _read_infos(r)
            groups = []
            for _ in range(r.array_len()):
                groups.append(CopartitionGroup(_read_i16s(r), _read_i16s(r), _read_i16s(r)))
                r.tags()
            r.tags()
            subs.append(Subtopology(sid, sources, regex, changelogs, sinks, repartition,
                                    tuple(groups)))
        out = StreamsGroupTopologyValue(epoch, tuple(subs))
    r.tags()
    return out
