"""The records of ``__share_group_state`` (KIP-932), in Kafka 4.4's binary format.

Written by hand from Kafka's ``share-coordinator`` messages: record type 0 is a snapshot
of one share-partition's state (``ShareSnapshotKey``/``ShareSnapshotValue``), type 1 an
update to it since the last snapshot (``ShareUpdateKey``/``ShareUpdateValue``). Both keys
are the share-partition (group id, topic id, partition) after the int16 record type, in
the non-flexible encoding; a value is its int16 version (0) and its fields in the flexible
encoding. A state batch's delivery state is 0 available, 2 acknowledged, 4 archived.

Pure: no imports from the coordinator or broker.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from .errors import ProtocolError
from .schema_io import Reader, Writer

SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
VALUE_VERSION = 0

#: The delivery states a state batch is persisted with.
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    """The key of either record type: which share-partition the record is about."""

    record_type: int
    group: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatch, ...]
    #: Tagged field 0: offsets at or past the start offset whose delivery is complete;
    #: -1 when not known.
    delivery_complete_count: int = -1


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    snapshot_epoch: int
    leader_epoch: int
    #: -1 when the start offset is not being updated.
    start_offset: int
    state_batches: tuple[StateBatch, ...]
    delivery_complete_count: int = -1


ShareStateValue = ShareSnapshotValue | ShareUpdateValue


def encode_key(key: ShareStateKey) -> bytes:
    if key.record_type not in (SHARE_SNAPSHOT, SHARE_UPDATE):
        raise ProtocolError(f"not a share state record type: {key.record_type}")
    w = Writer()
    w.i16(key.record_type)
    w.string(key.group)
    w.uuid(key.topic_id)
    w.i32(key.partition)
    return bytes(w.buf)


def decode_key(data: bytes) -> ShareStateKey:
    r = Reader(data)
    record_type = r.i16()
    if record_type not in (SHARE_SNAPSHOT, SHARE_UPDATE):
        raise ProtocolError(f"unknown __share_group_state key type {record_type}")
    return ShareStateKey(record_type, r.req_string(), r.uuid(), r.i32())


def _write_batches(w: Writer, batches: tuple[StateBatch, ...]) -> None:
    w.array_len(len(batches))
    for b in batches:
        w.i64(b.first_offset)
        w.i64(b.last_offset)
        w.i8(b.delivery_state)
        w.i16(b.delivery_count)
        w.tags()


def _read_batches(r: Reader) -> tuple[StateBatch, ...]:
    out: list[StateBatch] = []
    for _ in range(r.array_len()):
        b = StateBatch(r.i64(), r.i64(), r.i8(), r.i16())
        r.tags()
        out.append(b)
    return tuple(out)


def _count_tag(count: int) -> list[tuple[int, bytes]]:
    # Written only when it differs from its default, as Kafka writes tagged fields.
    return [] if count == -1 else [(0, count.to_bytes(4, "big", signed=True))]


def encode_value(value: ShareStateValue) -> bytes:
    w = Writer(flexible=True)
    w.i16(VALUE_VERSION)
    if isinstance(value, ShareSnapshotValue):
        w.i32(value.snapshot_epoch)
        w.i32(value.state_epoch)
        w.i32(value.leader_epoch)
        w.i64(value.start_offset)
        w.i64(value.create_timestamp)
        w.i64(value.write_timestamp)
    else:
        w.i32(value.snapshot_epoch)
        w.i32(value.leader_epoch)
        w.i64(value.start_offset)
    _write_batches(w, value.state_batches)
    w.tags(_count_tag(value.delivery_complete_count))
    return bytes(w.buf)


def _read_count(tagged: dict[int, bytes]) -> int:
    if 0 not in tagged:
        return -1
    if len(tagged[0]) != 4:
        raise ProtocolError("bad int32 tagged field")
    return int.from_bytes(tagged[0], "big", signed=True)


def decode_value(key: ShareStateKey, data: bytes) -> ShareStateValue:
    """The value belonging to ``key`` (not a tombstone: the caller handles None)."""
    r = Reader(data)
    version = r.i16()
    if version != VALUE_VERSION:
        raise ProtocolError(f"unknown value version {version} of record type {key.record_type}")
    r.flexible = True
    if key.record_type == SHARE_SNAPSHOT:
        snapshot_epoch, state_epoch, leader_epoch = r.i32(), r.i32(), r.i32()
        start, created, written = r.i64(), r.i64(), r.i64()
        batches = _read_batches(r)
        return ShareSnapshotValue(snapshot_epoch, state_epoch, leader_epoch, start, created,
                                  written, batches, _read_count(r.tagged()))
    snapshot_epoch, leader_epoch, start = r.i32(), r.i32(), r.i64()
    batches = _read_batches(r)
    return ShareUpdateValue(snapshot_epoch, leader_epoch, start, batches,
                            _read_count(r.tagged()))
