"""A share-partition kept one offset at a time: the straightforward model the batched
``SharePartition`` (coordinator/share/partition.py) is checked against. It keeps a state
per in-flight offset and a full scan for every question, so it is slow and obviously
right."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kafkalite.coordinator.share.partition import (
    AbortedTransaction,
    AckBatch,
    AckType,
    AcquiredRange,
    LogBatch,
    PersistedBatch,
    RecordState,
    SharePartitionConfig,
    ShareStats,
)
from kafkalite.protocol.errors import NO_ERROR, ErrorCode


@dataclass(slots=True)
class Offset:
    state: RecordState
    delivery_count: int = 0
    member: str | None = None
    deadline: int | None = None


class PerOffsetSharePartition:
    """One state per in-flight offset, kept apart from every other."""

    def __init__(self, config: SharePartitionConfig, start_offset: int) -> None:
        self.config = config
        self.start_offset = start_offset
        #: The first offset never acquired: one past Kafka's (inclusive) end offset.
        self.next_offset = start_offset
        self.records: dict[int, Offset] = {}
        self.stats = ShareStats()

    # --- views -------------------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        """Kafka's end offset: the last offset tracked (start - 1 when none ever was)."""
        return self.next_offset - 1

    def in_flight(self) -> int:
        return self.next_offset - self.start_offset

    def state_of(self, offset: int) -> Offset | None:
        return self.records.get(offset)

    def count(self, state: RecordState) -> int:
        return sum(1 for r in self.records.values() if r.state is state)

    def fetch_offset(self) -> int:
        """Where the next read of the log starts: the first available in-flight record, or
        the first never acquired."""
        for offset in range(self.start_offset, self.next_offset):
            if self.records[offset].state is RecordState.AVAILABLE:
                return offset
        return self.next_offset

    def can_acquire(self) -> bool:
        """Whether an acquisition could hand out anything: an in-flight record is
        available, or fewer than ``max_record_locks`` are in flight."""
        return (self.fetch_offset() < self.next_offset
                or self.in_flight() < self.config.max_record_locks)

    def next_deadline(self) -> int | None:
        """The earliest lock deadline, for the caller's timer."""
        deadlines = [r.deadline for r in self.records.values() if r.deadline is not None]
        return min(deadlines) if deadlines else None

    # --- acquisition -------------------------------------------------------------------

    def acquire(self, member: str, now: int, batches: Sequence[LogBatch], max_records: int,
                aborted: Iterable[AbortedTransaction] = ()) -> list[AcquiredRange]:
        """Acquire for ``member`` up to ``max_records`` records (new log batches whole) of
        the ``batches`` read from :meth:`fetch_offset`, locked until ``now`` plus the lock
        duration; the acquired offsets as ranges of one delivery count each."""
        deadline = now + self.config.lock_duration_ms
        aborted_ids = self._aborted_batches(batches, aborted) if self.config.read_committed \
            else set()
        acquired: list[int] = []
        for i, batch in enumerate(batches):
            if len(acquired) >= max_records:
                break
            if batch.last_offset < self.start_offset:
                continue
            first = max(batch.base_offset, self.start_offset)
            # Records already in flight: offset by offset.
            for offset in range(first, min(batch.last_offset + 1, self.next_offset)):
                if len(acquired) >= max_records:
                    break
                r = self.records[offset]
                if r.state is RecordState.AVAILABLE:
                    r.state, r.member, r.deadline = RecordState.ACQUIRED, member, deadline
                    r.delivery_count += 1
                    acquired.append(offset)
                    if r.delivery_count > 1:
                        self.stats.redelivered += 1
            # Records never acquired: the rest of the batch, whole.
            if batch.last_offset < self.next_offset or len(acquired) >= max_records:
                continue
            if self.next_offset < first:
                # A hole in the log before this batch (compacted away): nothing to deliver.
                for offset in range(self.next_offset, first):
                    self.records[offset] = Offset(RecordState.ARCHIVED)
                self.next_offset = first
            if self.in_flight() >= self.config.max_record_locks:
                break
            new = range(self.next_offset, batch.last_offset + 1)
            if i in aborted_ids:
                for offset in new:
                    self.records[offset] = Offset(RecordState.ARCHIVED)
            else:
                for offset in new:
                    self.records[offset] = Offset(RecordState.ACQUIRED, 1, member, deadline)
                acquired.extend(new)
            self.next_offset = batch.last_offset + 1
        self._advance_start()
        self.stats.acquired += len(acquired)
        return self._ranges(acquired)

    def _aborted_batches(self, batches: Sequence[LogBatch],
                         aborted: Iterable[AbortedTransaction]) -> set[int]:
        """The indexes of the data batches of aborted transactions (the read_committed
        consumer's rule: a producer's transactional batches from its aborted
        transaction's first offset up to its abort marker)."""
        pending = sorted(aborted, key=lambda a: a.first_offset)
        open_ids: set[int] = set()
        out: set[int] = set()
        k = 0
        for i, b in enumerate(batches):
            while k < len(pending) and pending[k].first_offset <= b.last_offset:
                open_ids.add(pending[k].producer_id)
                k += 1
            if b.is_control:
                open_ids.discard(b.producer_id)
            elif b.is_transactional and b.producer_id in open_ids:
                out.add(i)
        return out

    def _ranges(self, offsets: list[int]) -> list[AcquiredRange]:
        out: list[AcquiredRange] = []
        for offset in sorted(offsets):
            count = self.records[offset].delivery_count
            last = out[-1] if out else None
            if last is not None and last.last_offset + 1 == offset \
                    and last.delivery_count == count:
                out[-1] = AcquiredRange(last.first_offset, offset, count)
            else:
                out.append(AcquiredRange(offset, offset, count))
        return out

    # --- acknowledgement ---------------------------------------------------------------

    def acknowledge(self, member: str, now: int, batches: Sequence[AckBatch]) -> ErrorCode:
        """Apply ``member``'s acknowledgements, all or none: Kafka's error for the
        partition, or NONE."""
        planned: list[tuple[int, AckType]] = []
        previous_last: int | None = None
        for b in batches:
            if b.first_offset > b.last_offset or not b.types:
                return ErrorCode.invalid_request
            if previous_last is not None and b.first_offset <= previous_last:
                return ErrorCode.invalid_request
            previous_last = b.last_offset
            size = b.last_offset - b.first_offset + 1
            if len(b.types) not in (1, size):
                return ErrorCode.invalid_request
            try:
                types = [AckType(t) for t in b.types]
            except ValueError:
                return ErrorCode.invalid_request
            if b.last_offset < self.start_offset:
                # Acknowledged or archived and forgotten: not in flight any more (Kafka's
                # "batch record not found"); a batch the start offset is inside counts
                # from the start offset.
                return ErrorCode.invalid_record_state
            if b.last_offset >= self.next_offset:
                return ErrorCode.invalid_request
            for offset in range(max(b.first_offset, self.start_offset), b.last_offset + 1):
                t = types[0] if len(types) == 1 else types[offset - b.first_offset]
                r = self.records[offset]
                if r.state is not RecordState.ACQUIRED or r.member != member:
                    return ErrorCode.invalid_record_state
                planned.append((offset, t))
        counts = self.stats.acknowledged
        for offset, t in planned:
            counts[t.name] = counts.get(t.name, 0) + 1
            r = self.records[offset]
            if t is AckType.RENEW:
                r.deadline = now + self.config.lock_duration_ms
            elif t is AckType.ACCEPT:
                self._settle(r, RecordState.ACKNOWLEDGED)
            elif t is AckType.RELEASE:
                self._release(r)
            else:  # REJECT, GAP
                self._settle(r, RecordState.ARCHIVED)
        self._advance_start()
        return NO_ERROR

    @staticmethod
    def _settle(r: Offset, state: RecordState) -> None:
        r.state, r.member, r.deadline = state, None, None

    def _release(self, r: Offset) -> None:
        limit_reached = r.delivery_count >= self.config.delivery_count_limit
        if limit_reached:
            self.stats.archived_at_limit += 1
        self._settle(r, RecordState.ARCHIVED if limit_reached else RecordState.AVAILABLE)

    # --- releases ----------------------------------------------------------------------

    def expire_locks(self, now: int) -> list[int]:
        """Release the records whose lock is due at ``now``; their offsets."""
        due = [o for o, r in self.records.items()
               if r.deadline is not None and r.deadline <= now]
        for offset in due:
            self._release(self.records[offset])
        self.stats.lock_expiries += len(due)
        self._advance_start()
        return sorted(due)

    def release_member(self, member: str) -> list[int]:
        """Release every record ``member`` holds (it left, or its session ended)."""
        held = [o for o, r in self.records.items()
                if r.state is RecordState.ACQUIRED and r.member == member]
        for offset in held:
            self._release(self.records[offset])
        self._advance_start()
        return sorted(held)

    def move_start(self, log_start_offset: int) -> None:
        """The log's start moved past records (retention, deletion): forget them."""
        if log_start_offset <= self.start_offset:
            return
        for offset in range(self.start_offset, min(log_start_offset, self.next_offset)):
            del self.records[offset]
        self.start_offset = log_start_offset
        self.next_offset = max(self.next_offset, log_start_offset)
        self._advance_start()

    def _advance_start(self) -> None:
        while self.start_offset < self.next_offset:
            r = self.records[self.start_offset]
            if r.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                return
            del self.records[self.start_offset]
            self.start_offset += 1

    # --- persistence -------------------------------------------------------------------

    def persisted_batches(self) -> list[PersistedBatch]:
        """The in-flight records as ShareSnapshot state batches: runs of one state and
        delivery count, acquired records as available (so delivered again after a
        restart)."""
        out: list[PersistedBatch] = []
        for offset in range(self.start_offset, self.next_offset):
            r = self.records[offset]
            state = RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state
            last = out[-1] if out else None
            if last is not None and last.state is state \
                    and last.delivery_count == r.delivery_count:
                out[-1] = PersistedBatch(last.first_offset, offset, state, r.delivery_count)
            else:
                out.append(PersistedBatch(offset, offset, state, r.delivery_count))
        return out

    @classmethod
    def restore(cls, config: SharePartitionConfig, start_offset: int,
                batches: Iterable[PersistedBatch]) -> PerOffsetSharePartition:
        """A share-partition as persisted: its start offset and state batches (offsets
        below the start offset are dropped; gaps between batches are available)."""
        sp = cls(config, start_offset)
        for b in sorted(batches, key=lambda b: b.first_offset):
            if b.last_offset < start_offset:
                continue
            for offset in range(max(sp.next_offset, start_offset), b.first_offset):
                sp.records[offset] = Offset(RecordState.AVAILABLE)
            state = RecordState.AVAILABLE if b.state is RecordState.ACQUIRED else b.state
            for offset in range(max(b.first_offset, start_offset), b.last_offset + 1):
                sp.records[offset] = Offset(state, b.delivery_count)
            sp.next_offset = max(sp.next_offset, b.last_offset + 1)
        sp._advance_start()
        return sp
