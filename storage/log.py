"""PartitionLog: one topic partition's segments, appends, reads, retention and recovery.

The append path touches only the 61-byte batch header: magic, lengths and CRC-32C are
checked, the assigned base offset and the partition leader epoch replace the first header
bytes (``records.assigned_parts``; the CRC covers neither), and the batch goes to the file
as it came (compressed batches stay compressed). Only LogAppendTime topics copy a batch,
to stamp the time and re-compute the CRC (``records.set_log_append_time``). Producer
state is kept per batch with a producer id.

The log holds two parts, each with its own state: ``txn`` (``log_txn.LogTransactions``:
producer state, snapshots, the last stable offset, markers, aborted transactions) and
``deletion`` (``log_deletion.LogDeletion``: DeleteRecords and retention). The log itself
keeps the segments, the offsets, the leader epochs and the flush state, and does every
write and read of the files.
"""

from __future__ import annotations

import bisect
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import structlog

from kafkalite.protocol.control import end_txn_marker_batch
from kafkalite.protocol.records import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    ATTRIBUTES,
    BASE_OFFSET,
    BASE_SEQUENCE,
    BATCH_HEADER,
    HEADER_SIZE,
    LAST_OFFSET_DELTA,
    MAX_TIMESTAMP,
    NO_SEQUENCE,
    PARTITION_LEADER_EPOCH,
    PRODUCER_EPOCH,
    PRODUCER_ID,
    assigned_parts,
    increment_sequence,
    set_log_append_time,
)
from kafkalite.timekeeping.clock import wall_ms

