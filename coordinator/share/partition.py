"""One share-partition's delivery state (Kafka's ``SharePartition``), as a pure object.

A share group reads a topic partition together: every record from the share-partition
start offset on is tracked "in flight" until it is acknowledged or archived. A record is
AVAILABLE (to be handed out), ACQUIRED by one member under a time-limited lock,
ACKNOWLEDGED (accepted) or ARCHIVED (rejected, or delivered too often). Each acquisition
counts one delivery; a record released (by its member, by the lock's expiry, or by the
member leaving) after ``delivery_count_limit`` deliveries is archived instead of made
available again. Once the records at the start offset are acknowledged or archived the
start offset moves past them and they are forgotten.

Acquisition takes the log's batches as the caller read them from :meth:`fetch_offset`:
new records are acquired a whole log batch at a time (a batch is never split when first
handed out, as Kafka acquires them) and kept as one in-flight batch with one state
(``inflight.InFlightBatch``); records already in flight are acquired a whole in-flight
batch at a time when it fits, else offset by offset, and a batch holds one state per
offset only while its offsets differ. At most
``max_record_locks`` records are in flight (``group.share.partition.max.record.locks``).
Under read_committed the records of aborted transactions (given as the fetch's aborted
transactions) are archived without being delivered; control batches are handed out like
data, as Kafka does, and the client acknowledges them as gaps. Offsets missing from the
log between two batches (compacted away) are archived here rather than handed out for the
client to acknowledge as gaps.

Time is the caller's: a lock's deadline is ``now + lock_duration_ms`` with ``now`` passed
in, :meth:`next_deadline` says when the caller's timer should fire and
:meth:`expire_locks` releases what is due. No clock is read here.

Acknowledgements are all or nothing per call, with Kafka's per-partition errors:
INVALID_REQUEST for a malformed batch (an unknown type, first > last, offsets past the
acquired records, overlapping or unordered batches), INVALID_RECORD_STATE for records not
acquired, or acquired by another member.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from .inflight import DONE, InFlight, InFlightBatch, RecordState

__all__ = ["InFlight", "InFlightBatch", "RecordState"]


class AckType(IntEnum):
    """ShareAcknowledge's acknowledgement types (RENEW: ShareFetch/ShareAcknowledge v2)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    #: share.record.lock.duration.ms
    lock_duration_ms: int = 30_000
    #: share.delivery.count.limit
    delivery_count_limit: int = 5
    #: group.share.partition.max.record.locks (share.partition.max.record.locks)
    max_record_locks: int = 2000
    #: share.isolation.level = read_committed
    read_committed: bool = False
    #: Kafka's throttling of records near the delivery count limit (handed out in ever
    #: smaller runs, the last delivery alone). Off only to compare with a model that
    #: keeps no batches.
    throttle_near_limit: bool = True


@dataclass(frozen=True, slots=True)
class LogBatch:
    """A record batch of the partition's log, as far as acquisition needs it."""

    base_offset: int
    last_offset: int
    producer_id: int = -1
    is_transactional: bool = False
    is_control: bool = False


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    """A fetch's aborted transaction: its producer and first offset."""

    producer_id: int
    first_offset: int


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """Offsets handed to a member, each with this delivery count (ShareFetch's
    AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One acknowledgement batch: a single type for every offset, or one per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PersistedBatch:
    """A run of offsets with one persisted state and delivery count (ShareSnapshot's
    StateBatch): acquired records persist as available, to be delivered again."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int


@dataclass(slots=True)
class ShareStats:
    """Counters for ``/metrics``: what happened to this share-partition's records."""

    acquired: int = 0
    #: Acquisitions of a record delivered before.
    redelivered: int = 0
    #: Acknowledged records by type name (ACCEPT, RELEASE, REJECT, GAP, RENEW).
    acknowledged: dict[str, int] = field(default_factory=dict)
    lock_expiries: int = 0
    #: Records archived because they reached the delivery count limit.
    archived_at_limit: int = 0


