"""The broker's share-partition manager (Kafka's ``SharePartitionManager``): one
``SharePartition`` per (group, topic, partition), filled from the partition's log, its
locks timed on the broker's clock, its state written to ``__share_group_state`` before
the answer that depends on it.

- A share-partition is made on its first fetch: from its persisted state when
  ``__share_group_state`` has one (acquired records were persisted as available, so they
  are delivered again), else at the offset ``share.auto.offset.reset`` gives, with a
  snapshot written first.
- An acquisition reads whole batches from the share-partition's fetch offset, up to the
  high watermark (the last stable offset under ``share.isolation.level=read_committed``,
  with the aborted transactions of that range), and hands them to ``SharePartition``.
- Every change (acquisition, acknowledgement, lock expiry, a member's release) writes the
  share-partition's whole in-flight state as one record through the share coordinator's
  core, so the last record of its key is enough to restore it. The state is its
  in-flight batches, so a record holds a few state batches, not one per offset.
- Each share-partition with locks has one ``share-lock`` timer at its earliest lock
  deadline; the scheduler fires it on the broker's clock (so a manual clock drives it).
- Records that become available again (released, expired), and acknowledgements that
  move the start offset (freeing in-flight room), wake parked ShareFetches.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import structlog

from kafkalite.coordinator.results import Outcome
from kafkalite.coordinator.runtime import Coordinator
from kafkalite.coordinator.share import offset_reset
from kafkalite.coordinator.share.partition import (
    AbortedTransaction,
    AckBatch,
    AcquiredRange,
    LogBatch,
    RecordState,
    SharePartition,
)
from kafkalite.coordinator.share.state_core import ShareStateCore, restored_batches
from kafkalite.coordinator.share.state_store import ShareKey
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.records import iter_batch_headers
from kafkalite.storage.errors import OffsetOutOfRangeError
from kafkalite.storage.log import PartitionLog
from kafkalite.timekeeping.scheduler import Scheduler

from ..config.groups import GroupConfigs
from ..topic_store import Storage

log = structlog.get_logger("kafkalite.share")

LOCK_TIMER = "share-lock"
#: The most one read of a share-partition's log takes (a batch bigger is read whole).
READ_CHUNK = 1 << 20


def lock_key(key: ShareKey) -> tuple[str, str, str, int]:
    group, topic_id, partition = key
    return (LOCK_TIMER, group, str(topic_id), partition)


@dataclass(frozen=True, slots=True)
class Acquired:
    """A share-partition's part of a ShareFetch answer."""

    error: ErrorCode
    records: bytes = b""
    ranges: tuple[AcquiredRange, ...] = ()
    #: Bytes of the log read for it (what counts against the fetch's MaxBytes).
    read_bytes: int = 0


def _batches(data: bytes) -> list[tuple[int, int, LogBatch]]:
    """(start, end, batch) of every whole batch in ``data``."""
    return [(pos, pos + h.size, LogBatch(h.base_offset, h.last_offset, h.producer_id,
                                          h.is_transactional, h.is_control))
            for pos, h in iter_batch_headers(data)]


def _split_new(ranges: list[AcquiredRange], new_from: int, batches: list[LogBatch],
               batch_size: int) -> list[AcquiredRange]:
    """Ranges of records never acquired before (from ``new_from``) cut as Kafka's
    ``createBatches`` cuts them: a new range starts at the first log batch at least
    ``batch_size`` offsets after the current range's first offset."""
    out: list[AcquiredRange] = []
    for r in ranges:
        if r.first_offset < new_from or r.last_offset - r.first_offset + 1 <= batch_size:
            out.append(r)
            continue
        cur = r.first_offset
        for b in batches:
            if b.base_offset > r.last_offset:
                break
            if b.base_offset - cur >= batch_size:
                out.append(AcquiredRange(cur, b.base_offset - 1, r.delivery_count))
                cur = b.base_offset
        out.append(AcquiredRange(cur, r.last_offset, r.delivery_count))
    return out


