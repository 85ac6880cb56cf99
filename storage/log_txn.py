"""The transactional side of a partition log (Kafka's ``ProducerStateManager`` and the
``UnifiedLog`` parts about transactions): the producer state table, the producer
snapshots, the last stable offset, COMMIT/ABORT markers, the aborted transactions a
read_committed read returns, and restoring producer state and the aborted-transaction
index on load.

``PartitionLog`` holds one ``LogTransactions`` and hands it what it needs (the segments,
the offsets, a marker's header); the log writes the bytes, this part keeps the state.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kafkalite.protocol.control import EndTxnMarker, read_end_txn_marker
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import MAX_TIMESTAMP, PRODUCER_EPOCH, PRODUCER_ID

from .errors import CorruptRecordError, InvalidRecordError
from .producer_recovery import load_snapshot, replay_headers, replay_segment, snapshot_offsets
from .producer_state import ProducerStateTable, write_snapshot
from .segment import Segment
from .txn_index import AbortedTxn, collect_aborted


class LogTransactions:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        #: Each producer's epoch, sequences and open transaction.
        self.producers = ProducerStateTable()
        #: Entries in the segments' aborted-transaction indexes (a read_committed fetch
        #: skips the search while there are none).
        self.aborted_txns = 0

    def last_stable_offset(self, log_start_offset: int, log_end_offset: int) -> int:
        """The first offset not yet decided: the first offset of the earliest ongoing
        transaction (never below the log start offset), else the log end offset."""
        ongoing = self.producers.ongoing
        if not ongoing:
            return log_end_offset
        first = next(iter(ongoing.values()))
        return min(max(first, log_start_offset), log_end_offset)

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        return producer_id in self.producers.ongoing

    # --- markers ------------------------------------------------------------------------

    def check_marker(self, batch: memoryview, h: tuple[int, ...],
                     transaction_version: int = 0) -> EndTxnMarker:
        """The marker a control batch holds, if it may be written: raises for an
        unreadable batch, a control record that is no marker, an older producer epoch or
        coordinator epoch."""
        try:
            marker = read_end_txn_marker(batch)
        except ProtocolError as e:
            raise CorruptRecordError(f"unreadable control batch: {e}") from e
        if marker is None:
            raise InvalidRecordError("a control batch that is not a transaction marker")
        self.producers.check_marker(h[PRODUCER_ID], h[PRODUCER_EPOCH], marker.coordinator_epoch,
                                    transaction_version)
        return marker

    def marker_written(self, marker: EndTxnMarker, h: tuple[int, ...], offset: int,
                       active: Segment) -> None:
        """A checked marker now at ``offset`` ends its producer's transaction (if it wrote
        data here), which moves the last stable offset; an ABORT enters the active
        segment's aborted-transaction index."""
        pid, epoch = h[PRODUCER_ID], h[PRODUCER_EPOCH]
        done = self.producers.apply_marker(pid, epoch, marker.coordinator_epoch,
                                           marker.commit, offset, h[MAX_TIMESTAMP])
        if done is None:
            return
        if done.aborted:
            active.txn_index.append(AbortedTxn(
                pid, done.first_offset, offset, self.producers.lso_after(done)))
            self.aborted_txns += 1
        self.producers.complete(done)

    # --- reads --------------------------------------------------------------------------

    def aborted_transactions(self, segments: Sequence[Segment], offset: int,
                             upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions in ``segments`` (from the one holding ``offset``)
        overlapping [offset, upper_bound) (``LocalLog.collectAbortedTransactions``)."""
        return collect_aborted((s.txn_index for s in segments), offset, upper_bound)

    # --- segments come and go -------------------------------------------------------------

    def segment_deleted(self, seg: Segment) -> None:
        self.aborted_txns -= len(seg.txn_index.entries)

    def recount_aborted(self, segments: Sequence[Segment]) -> None:
        self.aborted_txns = sum(len(seg.txn_index.entries) for seg in segments)

    # --- snapshots and recovery -----------------------------------------------------------

    def snapshot(self, offset: int) -> None:
        """Write the producer state as of ``offset`` (the log calls it at every roll, empty
        or not, as Kafka, so that recovery never replays more than the active segment)."""
        write_snapshot(self.dir / f"{offset:020d}.snapshot", self.producers)
        # Only the newest snapshot is normally read; keep one older in case it is torn.
        for old in snapshot_offsets(self.dir)[:-2]:
            (self.dir / f"{old:020d}.snapshot").unlink(missing_ok=True)

    def drop_snapshots_after(self, offset: int) -> None:
        """Remove the snapshots of a log end the log was truncated below."""
        for snap in snapshot_offsets(self.dir):
            if snap > offset:
                (self.dir / f"{snap:020d}.snapshot").unlink(missing_ok=True)

    def restore(self, segments: Sequence[Segment], active_headers: list[tuple[int, ...]],
                rebuild_all: bool = False) -> None:
        """Producer state and the active segment's aborted-transaction index, from the
        snapshot where the active segment begins and the batches after it; without one
        (or with ``rebuild_all``), from the start of the log, rebuilding every index."""
        active = segments[-1]
        found = None if rebuild_all else load_snapshot(self.dir, active.base_offset)
        if found is None and len(segments) > 1:
            # Written before snapshots were kept for every roll, or lost in a crash.
            found = ProducerStateTable()
            for seg in segments[:-1]:
                if rebuild_all:
                    seg.txn_index.reset()
                replay_segment(found, seg, rebuild_all)
            self.producers = found
            self.snapshot(active.base_offset)
        self.producers = found if found is not None else ProducerStateTable()
        active.txn_index.reset()
        replay_headers(self.producers, active, active_headers, True)
        self.recount_aborted(segments)
