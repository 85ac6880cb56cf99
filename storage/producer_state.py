"""Idempotent producers: sequence checks per partition and producer id allocation.

Per partition, Kafka keeps for each producer id its epoch and the metadata of its last
five batches; a retry of one of those is answered with the offsets it first got, a gap
in the sequence is OUT_OF_ORDER_SEQUENCE_NUMBER and an older epoch INVALID_PRODUCER_EPOCH
(``ProducerAppendInfo.checkSequence`` / ``checkProducerEpoch``).

Producer ids are handed out in blocks whose upper bound is written to
``<data_dir>/producer-ids.json`` before any id of the block is used, so ids never repeat
across restarts (as Kafka's ProducerIdManager does with the controller).
"""

from __future__ import annotations

import json
import os
import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

from kafkalite.protocol.records import NO_PRODUCER_EPOCH, NO_SEQUENCE, increment_sequence

from .errors import DuplicateSequenceError, InvalidProducerEpochError, OutOfOrderSequenceError
from .fsutil import atomic_write

MAX_CACHED_BATCHES = 5


@dataclass(slots=True)
class BatchMeta:
    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMeta] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == increment_sequence(last_seq, 1)


class ProducerStateTable:
    """Sequence state of every idempotent producer writing to one partition."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, pid: int, epoch: int, first_seq: int, last_seq: int) -> None:
        """Raise if the batch may not be appended (a duplicate raises with its offsets)."""
        entry = self.producers.get(pid)
        if entry is None:
            return  # unknown producer (new, or its batches were deleted): any sequence
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {pid} epoch {epoch} is older than the current epoch {entry.epoch}"
            )
        if epoch == entry.epoch:
            for b in entry.batches:
                if b.first_seq == first_seq and b.last_seq == last_seq:
                    raise DuplicateSequenceError(b.base_offset, b.last_offset)
        if epoch != entry.epoch:
            if first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"invalid sequence {first_seq} for new epoch {epoch} of producer {pid}"
                )
        elif not _in_sequence(entry.last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"out of order sequence for producer {pid} at epoch {epoch}: "
                f"{first_seq} (incoming) after {entry.last_seq}"
            )

    def update(self, pid: int, epoch: int, first_seq: int, last_seq: int, base: int,
               last: int) -> None:
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(epoch)
        if epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.batches.append(BatchMeta(first_seq, last_seq, base, last))

    def clear(self) -> None:
        self.producers.clear()


# Kafka's producer snapshot (``<offset>.snapshot``, version 1): int16 version, uint32
# CRC-32C of the rest, int32 entry count, then per producer: id int64, epoch int16, last
# sequence int32, last offset int64, offset delta int32, timestamp int64, coordinator
# epoch int32, current transaction first offset int64.
SNAPSHOT_VERSION = 1
_SNAP_HEAD = struct.Struct(">hIi")
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")


def encode_snapshot(table: ProducerStateTable) -> bytes:
    entries = [
        _SNAP_ENTRY.pack(pid, e.epoch, b.last_seq, b.last_offset, b.last_offset - b.base_offset,
                         -1, -1, -1)
        for pid, e in sorted(table.producers.items())
        if e.batches
        for b in (e.batches[-1],)
    ]
    body = struct.pack(">i", len(entries)) + b"".join(entries)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c.crc32c(body)) + body


def decode_snapshot(data: bytes) -> ProducerStateTable:
    """Raise ValueError when the file is not a whole, valid snapshot."""
    if len(data) < _SNAP_HEAD.size:
        raise ValueError("snapshot too short")
    version, crc, count = _SNAP_HEAD.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION or crc32c.crc32c(memoryview(data)[6:]) != crc:
        raise ValueError("snapshot version or CRC mismatch")
    if len(data) != _SNAP_HEAD.size + count * _SNAP_ENTRY.size:
        raise ValueError("snapshot length mismatch")
    table = ProducerStateTable()
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, _ts, _ce, _txn = _SNAP_ENTRY.unpack_from(
            data, _SNAP_HEAD.size + i * _SNAP_ENTRY.size)
        first_seq = increment_sequence(last_seq, -delta)
        table.update(pid, epoch, first_seq, last_seq, last_offset - delta, last_offset)
    return table


def write_snapshot(path: Path, table: ProducerStateTable) -> None:
    """Not fsynced: a torn snapshot fails its CRC on load and is ignored."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(encode_snapshot(table))
    os.replace(tmp, path)


class ProducerIdAllocator:
    BLOCK = 1000

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "producer-ids.json"
        self._next = 0
        self._limit = 0
        if self.path.exists():
            self._next = self._limit = int(json.loads(self.path.read_text())["next_block_start"])

    def allocate(self) -> int:
        if self._next >= self._limit:
            self._limit = self._next + self.BLOCK
            atomic_write(self.path, json.dumps({"next_block_start": self._limit}).encode())
        pid = self._next
        self._next += 1
        return pid
