"""The transactional side of a partition log (Kafka's ``UnifiedLog`` and ``LocalLog``
parts about transactions): the last stable offset, COMMIT/ABORT markers, reads bounded by
the LSO with the aborted transactions they overlap, and restoring producer state and the
aborted-transaction index on load. ``PartitionLog`` inherits it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalite.protocol.control import end_txn_marker_batch, read_end_txn_marker
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import BATCH_HEADER, MAX_TIMESTAMP, PRODUCER_EPOCH, PRODUCER_ID

from .errors import CorruptRecordError, InvalidRecordError
from .producer_recovery import load_snapshot, replay_headers, replay_segment
from .producer_state import ProducerStateTable
from .segment import Segment
from .txn_index import AbortedTxn, collect_aborted


class TransactionalLog:
    dir: Path
    segments: list[Segment]
    producers: ProducerStateTable
    #: Entries in the segments' aborted-transaction indexes (a read_committed fetch
    #: skips the search while there are none).
    aborted_txns: int
    log_start_offset: int
    log_end_offset: int
    clock: Callable[[], int]

    if TYPE_CHECKING:  # provided by PartitionLog
        @property
        def active(self) -> Segment: ...
        def _write(self, batch: memoryview, h: tuple[int, ...], done: bool = False
                   ) -> tuple[int, int]: ...
        def _appended(self, records: int, size: int) -> None: ...
        def _segment_index(self, offset: int) -> int: ...
        def _snapshot(self, offset: int) -> None: ...

    @property
    def last_stable_offset(self) -> int:
        """The first offset not yet decided: the first offset of the earliest ongoing
        transaction (never below the log start offset), else the high watermark."""
        ongoing = self.producers.ongoing
        if not ongoing:
            return self.log_end_offset
        first = next(iter(ongoing.values()))
        return min(max(first, self.log_start_offset), self.log_end_offset)

    def append_control_marker(self, producer_id: int, producer_epoch: int,
                              coordinator_epoch: int, commit: bool) -> int:
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
        return self._append_marker(memoryview(batch), BATCH_HEADER.unpack_from(batch, 0))[0]

    def _append_marker(self, batch: memoryview, h: tuple[int, ...]) -> tuple[int, int]:
        try:
            marker = read_end_txn_marker(batch)
        except ProtocolError as e:
            raise CorruptRecordError(f"unreadable control batch: {e}") from e
        if marker is None:
            raise InvalidRecordError("a control batch that is not a transaction marker")
        pid, epoch = h[PRODUCER_ID], h[PRODUCER_EPOCH]
        self.producers.check_marker(pid, epoch, marker.coordinator_epoch)
        offset, last = self._write(batch, h)
        done = self.producers.apply_marker(pid, epoch, marker.coordinator_epoch,
                                           marker.commit, offset, h[MAX_TIMESTAMP])
        if done is not None:
            if done.aborted:
                self.active.txn_index.append(AbortedTxn(
                    pid, done.first_offset, offset, self.producers.lso_after(done)))
                self.aborted_txns += 1
            self.producers.complete(done)
        self._appended(1, len(batch))
        return offset, last

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        return producer_id in self.producers.ongoing

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
        read_committed fetch of that range returns (``LocalLog.collectAbortedTransactions``)."""
        if not self.aborted_txns:
            return []
        i = self._segment_index(offset)
        return collect_aborted((s.txn_index for s in self.segments[i:]), offset, upper_bound)

    def _restore_producers(self, active_headers: list[tuple[int, ...]],
                           rebuild_all: bool = False) -> None:
        """Producer state and the active segment's aborted-transaction index, from the
        snapshot where the active segment begins and the batches after it; without one
        (or with ``rebuild_all``), from the start of the log, rebuilding every index."""
        active = self.active
        found = None if rebuild_all else load_snapshot(self.dir, active.base_offset)
        if found is None and len(self.segments) > 1:
            # Written before snapshots were kept for every roll, or lost in a crash.
            found = ProducerStateTable()
            for seg in self.segments[:-1]:
                if rebuild_all:
                    seg.txn_index.reset()
                replay_segment(found, seg, rebuild_all)
            self.producers = found
            self._snapshot(active.base_offset)
        self.producers = found if found is not None else ProducerStateTable()
        active.txn_index.reset()
        replay_headers(self.producers, active, active_headers, True)
        self.recount_aborted()

    def recount_aborted(self) -> None:
        self.aborted_txns = sum(len(seg.txn_index.entries) for seg in self.segments)