from . import log_load, log_search
from .errors import (
    CorruptRecordError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from .index import MAX_RELATIVE_OFFSET
from .leader_epoch import LeaderEpochCache
from .log_config import NEVER, LogConfig, Replicator
from .log_deletion import LogDeletion
from .log_txn import LogTransactions
from .producer_state import CLIENT, AppendOrigin
from .segment import Segment
from .txn_index import AbortedTxn
from .validation import check_batch, check_size, validate_client_batch

log = structlog.get_logger("kafkalite.storage")

class PartitionLog:
    def __init__(
        self, directory: Path, topic: str, partition: int, config: LogConfig,
        log_start_offset: int = 0, clock: Callable[[], int] = wall_ms, lead: bool = True,
        epoch_floor: int = 0,
    ) -> None:
        """``epoch_floor``: the least leader epoch to lead in once loaded (the epoch already
        announced for a log opened after the broker started)."""
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.clock = clock
        self.segments: list[Segment] = []
        self._bases: list[int] = []
        self.log_start_offset = log_start_offset
        self.log_end_offset = 0
        #: Producer state, snapshots, markers and aborted transactions.
        self.txn = LogTransactions(directory)
        #: DeleteRecords and retention: what may leave the front of the log.
        self.deletion = LogDeletion(self)
        #: Called with the bytes appended, after each append (the fetch purgatory listens).
        self.watchers: set[Callable[[int], None]] = set()
        self.unflushed_messages = 0
        self.last_flush_ms = clock()
        self.closed = False
        #: Leader epochs and where each began; the last is the partition's current one.
        self.epochs = LeaderEpochCache(directory)
        self.leader_epoch = 0
        #: The high watermark while the partition has followers (None: the log end, as
        #: with one replica); the replica set moves it as the in-sync replicas catch up.
        self.hw: int | None = None
        #: Called after each append, before the watchers, when the partition has
        #: followers (it fills them and moves ``hw``); None keeps the append path as is.
        self.replicator: Replicator | None = None
        #: False for a follower's replica: it takes the epochs of the batches it copies.
        self.lead = lead
        self._epoch_floor = epoch_floor
        #: Called with the topic when the log leads in a new epoch (kept answers forget it).
        self.on_new_epoch: Callable[[str], None] | None = None
        directory.mkdir(parents=True, exist_ok=True)
        self._load()

    # --- load and recovery (log_load.py) ------------------------------------------------

    def _load(self) -> None:
        log_load.load(self)

    def become_leader(self, epoch: int, save: bool = True) -> bool:
        """Lead the partition in ``epoch`` from the log end on (Kafka's
        ``maybeAssignEpochStartOffset``); True if the cache changed."""
        if epoch < self.leader_epoch:
            raise ValueError(f"leader epoch {epoch} is older than {self.leader_epoch}")
        self.leader_epoch = epoch
        if self.on_new_epoch is not None:
            self.on_new_epoch(self.topic)
        changed = self.epochs.assign(epoch, self.log_end_offset)
        if changed and save:
            self.epochs.save()
            log.info("log.leader_epoch", topic=self.topic, partition=self.partition,
                     epoch=epoch, start_offset=self.log_end_offset)
        return changed

    # --- properties ---------------------------------------------------------------------

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    @property
    def high_watermark(self) -> int:
        hw = self.hw
        return self.log_end_offset if hw is None else hw

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def last_stable_offset(self) -> int:
        lso = self.txn.last_stable_offset(self.log_start_offset, self.log_end_offset)
        hw = self.hw
        return lso if hw is None or hw >= lso else hw

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        return self.txn.has_ongoing_transaction(producer_id)

    # --- append -------------------------------------------------------------------------

    def append(self, batch: bytes | bytearray | memoryview, from_client: bool = False,
               origin: AppendOrigin = CLIENT,
               txn_verified: Callable[[int, int], bool] | None = None) -> tuple[int, int]:
        """Validate and append one or more whole batches; return (base, last offset).

        ``from_client``: a Produce request's records, checked as Kafka's LogValidator
        checks a client's (one batch, no control batch, its records against the topic's
        rules, maybe re-compressed) before anything is written. ``origin`` decides the
        producer checks: sequences for a producer's batches (CLIENT), epochs only for a
        coordinator's (COORDINATOR: transactional offset commits, or a marker batch).
        ``txn_verified(producer_id, epoch)``, when given, is asked before a transactional
        batch opens a transaction here, and False refuses it with InvalidTxnStateError
        (Kafka's transaction verification, KIP-890).
        """
        if len(batch) < HEADER_SIZE:
            raise CorruptRecordError("record set shorter than a batch header")
        n = len(batch)
        view = memoryview(batch)
        # Validate every batch before writing any, so a bad record set leaves no trace.
        batches: list[memoryview | bytes] = []
        max_bytes = self.config.max_message_bytes
        pos = 0
        while pos < n:
            size = check_batch(view, pos, max_bytes)
            batches.append(view[pos : pos + size])
            pos += size
        if from_client:
            if len(batches) > 1:
                raise InvalidRecordError("Compressed outer record has more than one batch")
            batches[0] = self._validate_client(view[:n])
        first = last = -1
        for one in batches:
            b, last = self._append_one(memoryview(one), origin, txn_verified)
            if first < 0:
                first = b
        return first, last

    def append_built(self, batch: bytes) -> tuple[int, int]:
        """Append one batch without a producer that this process encoded itself (a
        coordinator's records): of ``append``'s checks only the size limit applies."""
        check_size(len(batch), self.config.max_message_bytes)
        return self._write(memoryview(batch), BATCH_HEADER.unpack_from(batch, 0), True)

    def _validate_client(self, batch: memoryview) -> memoryview | bytes:
        out = validate_client_batch(batch, f"{self.topic}-{self.partition}", self.config.rules,
                                    self.clock())
        if out is not batch and len(out) > self.config.max_message_bytes:
            raise RecordTooLargeError(
                f"Message batch size is {len(out)} bytes in append to partition "
                f"{self.topic}-{self.partition} which exceeds the maximum configured size of "
                f"{self.config.max_message_bytes}.")
        return out

    def _append_one(self, batch: memoryview, origin: AppendOrigin,
                    txn_verified: Callable[[int, int], bool] | None) -> tuple[int, int]:
        h = BATCH_HEADER.unpack_from(batch, 0)
        pid = h[PRODUCER_ID]
        if pid < 0:  # no producer state: one call does it all (the hot path)
            return self._write(batch, h, True)
        if h[ATTRIBUTES] & ATTR_CONTROL:  # a coordinator's marker (clients' are refused)
            return self._append_marker(batch, h)
        epoch, first_seq = h[PRODUCER_EPOCH], h[BASE_SEQUENCE]
        transactional = bool(h[ATTRIBUTES] & ATTR_TRANSACTIONAL)
        last_seq = (increment_sequence(first_seq, h[LAST_OFFSET_DELTA]) if first_seq >= 0
                    else NO_SEQUENCE)
        verify = None if txn_verified is None else (lambda: txn_verified(pid, epoch))
        producers = self.txn.producers
        # May raise a duplicate (with the offsets it got), or an epoch, sequence or
        # transaction state error.
        producers.check(pid, epoch, first_seq, last_seq, transactional, origin, verify)
        base, last = self._write(batch, h)
        producers.update(pid, epoch, first_seq, last_seq, base, last, h[MAX_TIMESTAMP],
                              transactional)
        self._appended(h[LAST_OFFSET_DELTA] + 1, len(batch))
        return base, last

    def append_control_marker(self, producer_id: int, producer_epoch: int,
                              coordinator_epoch: int, commit: bool,
                              transaction_version: int = 0) -> int:
        """Write the COMMIT or ABORT marker ending ``producer_id``'s transaction here, as
        Kafka's WriteTxnMarkers does; return its offset.

        The marker completes the producer's open transaction (if it wrote data here),
        which moves the last stable offset; an ABORT adds the transaction to the active
        segment's aborted-transaction index. Raises InvalidProducerEpochError for an
        epoch older than the producer's and TransactionCoordinatorFencedError for a
        coordinator epoch older than the last marker's; nothing is written then.
        """
        batch = end_txn_marker_batch(producer_id, producer_epoch, coordinator_epoch, commit,
                                     self.clock())
        return self._append_marker(memoryview(batch), BATCH_HEADER.unpack_from(batch, 0),
                                   transaction_version)[0]

    def _append_marker(self, batch: memoryview, h: tuple[int, ...],
                       transaction_version: int = 0) -> tuple[int, int]:
        marker = self.txn.check_marker(batch, h, transaction_version)
        offset, last = self._write(batch, h)
        self.txn.marker_written(marker, h, offset, self.segments[-1])
        self._appended(1, len(batch))
        return offset, last

    def _write(self, batch: memoryview, h: tuple[int, ...], done: bool = False
               ) -> tuple[int, int]:
        """Put one validated batch at the log end; return its (base, last) offsets. With
        ``done`` also what ``_appended`` does (flush, watchers): no state to update first."""
        size = len(batch)
        base = self.log_end_offset
        last = base + h[LAST_OFFSET_DELTA]
        seg = self.segments[-1]  # the active segment (the property costs a call per append)
        max_ts = h[MAX_TIMESTAMP]
        if self._should_roll(seg, size, last, max_ts):
            seg = self.roll()
        if self.config.log_append_time:
            max_ts = self.clock()
            stamped = bytearray(batch)
            set_log_append_time(stamped, 0, max_ts)
            batch = memoryview(stamped)
        parts = assigned_parts(batch, base, self.leader_epoch)
        seg.append_parts(parts, size, base, last, max_ts, self.config.index_interval_bytes)
        self.log_end_offset = last + 1
        if done:
            self.unflushed_messages += last - base + 1
            if self.unflushed_messages >= self.config.flush_messages:
                self.flush()
            if self.replicator is not None:
                self.replicator()
            if self.watchers:
                for w in list(self.watchers):
                    w(size)
        return base, last

    def _appended(self, records: int, size: int) -> None:
        self.unflushed_messages += records
        if self.unflushed_messages >= self.config.flush_messages:
            self.flush()
        if self.replicator is not None:
            self.replicator()
        for w in list(self.watchers):
            w(size)

    def _should_roll(self, seg: Segment, size: int, last: int, max_ts: int) -> bool:
        if seg.size == 0:
            return False
        cfg = self.config
        if seg.size + size > cfg.segment_bytes:
            return True
        if last - seg.base_offset > MAX_RELATIVE_OFFSET:
            return True
        # From the segment's creation, not its first timestamp (Kafka's choice rolls on
        # every batch when producers send old timestamps).
        return self.clock() - seg.created_ms > cfg.segment_ms

    def roll(self) -> Segment:
        """Close the active segment and start a new one at the log end offset."""
        old = self.active
        if old.size == 0:
            return old
        old.index.write_pending()
        old.time_index.maybe_append(old.max_timestamp, old.offset_of_max_timestamp)
        old.time_index.write_pending()
        seg = Segment(self.dir, self.log_end_offset, self.clock())
        self.segments.append(seg)
        self._bases.append(seg.base_offset)
        self.txn.snapshot(seg.base_offset)
        log.info("log.segment_rolled", topic=self.topic, partition=self.partition,
                 base_offset=seg.base_offset)
        return seg

    def flush(self) -> None:
        """fsync the log (every segment written since the last flush) and its indexes."""
        for seg in self.segments[-2:]:
            seg.flush()
        self.unflushed_messages = 0
        self.last_flush_ms = self.clock()

    def sync_handles(self) -> list[int]:
        """Duplicated descriptors of the segments written since the last flush, for an
        fsync off the event loop (they stay valid if a segment is closed meanwhile)."""
        self.unflushed_messages = 0
        self.last_flush_ms = self.clock()
        # Only a segment written since its last fsync (a released one is reopened).
        fds = [os.dup(seg.fd) for seg in self.segments[-2:] if seg.dirty and not seg.closed]
        if self.txn.aborted_txns:
            fds += [fd for seg in self.segments[-2:]
                    if (fd := seg.txn_index.sync_handle()) is not None]
        return fds

    def append_as_follower(self, data: bytes | memoryview) -> None:
        """Copy a leader's batches as they are (offsets, leader epochs, producers), as
        Kafka's ``appendAsFollower``: the producer state and the epoch cache follow them,
        so this replica can lead from where they end."""
        view = memoryview(data)
        pos, n = 0, len(view)
        while pos < n:
            size = check_batch(view, pos, NEVER)
            batch = view[pos : pos + size]
            pos += size
            h = BATCH_HEADER.unpack_from(batch, 0)
            base, last = h[BASE_OFFSET], h[BASE_OFFSET] + h[LAST_OFFSET_DELTA]
            if last < self.log_end_offset:
                continue
            if base < self.log_end_offset:
                self.truncate_to(base)
            # A compacted leader leaves gaps; the copy keeps its offsets.
            self.log_end_offset = base
            epoch = h[PARTITION_LEADER_EPOCH]
            if epoch >= 0:
                self.leader_epoch = max(self.leader_epoch, epoch)
                if self.epochs.assign(epoch, base):
                    self.epochs.save()
            pid = h[PRODUCER_ID]
            if pid < 0:
                self._write(batch, h, True)
            elif h[ATTRIBUTES] & ATTR_CONTROL:
                self._append_marker(batch, h)
            else:
                first_seq = h[BASE_SEQUENCE]
                last_seq = (increment_sequence(first_seq, h[LAST_OFFSET_DELTA])
                            if first_seq >= 0 else NO_SEQUENCE)
                b, lst = self._write(batch, h)
                self.txn.producers.update(pid, h[PRODUCER_EPOCH], first_seq, last_seq, b, lst,
                                          h[MAX_TIMESTAMP],
                                          bool(h[ATTRIBUTES] & ATTR_TRANSACTIONAL))
                self._appended(h[LAST_OFFSET_DELTA] + 1, size)

    # --- reads --------------------------------------------------------------------------

    def _segment_index(self, offset: int) -> int:
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None) -> bytes:
        """Whole batches from the one holding ``offset``; the first even if > max_bytes.

        With ``max_offset`` (a read_committed fetch passes the last stable offset) the
        read stops before the batch holding it. Raises OffsetOutOfRangeError outside
        [log start offset, log end offset].
        """
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} not in [{self.log_start_offset}, {self.log_end_offset}]"
            )
        if offset == self.log_end_offset:
            return b""
        if max_offset is not None and max_offset < self.log_end_offset:
            return self._read_below(offset, max_bytes, max_offset)
        i = self._segment_index(offset)
        while i < len(self.segments):
            seg = self.segments[i]
            found = seg.find_position(offset)
            if found is not None:
                return seg.read_from(found[0], found[1], max_bytes)
            i += 1
        return b""

    def _read_below(self, offset: int, max_bytes: int, max_offset: int) -> bytes:
        """``read`` up to the batch holding ``max_offset`` (exclusive)."""
        if offset >= max_offset:
            return b""
        last_segment = self._segment_index(max_offset)
        found = self.segments[last_segment].find_position(max_offset)
        cut = found[0] if found is not None else None
        i = self._segment_index(offset)
        while i <= last_segment:
            seg = self.segments[i]
            found = seg.find_position(offset)
            if found is not None:
                if i < last_segment or cut is None:
                    return seg.read_from(found[0], found[1], max_bytes)
                if found[0] >= cut:
                    return b""
                return seg.read_from(found[0], found[1], max_bytes, cut)
            i += 1
        return b""

    def aborted_transactions(self, offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [offset, upper_bound): what a
        read_committed fetch of that range returns."""
        if not self.txn.aborted_txns:
            return []
        return self.txn.aborted_transactions(
            self.segments[self._segment_index(offset):], offset, upper_bound)

    def iter_batches(self, start_offset: int = 0) -> Iterator[bytes]:
        """Every batch from the one holding ``start_offset`` to the end, read from disk."""
        start = max(start_offset, self.log_start_offset)
        for seg in list(self.segments[self._segment_index(start):]):
            if seg.closed:
                continue
            found = seg.find_position(start)
            if found is None:
                continue
            for _pos, batch in seg.iter_batches(found[0]):
                yield batch

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= ``timestamp``."""
        return log_search.offset_for_timestamp(self.segments, self.log_start_offset, timestamp)

    def max_timestamp(self) -> tuple[int, int]:
        """(offset, timestamp) of the first record with the largest timestamp, or (-1, -1)."""
        return log_search.max_timestamp(self.segments, self.log_start_offset, self.read)

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or after ``offset`` (whole batches; the one holding it too)
        and rebuild the producer state and the active segment's index for what is left."""
        if offset >= self.log_end_offset:
            return
        while len(self.segments) > 1 and self.active.base_offset >= offset:
            seg = self.segments.pop()
            self._bases.pop()
            seg.delete()
        seg = self.active
        found = seg.find_position(offset)
        if found is not None:
            seg.truncate_to_position(found[0])
        _valid, headers = seg.scan(False, self.config.index_interval_bytes)
        seg.index.write_pending()
        seg.time_index.write_pending()
        self.log_end_offset = seg.next_offset
        self.log_start_offset = min(self.log_start_offset, self.log_end_offset)
        self.txn.drop_snapshots_after(self.log_end_offset)
        self.txn.restore(self.segments, headers)
        # The leader keeps its epoch; it begins again at the new log end if it was cut.
        if self.epochs.truncate_from_end(self.log_end_offset):
            self.epochs.assign(self.leader_epoch, self.log_end_offset)
            self.epochs.save()

    # --- the front of the log (``deletion`` decides, these remove) -------------------------

    def move_start(self, offset: int) -> None:
        """Move the log start offset up to ``offset`` (at most the high watermark) and
        delete the segments wholly below it."""
        self.log_start_offset = offset
        while len(self.segments) > 1 and self.segments[1].base_offset <= offset:
            self.remove_oldest_segment("log_start_offset")
        self._start_moved()

    def remove_oldest_segment(self, reason: str) -> None:
        seg = self.segments.pop(0)
        self._bases.pop(0)
        seg.delete()
        self.txn.segment_deleted(seg)
        if self.log_start_offset < self.segments[0].base_offset:
            self.log_start_offset = self.segments[0].base_offset
            self._start_moved()
        log.info("log.segment_deleted", topic=self.topic, partition=self.partition,
                 base_offset=seg.base_offset, reason=reason,
                 log_start_offset=self.log_start_offset)

    def _start_moved(self) -> None:
        if self.epochs.truncate_from_start(self.log_start_offset):
            self.epochs.save()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for seg in self.segments:
            seg.close()

    def delete(self) -> None:
        """Remove the partition's directory (the topic was deleted)."""
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        return (f"PartitionLog({self.topic}-{self.partition}, start={self.log_start_offset}, "
                f"end={self.log_end_offset}, segments={len(self.segments)})")

