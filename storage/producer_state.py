"""Idempotent and transactional producers: per-partition producer state, snapshots and
producer id allocation.

Per partition, Kafka keeps for each producer id its epoch and the metadata of its last
five batches; a retry of one of those is answered with the offsets it first got, a gap
in the sequence is OUT_OF_ORDER_SEQUENCE_NUMBER and an older epoch INVALID_PRODUCER_EPOCH
(``ProducerAppendInfo.checkSequence`` / ``checkProducerEpoch``). For transactions it also
keeps the first offset of each producer's ongoing transaction (the earliest of them is
the partition's first unstable offset, which bounds the last stable offset) and the
coordinator epoch of the last marker, which fences a zombie coordinator.

Producer ids are handed out in blocks whose upper bound is written to
``<data_dir>/producer-ids.json`` before any id of the block is used, so ids never repeat
across restarts (as Kafka's ProducerIdManager does with the controller).
"""

from __future__ import annotations

import enum
import json
import os
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kafkalite.protocol.crc import crc32c
from kafkalite.protocol.records import NO_PRODUCER_EPOCH, NO_SEQUENCE, increment_sequence

from .errors import (
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from .fsutil import atomic_write

MAX_CACHED_BATCHES = 5
NO_OFFSET = -1


class AppendOrigin(enum.Enum):
    """Who writes a batch, which decides the checks it gets (Kafka's ``AppendOrigin``)."""

    #: A producer's Produce request: every check, sequences included.
    CLIENT = "client"
    #: A coordinator's own records (transactional offset commits): epochs, no sequences.
    COORDINATOR = "coordinator"


#: Enum members are slow to look up on the class; the hot paths compare with these.
CLIENT = AppendOrigin.CLIENT
COORDINATOR = AppendOrigin.COORDINATOR


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
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    #: First offset of the producer's ongoing transaction on this partition, or -1.
    txn_first_offset: int = NO_OFFSET

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def set_epoch(self, epoch: int) -> None:
        """A new epoch forgets the batches of the old one (``maybeUpdateProducerEpoch``)."""
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == increment_sequence(last_seq, 1)


class ProducerStateTable:
    """Per partition: the sequence state of every producer writing to it and the
    transactions in progress (Kafka's ``ProducerStateManager``)."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        #: Producer id -> first offset of its ongoing transaction, in first-offset order
        #: (transactions begin at the log end, so insertion order is offset order).
        self.ongoing: dict[int, int] = {}

    # --- queries ------------------------------------------------------------------------

    def has_ongoing_transaction(self, pid: int) -> bool:
        return pid in self.ongoing

    def lso_after(self, completed: CompletedTxn) -> int:
        """The last stable offset once ``completed`` is: the next other producer's open
        transaction, else just past the marker (``ProducerStateManager.lastStableOffset``)."""
        for pid, first in self.ongoing.items():
            if pid != completed.producer_id:
                return first
        return completed.last_offset + 1

    # --- data batches -------------------------------------------------------------------

    def check(self, pid: int, epoch: int, first_seq: int, last_seq: int,
              transactional: bool = False, origin: AppendOrigin = AppendOrigin.CLIENT,
              verify: Callable[[], bool] | None = None) -> None:
        """Raise if the batch may not be appended (a duplicate raises with its offsets).

        Kafka's order: a retry of one of the last five batches first; then, for a
        transactional batch that would open a transaction, ``verify`` (the coordinator
        knows the partition is in the transaction); then the epoch
        (INVALID_PRODUCER_EPOCH), the sequence (OUT_OF_ORDER_SEQUENCE_NUMBER; a new epoch
        starts at 0) and a plain batch inside an open transaction (INVALID_TXN_STATE).
        """
        entry = self.producers.get(pid)
        client = origin is CLIENT
        if entry is not None and client and epoch == entry.epoch:
            for b in entry.batches:
                if b.first_seq == first_seq and b.last_seq == last_seq:
                    raise DuplicateSequenceError(b.base_offset, b.last_offset)
        if (verify is not None and transactional and pid not in self.ongoing
                and not verify()):
            raise InvalidTxnStateError("Record was not part of an ongoing transaction")
        if entry is None:
            return  # unknown producer (new, or its batches were deleted): any sequence
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {pid} epoch {epoch} is older than the current epoch {entry.epoch}"
            )
        if client:
            if epoch != entry.epoch:
                if first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                    raise OutOfOrderSequenceError(
                        f"invalid sequence {first_seq} for new epoch {epoch} of producer {pid}"
                    )
            elif not (entry.epoch == NO_PRODUCER_EPOCH
                      or _in_sequence(entry.last_seq, first_seq)):
                raise OutOfOrderSequenceError(
                    f"out of order sequence for producer {pid} at epoch {epoch}: "
                    f"{first_seq} (incoming) after {entry.last_seq}"
                )
        if entry.txn_first_offset >= 0 and not transactional:
            raise InvalidTxnStateError(
                f"expected a transactional write from producer {pid}, which has a "
                f"transaction open since offset {entry.txn_first_offset}"
            )

    def update(self, pid: int, epoch: int, first_seq: int, last_seq: int, base: int,
               last: int, timestamp: int = -1, transactional: bool = False) -> None:
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(epoch)
        entry.set_epoch(epoch)
        entry.batches.append(BatchMeta(first_seq, last_seq, base, last))
        entry.last_timestamp = timestamp
        if transactional and entry.txn_first_offset < 0:
            entry.txn_first_offset = base
            self.ongoing[pid] = base

    # --- transaction markers ------------------------------------------------------------

    def check_marker(self, pid: int, epoch: int, coordinator_epoch: int,
                     transaction_version: int = 0) -> None:
        """Raise if the coordinator may not end the producer's transaction with this
        marker (``ProducerAppendInfo.appendEndTxnMarker``'s checks). A transaction.version
        2 coordinator bumps the epoch before every marker, so such a marker must carry a
        newer epoch, except a retry of one already written (same epoch, no transaction
        open here)."""
        entry = self.producers.get(pid)
        if entry is None:
            return
        if transaction_version >= 2:
            stale = epoch < entry.epoch or (epoch == entry.epoch and pid in self.ongoing)
        else:
            stale = epoch < entry.epoch
        if stale:
            raise InvalidProducerEpochError(
                f"marker for producer {pid} has epoch {epoch}, not newer than {entry.epoch} "
                f"(transaction version {transaction_version})")
        if entry.coordinator_epoch > coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"marker for producer {pid} has coordinator epoch {coordinator_epoch}, "
                f"older than {entry.coordinator_epoch}")

    def apply_marker(self, pid: int, epoch: int, coordinator_epoch: int, commit: bool,
                     offset: int, timestamp: int) -> CompletedTxn | None:
        """Record a marker written at ``offset``; the transaction it ended, if it had data
        here (a marker of an empty transaction changes no offsets). The caller indexes an
        aborted one and then calls ``complete``."""
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(epoch)
        done = None
        if entry.txn_first_offset >= 0:
            done = CompletedTxn(pid, entry.txn_first_offset, offset, not commit)
        entry.set_epoch(epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        entry.txn_first_offset = NO_OFFSET
        return done

    def remove_expired(self, now: int, expiration_ms: int) -> int:
        """Forget producers idle for ``producer.id.expiration.ms`` with no transaction open
        here (Kafka's ``removeExpiredProducers``); how many went."""
        expired = [pid for pid, e in self.producers.items()
                   if e.txn_first_offset < 0 and now - e.last_timestamp >= expiration_ms]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    def complete(self, completed: CompletedTxn) -> None:
        self.ongoing.pop(completed.producer_id, None)

    def clear(self) -> None:
        self.producers.clear()
        self.ongoing.clear()

    def load_entries(self, entries: dict[int, ProducerEntry]) -> None:
        self.producers = entries
        txns = sorted((e.txn_first_offset, pid) for pid, e in entries.items()
                      if e.txn_first_offset >= 0)
        self.ongoing = {pid: first for first, pid in txns}


# Kafka's producer snapshot (``<offset>.snapshot``, version 1): int16 version, uint32
# CRC-32C of the rest, int32 entry count, then per producer: id int64, epoch int16, last
# sequence int32, last offset int64, offset delta int32, timestamp int64, coordinator
# epoch int32, current transaction first offset int64 (-1: none). A producer whose last
# write was a marker has no batch: last sequence and last offset -1, delta 0.
SNAPSHOT_VERSION = 1
_SNAP_HEAD = struct.Struct(">hIi")
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")


def encode_snapshot(table: ProducerStateTable) -> bytes:
    entries = []
    for pid, e in sorted(table.producers.items()):
        b = e.batches[-1] if e.batches else None
        entries.append(_SNAP_ENTRY.pack(
            pid, e.epoch, b.last_seq if b else NO_SEQUENCE, b.last_offset if b else NO_OFFSET,
            b.last_offset - b.base_offset if b else 0, e.last_timestamp, e.coordinator_epoch,
            e.txn_first_offset))
    body = struct.pack(">i", len(entries)) + b"".join(entries)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(body)) + body


def decode_snapshot(data: bytes) -> ProducerStateTable:
    """Raise ValueError when the file is not a whole, valid snapshot."""
    if len(data) < _SNAP_HEAD.size:
        raise ValueError("snapshot too short")
    version, crc, count = _SNAP_HEAD.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION or crc32c(memoryview(data)[6:]) != crc:
        raise ValueError("snapshot version or CRC mismatch")
    if count < 0 or len(data) != _SNAP_HEAD.size + count * _SNAP_ENTRY.size:
        raise ValueError("snapshot length mismatch")
    entries: dict[int, ProducerEntry] = {}
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, ts, coord, txn = _SNAP_ENTRY.unpack_from(
            data, _SNAP_HEAD.size + i * _SNAP_ENTRY.size)
        e = entries[pid] = ProducerEntry(epoch, coordinator_epoch=coord, last_timestamp=ts,
                                         txn_first_offset=txn if txn >= 0 else NO_OFFSET)
        if last_offset >= 0:
            first_seq = increment_sequence(last_seq, -delta) if last_seq >= 0 else NO_SEQUENCE
            e.batches.append(BatchMeta(first_seq, last_seq, last_offset - delta, last_offset))
    table = ProducerStateTable()
    table.load_entries(entries)
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