def _limit(sp: SharePartition, batches: list[LogBatch], max_records: int) -> list[LogBatch]:
    """Batches cut so that at most ``max_records`` offsets could be acquired from them
    (ShareFetch v2's record-limit mode: a batch may be split)."""
    out: list[LogBatch] = []
    left = max_records
    for b in batches:
        if left <= 0:
            break
        last = b.base_offset - 1
        offset = b.base_offset
        while offset <= b.last_offset and left > 0:
            if offset >= sp.next_offset:
                # Never acquired: every offset counts.
                take = min(left, b.last_offset - offset + 1)
                left -= take
                last = offset + take - 1
                break
            r = sp.state_of(offset)
            if r is not None and r.state is RecordState.AVAILABLE:
                left -= 1
            last = offset
            offset += 1
        out.append(LogBatch(b.base_offset, last, b.producer_id, b.is_transactional,
                            b.is_control))
    return out


class SharePartitionManager:
    def __init__(self, storage: Storage, state: Coordinator[ShareStateCore],
                 scheduler: Scheduler, group_configs: GroupConfigs) -> None:
        self.storage = storage
        self.state = state
        self.scheduler = scheduler
        self.group_configs = group_configs
        #: The broker's clock, for the handlers.
        self.now = scheduler.now
        self.partitions: dict[ShareKey, SharePartition] = {}
        #: Called when records may have become available (parked ShareFetches).
        self.waiters: set[Callable[[], None]] = set()
        #: Told each share-partition whose first state is about to be written, then once
        #: it was written (not restored).
        self.initializing: list[Callable[[ShareKey], None]] = []
        self.initialized: list[Callable[[ShareKey], None]] = []
        scheduler.handle(LOCK_TIMER, self._on_lock_timer)

    # --- lookups -----------------------------------------------------------------------

    def plog(self, topic_id: uuid.UUID, partition: int) -> PartitionLog | None:
        info = self.storage.catalog.by_id(topic_id)
        if info is None:
            return None
        return self.storage.logs.get(info.name, partition)

    def of_group(self, group: str) -> list[tuple[ShareKey, SharePartition]]:
        return [(k, sp) for k, sp in self.partitions.items() if k[0] == group]

    # --- a share-partition's life --------------------------------------------------------

    def share_partition(self, key: ShareKey, now: int
                        ) -> tuple[ErrorCode, SharePartition | None]:
        """The share-partition of ``key``, made (and its first state written) on first use."""
        group, topic_id, partition = key
        config = self.group_configs.share_partition_config(group)
        sp = self.partitions.get(key)
        if sp is not None:
            sp.config = config
            return NO_ERROR, sp
        plog = self.plog(topic_id, partition)
        if plog is None:
            return ErrorCode.unknown_topic_or_partition, None
        status = self.state.query(lambda c: c.status(key))
        if status is not NO_ERROR:
            return status, None
        persisted = self.state.query(lambda c: c.read(key))
        if persisted is not None:
            sp = SharePartition.restore(config, persisted.start_offset,
                                        restored_batches(persisted))
            sp.move_start(plog.log_start_offset)
            self.partitions[key] = sp
            log.info("share.partition_restored", group=group, topic_id=str(topic_id),
                     partition=partition, start_offset=sp.start_offset,
                     in_flight=sp.in_flight())
            return NO_ERROR, sp
        reset = self.group_configs.share_offset_reset(group)

        def by_time(ts: int) -> int | None:
            found = plog.offset_for_timestamp(ts)
            return None if found is None else found[0]

        start = offset_reset.initial_start_offset(
            reset, now, plog.log_start_offset, plog.high_watermark, by_time)
        sp = SharePartition(config, start)
        for listener in self.initializing:
            listener(key)
        err = self._persist(key, sp)
        if err is not NO_ERROR:
            return err, None
        self.partitions[key] = sp
        log.info("share.partition_initialized", group=group, topic_id=str(topic_id),
                 partition=partition, start_offset=start, reset=reset.strategy)
        for listener in self.initialized:
            listener(key)
        return NO_ERROR, sp

    def _persist(self, key: ShareKey, sp: SharePartition) -> ErrorCode:
        """Write the share-partition's state; returns once it is in the log (or failed)."""
        start, batches = sp.start_offset, sp.persisted_batches()
        err: ErrorCode = self.state.write(lambda core, now: core.persist(
            key, start, batches, now, lambda e, _now: Outcome(e)))
        if err is not NO_ERROR:
            log.warning("share.persist_failed", group=key[0], topic_id=str(key[1]),
                        partition=key[2], error=err.name)
        return err

    def _after_change(self, key: ShareKey, sp: SharePartition, released: bool) -> ErrorCode:
        err = self._persist(key, sp)
        self._arm(key, sp)
        if released:
            self.wake()
        return err

    def _arm(self, key: ShareKey, sp: SharePartition) -> None:
        deadline = sp.next_deadline()
        timer = lock_key(key)
        if deadline is None:
            self.scheduler.timers.cancel(timer)
        else:
            self.scheduler.timers.schedule(timer, deadline)
            self.scheduler.rearm()

    def wake(self) -> None:
        for waiter in list(self.waiters):
            waiter()

    # --- acquisition ---------------------------------------------------------------------

    def acquire(self, key: ShareKey, member: str, now: int, max_records: int,
                max_bytes: int, record_limit: bool = False, batch_size: int = 0,
                min_one: bool = True) -> Acquired:
        """Acquire records for ``member``: the batches that hold them and their ranges.

        At most ``max_bytes`` of the log are read, whole batches; with ``min_one`` the
        first batch is read even when bigger (KIP-74, as Kafka's log read does for the
        first partition of a fetch that returns data). New records are handed out in
        ranges of about ``batch_size`` records, split on log batch boundaries (Kafka's
        in-flight batches of ``BatchSize``)."""
        err, sp = self.share_partition(key, now)
        if sp is None:
            return Acquired(err)
        plog = self.plog(key[1], key[2])
        if plog is None:
            return Acquired(ErrorCode.unknown_topic_or_partition)
        if plog.log_start_offset > sp.start_offset:
            sp.move_start(plog.log_start_offset)
        if not sp.can_acquire() or max_records <= 0 or (max_bytes <= 0 and not min_one):
            return Acquired(NO_ERROR)
        committed = sp.config.read_committed
        upper = plog.last_stable_offset if committed else plog.high_watermark
        offset = sp.fetch_offset()
        budget = max(max_bytes, 1)
        before = (sp.start_offset, sp.next_offset)
        read = 0
        ranges: list[AcquiredRange] = []
        data, found = b"", []
        # Read a chunk at a time, not max_bytes (often far more than one acquisition
        # hands out): the next chunk only while every record read was in flight and none
        # of it available.
        while offset < upper and budget > 0:
            try:
                data = plog.read(offset, min(budget, READ_CHUNK),
                                 max_offset=upper if committed else None)
            except OffsetOutOfRangeError:
                return Acquired(ErrorCode.offset_out_of_range)
            found = _batches(data)
            if not (min_one and read == 0):
                # Only whole batches within the limit (the log read's first batch may
                # be bigger than the limit only with ``min_one``).
                found = [f for f in found if f[1] <= budget]
            if not found:
                break
            read += found[-1][1]
            batches = [b for _s, _e, b in found]
            if record_limit:
                batches = _limit(sp, batches, max_records)
            aborted: list[AbortedTransaction] = []
            if committed:
                aborted = [AbortedTransaction(a.producer_id, a.first_offset)
                           for a in plog.aborted_transactions(offset, upper)]
            ranges = sp.acquire(member, now, batches, max_records, aborted)
            last = found[-1][2].last_offset
            if ranges or last >= sp.next_offset:
                break
            budget -= found[-1][1]
            offset = last + 1
        if not ranges and before == (sp.start_offset, sp.next_offset):
            return Acquired(NO_ERROR, read_bytes=read)
        err = self._after_change(key, sp, released=False)
        if err is not NO_ERROR:
            # Not persisted: hand nothing out, the records go back.
            sp.release_member(member)
            self._arm(key, sp)
            return Acquired(err)
        if not ranges:
            return Acquired(NO_ERROR, read_bytes=read)
        if batch_size > 0 and not record_limit:
            ranges = _split_new(ranges, before[1], [b for _s, _e, b in found], batch_size)
        first, last = ranges[0].first_offset, ranges[-1].last_offset
        # The batches holding the acquired offsets are one contiguous run of ``data``.
        held = [(s, e) for s, e, b in found if b.last_offset >= first and b.base_offset <= last]
        return Acquired(NO_ERROR, data[held[0][0]:held[-1][1]], tuple(ranges), read)

    # --- acknowledgement and release -----------------------------------------------------

    def acknowledge(self, key: ShareKey, member: str, now: int,
                    batches: Sequence[AckBatch]) -> ErrorCode:
        sp = self.partitions.get(key)
        if sp is None:
            # Nothing was ever acquired here since this broker started: nothing is held.
            return ErrorCode.invalid_record_state
        before = sp.stats.acknowledged.get("RELEASE", 0)
        start = sp.start_offset
        err = sp.acknowledge(member, now, batches)
        if err is not NO_ERROR:
            return err
        # Released records can be acquired again; a start offset moved frees in-flight
        # room under max_record_locks: either way parked ShareFetches try again (Kafka
        # completes delayed share fetches after every acknowledgement).
        wake = sp.stats.acknowledged.get("RELEASE", 0) != before or sp.start_offset != start
        return self._after_change(key, sp, wake)

    def release_member(self, group: str, member: str,
                       where: Callable[[ShareKey], bool] | None = None) -> None:
        """``member`` left (or its session or share session ended): its records go back,
        on the share-partitions ``where`` picks (all of the group's without it)."""
        for key, sp in self.of_group(group):
            if (where is None or where(key)) and sp.release_member(member):
                log.info("share.member_released", group=group, member=member,
                         topic_id=str(key[1]), partition=key[2])
                self._after_change(key, sp, released=True)

    def _on_lock_timer(self, timer: tuple[Hashable, ...], _deadline: int, now: int) -> None:
        group, topic_id, partition = str(timer[1]), uuid.UUID(str(timer[2])), int(str(timer[3]))
        key: ShareKey = (group, topic_id, partition)
        sp = self.partitions.get(key)
        if sp is None:
            return
        expired = sp.expire_locks(now)
        if expired:
            log.info("share.locks_expired", group=group, topic_id=str(topic_id),
                     partition=partition, records=len(expired))
            self._after_change(key, sp, released=True)
        else:
            self._arm(key, sp)

    def delete_group(self, group: str) -> None:
        """The share group was deleted: its share-partitions and their state go."""
        self._delete(lambda k: k[0] == group)
        log.info("share.group_deleted", group=group)

    def delete_topic(self, topic_id: uuid.UUID) -> None:
        """The topic was deleted: every group's share-partitions of it and their state go
        (a topic made again under its name has a new id, so new share-partitions)."""
        self._delete(lambda k: k[1] == topic_id)

    def _delete(self, which: Callable[[ShareKey], bool]) -> None:
        for key in [k for k in self.partitions if which(k)]:
            self.scheduler.timers.cancel(lock_key(key))
            del self.partitions[key]
        keys = self.state.query(lambda c: [k for k in c.store.states if which(k)])
        def answer(err: ErrorCode, _now: int) -> Outcome:
            return Outcome(err)

        for key in keys:
            err: ErrorCode = self.state.write(
                lambda core, _now: core.delete(key, answer))  # noqa: B023 (called at once)
            if err is not NO_ERROR:
                log.warning("share.state_delete_failed", group=key[0], topic_id=str(key[1]),
                            partition=key[2], error=err.name)

    def forget_group(self, group: str) -> None:
        """The group is gone: its share-partitions go from memory (not their state)."""
        for key, _sp in self.of_group(group):
            self.scheduler.timers.cancel(lock_key(key))
            del self.partitions[key]
