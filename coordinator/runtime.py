"""The coordinator runtime: owns the core's state for every ``__consumer_offsets`` partition.

It runs on the broker's event loop and is called synchronously from request handlers:
the core decides, the runtime appends the resulting records to the group's partition and
only then releases the responses. A request that writes nothing (most heartbeats) is
answered at once. Timers run off one ``loop.call_at`` handle armed for the earliest
deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import structlog

from kafkalite.protocol.consumer_offsets import (
    Key,
    UnknownRecordType,
    Value,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from kafkalite.protocol.errors import ErrorCode, ProtocolError
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.protocol.records import NewRecord, build_batch, decode_batch, iter_batch_headers
from kafkalite.storage.errors import RecordTooLargeError

from .core import CoreConfig, GroupCoordinatorCore, OffsetsReplay
from .results import Outcome, Write

log = structlog.get_logger("kafkalite.coordinator")


Waiter = Callable[[Any], None]


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
        config: CoreConfig,
        logs: Any,
        loop: asyncio.AbstractEventLoop | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.core = GroupCoordinatorCore(config)
        self.logs = logs
        self._loop = loop
        self._clock = clock
        self._handle: asyncio.TimerHandle | None = None
        self._armed_for: int | None = None
        self.stopped = False
        #: Creates ``__consumer_offsets`` in the catalogue if missing (set by the broker).
        self.ensure_topic: Callable[[], None] | None = None

    # --- wiring for the offsets component ------------------------------------------------

    @property
    def offsets(self) -> OffsetsReplay | None:
        return self.core.offsets

    @offsets.setter
    def offsets(self, hook: OffsetsReplay | None) -> None:
        self.core.offsets = hook

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def now(self) -> int:
        return int(self._clock() * 1000)

    # --- life cycle ----------------------------------------------------------------------

    async def load_all(self, exists: bool = True) -> None:
        """Replay every partition of ``__consumer_offsets`` (others see LOAD_IN_PROGRESS)."""
        n = self.core.config.num_partitions
        for p in range(n):
            self.core.begin_load(p)
        for p in range(n):
            if exists:
                self.load_partition(p)
            else:
                self.core.finish_load(p, self.now())
            await asyncio.sleep(0)
        self._rearm()

    def load_partition(self, p: int) -> None:
        core = self.core
        if p not in core.partitions:
            core.begin_load(p)
        plog = self.logs.get_or_create(OFFSETS_TOPIC, p)
        records = 0
        # Only the last record of each key decides the loaded state, so keep the last one
        # per key (in the order of those last records) and decode just those: a log that
        # has not been compacted yet loads in time proportional to its keys.
        latest: dict[bytes, bytes | None] = {}
        for batch in plog.iter_batches(0):
            for pos, h in iter_batch_headers(batch):
                if h.is_control:
                    continue
                try:
                    _h, recs = decode_batch(batch, pos)
                except ProtocolError as e:
                    log.warning("offsets.batch_unreadable", partition=p, error=str(e))
                    continue
                for r in recs:
                    if r.key is None:
                        continue
                    latest.pop(r.key, None)
                    latest[r.key] = r.value
                    records += 1
        for raw_key, raw_value in latest.items():
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
        log.info("offsets.partition_loaded", partition=p, records=records, keys=len(latest))

    async def stop(self) -> None:
        self.stopped = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        for p in list(self.core.partitions):
            self.core.unload(p)

    # --- writes ----------------------------------------------------------------------

    def append_records(self, partition: int, records: list[tuple[Key, Value | None]]) -> ErrorCode:
        """Append records to a partition and replay them; the error Kafka would map to."""
        ps = self.core.partitions.get(partition)
        if ps is None or self.stopped:
            return ErrorCode.not_coordinator
        if not records:
            return ErrorCode.none
        now = self.now()
        if self.ensure_topic is not None:
            self.ensure_topic()
        batch = build_batch(
            [NewRecord(encode_key(k), encode_value(v), now) for k, v in records], timestamp=now
        )
        try:
            self.logs.get_or_create(OFFSETS_TOPIC, partition).append(batch)
        except Exception as e:
            err = store_error(e)
            log.warning("offsets.append_failed", partition=partition, error=repr(e),
                        mapped=err.name)
            return err
        for k, v in records:
            self.core.replay(partition, k, v)
        return ErrorCode.none

    def append(self, group_id: str, records: list[tuple[Key, Value | None]]
               ) -> asyncio.Future[ErrorCode]:
        """Write records for a group; the future resolves (never raises) once they are in
        the log and replayed, to ``ErrorCode.none`` or the mapped append error."""
        fut: asyncio.Future[ErrorCode] = self.loop.create_future()
        err = self.core.group_status(group_id)
        if err is ErrorCode.none:
            err = self.append_records(self.core.partition_for(group_id), records)
        fut.set_result(err)
        return fut

    def process(self, out: Outcome) -> Any:
        """Carry out an outcome: answer waiters, write records, run continuations."""
        for waiter, resp in out.replies:
            waiter(resp)
        for w in out.writes:
            self._write(w)
        self._rearm()
        return out.response

    def _write(self, w: Write) -> None:
        err = self.append_records(w.partition, w.records)
        if w.then is not None:
            self.process(w.then(err, self.now()))

    # --- timers ----------------------------------------------------------------------

    def process_timers(self) -> None:
        """Re-arm the timer handle after deadlines changed outside ``process``."""
        self._rearm()

    def _rearm(self) -> None:
        deadline = self.core.timers.next_deadline()
        if deadline == self._armed_for and self._handle is not None:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._armed_for = deadline
        if deadline is None or self.stopped:
            return
        delay = max(deadline - self.now(), 0) / 1000.0
        self._handle = self.loop.call_at(self.loop.time() + delay, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._armed_for = None
        try:
            self.process(self.core.expire(self.now()))
        except Exception:
            log.exception("coordinator.timer_failed")
            self._rearm()