def _first(b: InFlightBatch) -> int:
    return b.first_offset


def _join_runs(out: list[PersistedBatch], first: int, last: int, state: RecordState,
               count: int) -> None:
    prev = out[-1] if out else None
    if prev is not None and prev.last_offset + 1 == first and prev.state is state \
            and prev.delivery_count == count:
        out[-1] = PersistedBatch(prev.first_offset, last, state, count)
    else:
        out.append(PersistedBatch(first, last, state, count))


class SharePartition:
    """The in-flight records of one share-partition, from ``start_offset`` up to (not
    including) ``next_offset``, as contiguous in-flight batches."""

    def __init__(self, config: SharePartitionConfig, start_offset: int) -> None:
        self.config = config
        self.start_offset = start_offset
        #: The first offset never acquired: one past Kafka's (inclusive) end offset.
        self.next_offset = start_offset
        #: In-flight batches covering start_offset..next_offset - 1, in offset order.
        self.batches: list[InFlightBatch] = []
        self.stats = ShareStats()

    # --- views -------------------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        """Kafka's end offset: the last offset tracked (start - 1 when none ever was)."""
        return self.next_offset - 1

    def in_flight(self) -> int:
        return self.next_offset - self.start_offset

    @property
    def records(self) -> dict[int, InFlight]:
        """Every in-flight offset's state, one by one (a copy, for views and tests)."""
        return {o: b.at(o).copy() for b in self.batches
                for o in range(b.first_offset, b.last_offset + 1)}

    def _index(self, offset: int) -> int:
        """The index of the batch holding ``offset`` (or the first after it)."""
        return max(0, bisect_right(self.batches, offset, key=_first) - 1)

    def state_of(self, offset: int) -> InFlight | None:
        if not self.start_offset <= offset < self.next_offset:
            return None
        return self.batches[self._index(offset)].at(offset)

    def runs(self) -> Iterator[tuple[int, int, InFlight]]:
        """(first, last, state) of each run of in-flight offsets in one state."""
        for b in self.batches:
            yield from b.runs()

    def count(self, state: RecordState) -> int:
        return sum(last - first + 1 for first, last, r in self.runs() if r.state is state)

    def fetch_offset(self) -> int:
        """Where the next read of the log starts: the first available in-flight record, or
        the first never acquired."""
        for b in self.batches:
            if b.offsets is None:
                if b.whole.state is RecordState.AVAILABLE:
                    return b.first_offset
                continue
            for i, r in enumerate(b.offsets):
                if r.state is RecordState.AVAILABLE:
                    return b.first_offset + i
        return self.next_offset

    def can_acquire(self) -> bool:
        """Whether an acquisition could hand out anything: an in-flight record is
        available, or fewer than ``max_record_locks`` are in flight."""
        return (self.in_flight() < self.config.max_record_locks
                or self.fetch_offset() < self.next_offset)

    def next_deadline(self) -> int | None:
        """The earliest lock deadline, for the caller's timer."""
        deadlines = [r.deadline for _f, _l, r in self.runs() if r.deadline is not None]
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
        acquired: list[tuple[int, int, int]] = []
        n = 0
        for i, batch in enumerate(batches):
            if n >= max_records:
                break
            if batch.last_offset < self.start_offset:
                continue
            first = max(batch.base_offset, self.start_offset)
            if first < self.next_offset:
                n, stop = self._acquire_in_flight(member, deadline, first,
                                                  min(batch.last_offset, self.next_offset - 1),
                                                  max_records, n, acquired)
                if stop:
                    break
            # Records never acquired: the rest of the batch, whole.
            if batch.last_offset < self.next_offset or n >= max_records:
                continue
            if self.next_offset < first:
                # A hole in the log before this batch (compacted away): nothing to deliver.
                self._append(first - 1, InFlight(RecordState.ARCHIVED))
            if self.in_flight() >= self.config.max_record_locks:
                break
            lo = self.next_offset
            if i in aborted_ids:
                self._append(batch.last_offset, InFlight(RecordState.ARCHIVED))
            else:
                self._append(batch.last_offset,
                             InFlight(RecordState.ACQUIRED, 1, member, deadline))
                acquired.append((lo, batch.last_offset, 1))
                n += batch.last_offset - lo + 1
        self._advance_start()
        self.stats.acquired += n
        return _ranges(acquired)

    def _append(self, last: int, state: InFlight) -> None:
        """A new in-flight batch from ``next_offset`` to ``last``."""
        self.batches.append(InFlightBatch(self.next_offset, last, state))
        self.next_offset = last + 1

    def _acquire_in_flight(self, member: str, deadline: int, lo: int, hi: int,
                           max_records: int, n: int,
                           acquired: list[tuple[int, int, int]]) -> tuple[int, bool]:
        """Acquire the available records of ``lo``..``hi`` (in flight) until ``n``
        reaches ``max_records``: whole in-flight batches when they fit. The new ``n``,
        and whether this acquisition must stop (records near the delivery count limit
        were handed out, or are next: they go out on their own, as Kafka throttles them)."""
        k = self._index(lo)
        while k < len(self.batches) and n < max_records:
            b = self.batches[k]
            k += 1
            if b.first_offset > hi:
                break
            throttled = self._throttled(b, lo, hi)
            if throttled and n > 0:
                return n, True
            if b.offsets is None:
                w = b.whole
                if w.state is not RecordState.AVAILABLE:
                    continue
                if not throttled and lo <= b.first_offset and b.last_offset <= hi \
                        and n + b.size <= max_records:
                    w.state, w.member, w.deadline = RecordState.ACQUIRED, member, deadline
                    w.delivery_count += 1
                    acquired.append((b.first_offset, b.last_offset, w.delivery_count))
                    n += b.size
                    if w.delivery_count > 1:
                        self.stats.redelivered += b.size
                    continue
            got = self._acquire_offsets(b, member, deadline, max(lo, b.first_offset),
                                        min(hi, b.last_offset), max_records - n, acquired)
            n += got
            b.try_join()
            if throttled and got:
                return n, True
        return n, False

    def _throttle_limit(self) -> int:
        """Kafka's ``throttleRecordsDeliveryLimit``: half the delivery count limit, rounded
        up, at least 2; records delivered this often go out in ever smaller runs."""
        return max(2, -(-self.config.delivery_count_limit // 2))

    def _throttled(self, b: InFlightBatch, lo: int, hi: int) -> bool:
        """Whether an available record of ``b`` in ``lo``..``hi`` was delivered at least
        the throttle limit's times."""
        if not self.config.throttle_near_limit:
            return False
        limit = self._throttle_limit()
        if b.offsets is None:
            return b.whole.state is RecordState.AVAILABLE and b.whole.delivery_count >= limit
        base = b.first_offset
        return any(r.state is RecordState.AVAILABLE and r.delivery_count >= limit
                   for r in b.offsets[max(lo, base) - base:min(hi, b.last_offset) - base + 1])

    def _acquire_offsets(self, b: InFlightBatch, member: str, deadline: int, first: int,
                         last: int, room: int, acquired: list[tuple[int, int, int]]) -> int:
        """Acquire available records of ``b`` from ``first`` to ``last`` one by one, at
        most ``room``; how many. Near the delivery count limit, as Kafka's
        ``acquireSubsetBatchRecords``: the first throttled record halves the run for each
        delivery past the throttle limit, and a record on its last delivery goes alone."""
        offsets = b.split()
        base = b.first_offset
        limit = self.config.delivery_count_limit
        throttling = self.config.throttle_near_limit
        throttle = self._throttle_limit()
        cap = -1
        got = 0
        for o in range(first, last + 1):
            if got >= room:
                break
            r = offsets[o - base]
            if r.state is not RecordState.AVAILABLE:
                continue
            if throttling:
                if limit > 2 and r.delivery_count == limit - 1 and got > 0:
                    break  # its last delivery: in the next acquisition, alone
                if r.delivery_count >= throttle and cap < 0:
                    cap = max(1, b.size >> (r.delivery_count - throttle + 1))
            r.state, r.member, r.deadline = RecordState.ACQUIRED, member, deadline
            r.delivery_count += 1
            acquired.append((o, o, r.delivery_count))
            got += 1
            if r.delivery_count > 1:
                self.stats.redelivered += 1
            if throttling and ((limit > 2 and r.delivery_count == limit) or got == cap):
                break
        return got

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

    # --- acknowledgement ---------------------------------------------------------------

    def _overlapping(self, lo: int, hi: int) -> Iterator[InFlightBatch]:
        batches = self.batches
        k = self._index(lo)
        while k < len(batches) and batches[k].first_offset <= hi:
            b = batches[k]
            k += 1
            if b.last_offset >= lo:
                yield b

    def _held(self, member: str, lo: int, hi: int) -> bool:
        """Whether every record of ``lo``..``hi`` is acquired by ``member``."""
        for b in self._overlapping(lo, hi):
            if b.offsets is None:
                w = b.whole
                if w.state is not RecordState.ACQUIRED or w.member != member:
                    return False
                continue
            base = b.first_offset
            for o in range(max(lo, base), min(hi, b.last_offset) + 1):
                r = b.offsets[o - base]
                if r.state is not RecordState.ACQUIRED or r.member != member:
                    return False
        return True

    def acknowledge(self, member: str, now: int, batches: Sequence[AckBatch]) -> ErrorCode:
        """Apply ``member``'s acknowledgements, all or none: Kafka's error for the
        partition, or NONE."""
        planned: list[tuple[int, int, int, list[AckType]]] = []
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
            lo = max(b.first_offset, self.start_offset)
            if not self._held(member, lo, b.last_offset):
                return ErrorCode.invalid_record_state
            planned.append((b.first_offset, lo, b.last_offset, types))
        for first, lo, hi, types in planned:
            self._apply(now, first, lo, hi, types)
        self._advance_start()
        return NO_ERROR

    def _apply(self, now: int, first: int, lo: int, hi: int, types: list[AckType]) -> None:
        """Apply one acknowledgement batch (``types`` one, or one per offset from
        ``first``) to ``lo``..``hi``: a whole in-flight batch at once when it can."""
        counts = self.stats.acknowledged
        for b in list(self._overlapping(lo, hi)):
            if b.offsets is None and len(types) == 1 and lo <= b.first_offset \
                    and b.last_offset <= hi:
                t = types[0]
                counts[t.name] = counts.get(t.name, 0) + b.size
                self._settle(b.whole, t, now, b.size)
                continue
            offsets = b.split()
            base = b.first_offset
            for o in range(max(lo, base), min(hi, b.last_offset) + 1):
                t = types[0] if len(types) == 1 else types[o - first]
                counts[t.name] = counts.get(t.name, 0) + 1
                self._settle(offsets[o - base], t, now, 1)
            b.try_join()

    def _settle(self, r: InFlight, t: AckType, now: int, size: int) -> None:
        if t is AckType.RENEW:
            r.deadline = now + self.config.lock_duration_ms
        elif t is AckType.ACCEPT:
            r.state, r.member, r.deadline = RecordState.ACKNOWLEDGED, None, None
        elif t is AckType.RELEASE:
            self._release(r, size)
        else:  # REJECT, GAP
            r.state, r.member, r.deadline = RecordState.ARCHIVED, None, None

    def _release(self, r: InFlight, size: int) -> None:
        """Release ``size`` records in state ``r``: available again, or archived at the
        delivery count limit."""
        limit_reached = r.delivery_count >= self.config.delivery_count_limit
        if limit_reached:
            self.stats.archived_at_limit += size
        r.state = RecordState.ARCHIVED if limit_reached else RecordState.AVAILABLE
        r.member = r.deadline = None

    # --- releases ----------------------------------------------------------------------

    def _release_where(self, due: Callable[[InFlight], bool]) -> list[int]:
        """Release every record whose state ``due`` picks; their offsets."""
        released: list[int] = []
        for b in self.batches:
            if b.offsets is None:
                if due(b.whole):
                    self._release(b.whole, b.size)
                    released.extend(range(b.first_offset, b.last_offset + 1))
                continue
            touched = False
            for i, r in enumerate(b.offsets):
                if due(r):
                    self._release(r, 1)
                    released.append(b.first_offset + i)
                    touched = True
            if touched:
                b.try_join()
        self._advance_start()
        return released

    def expire_locks(self, now: int) -> list[int]:
        """Release the records whose lock is due at ``now``; their offsets."""
        due = self._release_where(lambda r: r.deadline is not None and r.deadline <= now)
        self.stats.lock_expiries += len(due)
        return due

    def release_member(self, member: str) -> list[int]:
        """Release every record ``member`` holds (it left, or its session ended)."""
        return self._release_where(
            lambda r: r.state is RecordState.ACQUIRED and r.member == member)

    def move_start(self, log_start_offset: int) -> None:
        """The log's start moved past records (retention, deletion): forget them."""
        if log_start_offset <= self.start_offset:
            return
        batches = self.batches
        k = 0
        while k < len(batches) and batches[k].last_offset < log_start_offset:
            k += 1
        del batches[:k]
        if batches:
            batches[0].drop_before(log_start_offset)
        self.start_offset = log_start_offset
        self.next_offset = max(self.next_offset, log_start_offset)
        self._advance_start()

    def _advance_start(self) -> None:
        batches = self.batches
        k = 0
        while k < len(batches):
            b = batches[k]
            if b.offsets is None:
                if b.whole.state not in DONE:
                    break
                k += 1
                continue
            i = 0
            while i < len(b.offsets) and b.offsets[i].state in DONE:
                i += 1
            if i == len(b.offsets):
                k += 1
                continue
            b.drop_before(b.first_offset + i)
            b.try_join()
            break
        if k:
            del batches[:k]
        self.start_offset = batches[0].first_offset if batches else self.next_offset

    # --- persistence -------------------------------------------------------------------

    def persisted_batches(self) -> list[PersistedBatch]:
        """The in-flight records as ShareSnapshot state batches: runs of one state and
        delivery count, acquired records as available (so delivered again after a
        restart)."""
        return self._persisted(self.start_offset, self.next_offset - 1)

    def _persisted(self, lo: int, hi: int) -> list[PersistedBatch]:
        out: list[PersistedBatch] = []
        for b in self._overlapping(lo, hi):
            for first, last, r in b.runs():
                if last < lo or first > hi:
                    continue
                state = RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state
                _join_runs(out, max(first, lo), min(last, hi), state, r.delivery_count)
        return out

    @classmethod
    def restore(cls, config: SharePartitionConfig, start_offset: int,
                batches: Iterable[PersistedBatch]) -> SharePartition:
        """A share-partition as persisted: its start offset and state batches (offsets
        below the start offset are dropped; gaps between batches are available)."""
        sp = cls(config, start_offset)
        for b in sorted(batches, key=lambda b: b.first_offset):
            lo = max(b.first_offset, sp.next_offset)
            if b.last_offset < lo:
                continue
            if sp.next_offset < lo:
                sp._append(lo - 1, InFlight(RecordState.AVAILABLE))
            state = RecordState.AVAILABLE if b.state is RecordState.ACQUIRED else b.state
            sp._append(b.last_offset, InFlight(state, b.delivery_count))
        sp._advance_start()
        return sp


def _ranges(acquired: list[tuple[int, int, int]]) -> list[AcquiredRange]:
    """Acquired (first, last, delivery count) runs joined where adjacent and alike."""
    out: list[AcquiredRange] = []
    for first, last, count in sorted(acquired):
        prev = out[-1] if out else None
        if prev is not None and prev.last_offset + 1 == first \
                and prev.delivery_count == count:
            out[-1] = AcquiredRange(prev.first_offset, last, count)
        else:
            out.append(AcquiredRange(first, last, count))
    return out
