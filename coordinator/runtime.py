"""The coordinator runtime: the only driver of the pure core.

It runs on the broker's event loop and is called synchronously from request handlers and
from the scheduler: the core decides and returns an ``Outcome``; the runtime appends the
outcome's records to their ``__consumer_offsets`` partition, replays them into the core
and only then answers (``run``). Appends are synchronous writes to the partition log (the
OS buffers them; ``--durable`` and the topic's flush settings decide fsync), so a request
that writes is still answered in the same loop iteration, with no task switch. A failed
append is mapped to the coordinator error Kafka's group store answers with, and nothing is
replayed, so the core's persisted state stays what the log says.

Time comes from the scheduler's clock; group deadlines (sessions, joins, syncs) are keys
in the scheduler, routed back to ``core.on_timer``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Protocol

import structlog

from kafkalite.protocol.consumer_offsets import (
    UnknownRecordType,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from kafkalite.protocol.errors import ErrorCode, ProtocolError
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.protocol.records import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchHeader,
    decode_batch,
    encode_batch,
    iter_batch_headers,
)
from kafkalite.storage.errors import RecordTooLargeError

from .core import GroupCoordinatorCore
from .results import AFTER_WRITE, Outcome, Write
from .scheduler import Scheduler

log = structlog.get_logger("kafkalite.coordinator")


class StateLog(Protocol):
    """A partition log as the runtime writes and loads it (``storage.log.PartitionLog``,
    or ``memlog.MemoryLog`` in tests)."""

    def append(self, batch: bytes) -> Any: ...

    def iter_batches(self, start_offset: int = 0) -> Iterator[bytes]: ...


class StateLogs(Protocol):
    def get_or_create(self, topic: str, partition: int) -> StateLog: ...


def store_error(exc: BaseException) -> ErrorCode:
    """Map a failed append as Kafka's group store does (GroupMetadataManager.storeGroup)."""
    if isinstance(exc, RecordTooLargeError):
        return ErrorCode.unknown_server_error  # MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE
    if isinstance(exc, TimeoutError):
        return ErrorCode.coordinator_not_available  # REQUEST_TIMED_OUT
    if isinstance(exc, OSError):
        return ErrorCode.not_coordinator  # KAFKA_STORAGE_ERROR
    return ErrorCode.unknown_server_error


class CoordinatorRuntime:
    def __init__(
        self,
        core: GroupCoordinatorCore,
        logs: StateLogs,
        scheduler: Scheduler,
        ensure_topic: Callable[[], None] = lambda: None,
        retention_check_interval_ms: int | Callable[[], int] = 600_000,
    ) -> None:
        self.core = core
        self.logs = logs
        self.scheduler = scheduler
        #: Creates ``__consumer_offsets`` in the catalogue before its first write.
        self.ensure_topic = ensure_topic
        self.stopped = False
        for kind in core.timer_kinds:
            scheduler.handle(kind, self._on_timer)
        # offsets.retention.check.interval.ms: a pass of offset expiration.
        scheduler.every("offsets-retention", retention_check_interval_ms, self._expire_offsets)

    @property
    def clock_now(self) -> Callable[[], int]:
        """The clock's read function (the heartbeat path binds it once)."""
        return self.scheduler.clock.now_ms

    def now(self) -> int:
        return self.scheduler.clock.now_ms()

    # --- running outcomes ----------------------------------------------------------------

    def run(self, out: Outcome) -> Any:
        """Carry out an outcome: answer parked requests, append and replay each write, run
        its continuation; return the response to the request that produced ``out``."""
        response = out.response
        for waiter, resp in out.replies:
            waiter(resp)
        for w in out.writes:
            err = self._append(w)
            if w.then is not None:
                answer = self.run(w.then(err, self.now()))
                if response is AFTER_WRITE:
                    response = answer
        self.scheduler.rearm()
        return response

    def _append(self, w: Write) -> ErrorCode:
        """Append a write's records and replay them; the error Kafka would map to."""
        core = self.core
        if self.stopped or w.partition not in core.partitions:
            return ErrorCode.not_coordinator
        if not w.records:
            return ErrorCode.none
        now = self.now()
        self.ensure_topic()
        batch = encode_batch(_header(now, len(w.records)),
                             [(0, i, encode_key(k), encode_value(v), ())
                              for i, (k, v) in enumerate(w.records)])
        try:
            self.logs.get_or_create(w.topic, w.partition).append(batch)
        except Exception as e:
            err = store_error(e)
            log.warning("offsets.append_failed", partition=w.partition, group=w.group_id,
                        error=repr(e), mapped=err.name)
            return err
        core.replay_all(w.partition, w.records)
        return ErrorCode.none

    def _on_timer(self, key: tuple[Hashable, ...], deadline: int, now: int) -> None:
        self.run(self.core.on_timer(key, deadline, now))

    def _expire_offsets(self, now: int) -> None:
        if not self.stopped:
            self.run(self.core.expire_offsets(now))

    def rearm(self) -> None:
        """Re-arm the scheduler after deadlines moved outside ``run`` (heartbeats)."""
        self.scheduler.rearm()

    # --- life cycle ----------------------------------------------------------------------

    async def load_all(self, exists: bool = True) -> None:
        """Replay every partition of ``__consumer_offsets``; while a partition loads its
        groups answer COORDINATOR_LOAD_IN_PROGRESS."""
        core = self.core
        n = core.config.num_partitions
        for p in range(n):
            core.begin_load(p)
        for p in range(n):
            if exists:
                self.load_partition(p)
            else:
                core.finish_load(p, self.now())
            await asyncio.sleep(0)
        self.scheduler.rearm()

    def load_partition(self, p: int) -> None:
        core = self.core
        if p not in core.partitions:
            core.begin_load(p)
        records = 0
        latest = _latest_per_key(self.logs.get_or_create(OFFSETS_TOPIC, p).iter_batches(0), p)
        for raw_key, raw_value in latest.items():
            records += 1
            try:
                key = decode_key(raw_key)
                value = decode_value(key, raw_value)
            except UnknownRecordType:
                continue
            except ProtocolError as e:
                log.warning("offsets.record_unreadable", partition=p, error=str(e))
                continue
            core.replay(p, key, value)
        core.finish_load(p, self.now())
        log.info("offsets.partition_loaded", partition=p, keys=records)

    async def stop(self) -> None:
        self.stopped = True
        for p in list(self.core.partitions):
            self.core.unload(p)


def _header(now: int, count: int) -> BatchHeader:
    """The batch header of a coordinator write: every record stamped ``now``."""
    # base offset, length, leader epoch, magic, crc, attributes, last offset delta,
    # base and max timestamp, producer id, epoch and base sequence, record count
    # (positional: keywords cost more than the rest of a one-offset commit's batch).
    return BatchHeader(0, 0, 0, 2, 0, 0, count - 1, now, now, NO_PRODUCER_ID, NO_PRODUCER_EPOCH,
                       NO_SEQUENCE, count)


def _latest_per_key(batches: Iterator[bytes], partition: int) -> dict[bytes, bytes | None]:
    """The last record of each key, in the order of those last records: only it decides the
    loaded state, so a log that has not been compacted yet loads in time proportional to
    its keys, and only those records are decoded."""
    latest: dict[bytes, bytes | None] = {}
    for batch in batches:
        for pos, h in iter_batch_headers(batch):
            if h.is_control:
                continue
            try:
                _h, recs = decode_batch(batch, pos)
            except ProtocolError as e:
                log.warning("offsets.batch_unreadable", partition=partition, error=str(e))
                continue
            for r in recs:
                if r.key is None:
                    continue
                latest.pop(r.key, None)
                latest[r.key] = r.value
    return latest


__all__ = ["CoordinatorRuntime", "StateLog", "StateLogs", "Write", "store_error"]
