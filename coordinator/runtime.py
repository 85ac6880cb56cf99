"""The coordinator runtime: the only driver of the pure cores.

It runs on the broker's event loop and is called synchronously from request handlers and
from the scheduler: a core decides and returns an ``Outcome``; the runtime appends the
outcome's records to their internal topic's partition (``__consumer_offsets`` for the
group coordinator, ``__transaction_state`` for the transaction coordinator), replays them
into the core that owns the topic and only then answers (``run``). Appends are synchronous
writes to the partition log (the OS buffers them; ``--durable`` and the topic's flush
settings decide fsync), so a request that writes is still answered in the same loop
iteration, with no task switch. A failed append is mapped to the coordinator error Kafka's
stores answer with, and nothing is replayed, so a core's persisted state stays what the
log says.

Time comes from the scheduler's clock; each core's deadlines are keys in the scheduler,
routed back to that core's ``on_timer``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Protocol

import structlog

from kafkalite.protocol.errors import NO_ERROR, ErrorCode, ProtocolError
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.protocol.records import (
    ATTR_TRANSACTIONAL,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    BatchHeader,
    encode_batch,
)
from kafkalite.storage.errors import InvalidProducerEpochError, RecordTooLargeError
from kafkalite.storage.producer_state import COORDINATOR, AppendOrigin
from kafkalite.timekeeping.scheduler import Scheduler

from .core import GroupCoordinatorCore
from .results import AFTER_WRITE, Outcome, Write
from .state_load import scan
from .state_topics import (
    OFFSETS_CODEC,
    SkipRecord,
    StateCore,
    StateTopic,
    TimerHandler,
    TxnRecord,
)
from .topics_image import TopicChange
from .txn_markers import marker_error

log = structlog.get_logger("kafkalite.coordinator")


class StateLog(Protocol):
    """A partition log as the runtime writes and loads it (``storage.log.PartitionLog``,
    or ``memlog.MemoryLog`` in tests)."""

    def append(self, batch: bytes, *, origin: AppendOrigin = ...) -> tuple[int, int]:
        """Append whole batches; their (base, last) offsets. ``origin`` COORDINATOR: a
        transactional batch of the coordinator's own (its producer's epoch is checked)."""
        ...

    def append_built(self, batch: bytes) -> tuple[int, int]:
        """Append one batch without a producer, encoded by the runtime itself."""
        ...

    def append_control_marker(self, producer_id: int, producer_epoch: int,
                              coordinator_epoch: int, commit: bool) -> int: ...

    def iter_batches(self, start_offset: int = 0) -> Iterator[bytes]: ...


class StateLogs(Protocol):
    def get_or_create(self, topic: str, partition: int) -> StateLog: ...


def store_error(exc: BaseException) -> ErrorCode:
    """Map a failed append as Kafka's group store does (GroupMetadataManager.storeGroup;
    the coordinators' ``handleOperationException``)."""
    if isinstance(exc, InvalidProducerEpochError):
        return ErrorCode.invalid_producer_epoch  # a transactional write of a fenced producer
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
        #: The group coordinator (classic and consumer groups, offsets).
        self.core = core
        self.logs = logs
        self.scheduler = scheduler
        #: The scheduler's clock, bound once: every commit reads it twice.
        self.now: Callable[[], int] = scheduler.clock.now_ms
        self.stopped = False
        self.topics: dict[str, StateTopic] = {}
        self.serve(StateTopic(OFFSETS_TOPIC, core.config.num_partitions, core, OFFSETS_CODEC,
                              ensure_topic))
        # offsets.retention.check.interval.ms: a pass of offset expiration.
        scheduler.every("offsets-retention", retention_check_interval_ms, self._expire_offsets)
        scheduler.handle("partition-reload", self._reload)

    def serve(self, topic: StateTopic) -> None:
        """Drive another core over its internal topic (loaded by ``load_all``)."""
        self.topics[topic.name] = topic
        for kind, handler in topic.core.timer_handlers().items():
            self.scheduler.handle(kind, self._timer(handler))

    def _timer(self, handler: TimerHandler) -> Callable[[tuple[Hashable, ...], int, int], None]:
        def fire(key: tuple[Hashable, ...], deadline: int, now: int) -> None:
            self.run(handler(key, deadline, now))

        return fire

    def ensure_topic(self, name: str = OFFSETS_TOPIC) -> None:
        """Create an internal topic on first use (FindCoordinator, or a core's first write)."""
        topic = self.topics[name]
        topic.ensure()
        topic.ensured = True

    # --- running outcomes ----------------------------------------------------------------

    def run(self, out: Outcome) -> Any:
        """Carry out an outcome: answer parked requests, append and replay each write, run
        its continuation; return the response to the request that produced ``out``."""
        response = self._carry(out)
        self.scheduler.rearm()
        return response

    def _carry(self, out: Outcome) -> Any:
        """``run`` but for re-arming the timer, which the outermost call does once."""
        response = out.response
        for waiter, resp in out.replies:
            waiter(resp)
        if out.writes:
            now = self.now()  # one clock read for the batches and their continuations
            for w in out.writes:
                err = self._append(w, now)
                if w.then is not None:
                    answer = self._carry(w.then(err, now))
                    if response is AFTER_WRITE:
                        response = answer
        return response

    def _append(self, w: Write, now: int) -> ErrorCode:
        """Append a write's records and replay them; the error Kafka would map to."""
        topic = self.topics[w.topic]
        core = topic.core
        if self.stopped or w.partition not in core.partitions:
            return ErrorCode.not_coordinator
        if not w.records:
            return NO_ERROR
        if not topic.ensured:
            self.ensure_topic(w.topic)
        encoded = w.encoded
        if encoded is None:
            encode_key, encode_value = topic.codec.encode_key, topic.codec.encode_value
            encoded = [(encode_key(k), encode_value(v)) for k, v in w.records]
        records = [(0, i, k, v, ()) for i, (k, v) in enumerate(encoded)]
        if w.producer_id >= 0:
            return self._append_transactional(w, core, now, records)
        batch = encode_batch(_header(now, len(w.records)), records)
        try:
            self.logs.get_or_create(w.topic, w.partition).append_built(batch)
        except Exception as e:
            return self._failed(w, e)
        core.replay_all(w.partition, w.records)
        return NO_ERROR

    def on_topic_change(self, change: TopicChange) -> None:
        """A topic catalogue event (wired by the composition root): the group core learns
        of created, grown and deleted topics (consumer groups' metadata and regexes)."""
        if not self.stopped:
            self.run(self.core.on_topic_change(change, self.now()))

    def _append_transactional(self, w: Write, core: StateCore, now: int,
                              records: list[tuple[int, int, bytes, bytes | None, tuple[()]]]
                              ) -> ErrorCode:
        """One transactional batch of the producer's (Kafka's coordinator writes them with
        base sequence 0); its records stay pending until the producer's marker."""
        n = len(records)
        header = BatchHeader(0, 0, 0, 2, 0, ATTR_TRANSACTIONAL, n - 1, now, now, w.producer_id,
                             w.producer_epoch, 0, n)
        try:
            base, _last = self.logs.get_or_create(w.topic, w.partition).append(
                encode_batch(header, records), origin=COORDINATOR)
        except Exception as e:
            return self._failed(w, e)
        core.replay_transactional(w.partition, w.producer_id, w.producer_epoch,
                                  [TxnRecord(k, v, base + i) for i, (k, v) in enumerate(w.records)])
        return NO_ERROR

    @staticmethod
    def _failed(w: Write, e: Exception) -> ErrorCode:
        err = store_error(e)
        log.warning("coordinator.append_failed", topic=w.topic, partition=w.partition,
                    owner=w.group_id, error=repr(e), mapped=err.name)
        return err

    def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                             coordinator_epoch: int, commit: bool) -> ErrorCode:
        """The group coordinator's half of a transaction's marker (Kafka's
        ``GroupCoordinatorService.completeTransaction``, called by the transaction
        coordinator's marker writer): append the COMMIT or ABORT marker to the
        ``__consumer_offsets`` partition, then replay it, which makes the producer's
        pending offsets there committed or drops them. A partition not loaded here answers
        NOT_LEADER_OR_FOLLOWER, the retriable error Kafka translates those to."""
        core = self.core
        if self.stopped or core.partition_status(partition) is not NO_ERROR:
            return ErrorCode.not_leader_or_follower
        self.ensure_topic()
        try:
            self.logs.get_or_create(OFFSETS_TOPIC, partition).append_control_marker(
                producer_id, producer_epoch, coordinator_epoch, commit)
        except Exception as e:
            err = marker_error(e)
            log.warning("coordinator.marker_failed", partition=partition,
                        producer_id=producer_id, error=repr(e), mapped=err.name)
            return err
        core.replay_end_marker(partition, producer_id, commit)
        return NO_ERROR

    def _expire_offsets(self, now: int) -> None:
        if not self.stopped:
            self.run(self.core.expire_offsets(now))

    def rearm(self) -> None:
        """Re-arm the scheduler after deadlines moved outside ``run`` (heartbeats)."""
        self.scheduler.rearm()

    # --- life cycle ----------------------------------------------------------------------

    async def load_all(self, exists: Callable[[str], bool] | bool = True) -> None:
        """Replay every partition of every internal topic; while a partition loads, its
        groups (or transactional ids) answer COORDINATOR_LOAD_IN_PROGRESS. ``exists``: does
        the topic have logs yet (a new broker has none)."""
        for topic in self.topics.values():
            there = exists(topic.name) if callable(exists) else exists
            for p in range(topic.num_partitions):
                topic.core.begin_load(p)
            for p in range(topic.num_partitions):
                if there:
                    self.load_partition(topic, p)
                else:
                    self._finish_load(topic, p)
                await asyncio.sleep(0)
        self.scheduler.rearm()

    def load_partition(self, topic: StateTopic, p: int) -> None:
        core = topic.core
        if p not in core.partitions:
            core.begin_load(p)
        decode = topic.codec.decode
        loaded = scan(self.logs.get_or_create(topic.name, p).iter_batches(0), topic.name, p)

        def decoded(raw_key: bytes, raw_value: bytes | None) -> tuple[Any, Any] | None:
            try:
                return decode(raw_key, raw_value)
            except SkipRecord:
                return None
            except ProtocolError as e:
                log.warning("coordinator.record_unreadable", topic=topic.name, partition=p,
                            error=str(e))
                return None

        records = [r for r in (decoded(k, v) for k, v in loaded.latest.items())
                   if r is not None]
        core.replay_all(p, records)
        for pid, txn in loaded.open.items():
            held = []
            for raw_key, rec in txn.records.items():
                kv = decoded(raw_key, rec.value)
                if kv is not None:
                    held.append(TxnRecord(kv[0], kv[1], rec.offset, rec.superseded))
            core.replay_transactional(p, pid, txn.producer_epoch, held)
        self._finish_load(topic, p)
        log.info("coordinator.partition_loaded", topic=topic.name, partition=p,
                 keys=len(loaded.latest), open_transactions=len(loaded.open))

    def _finish_load(self, topic: StateTopic, p: int) -> None:
        out = topic.core.finish_load(p, self.now())
        if out is not None:
            self.run(out)

    def hold_partition(self, name: str, partition: int, for_ms: int, moved: bool) -> None:
        """Test control: a partition of an internal topic answers NOT_COORDINATOR (``moved``:
        the coordinator went elsewhere) or COORDINATOR_LOAD_IN_PROGRESS (loading) for
        ``for_ms``, then is loaded again from its log, as after a coordinator move."""
        topic = self.topics[name]
        out = topic.core.unload(partition)
        if out is not None:
            self.run(out)
        if not moved:
            topic.core.begin_load(partition)
        log.info("coordinator.partition_held", topic=name, partition=partition,
                 for_ms=for_ms, answers="NOT_COORDINATOR" if moved else "LOAD_IN_PROGRESS")
        self.scheduler.timers.schedule(("partition-reload", name, partition),
                                       self.now() + for_ms)
        self.scheduler.rearm()

    def _reload(self, key: tuple[Hashable, ...], _deadline: int, _now: int) -> None:
        name, partition = key[1], key[2]
        assert isinstance(name, str) and isinstance(partition, int)
        topic = self.topics.get(name)
        if topic is not None and not self.stopped:
            self.load_partition(topic, partition)

    async def stop(self) -> None:
        self.stopped = True
        for topic in self.topics.values():
            for p in list(topic.core.partitions):
                out = topic.core.unload(p)
                if out is not None:
                    for waiter, resp in out.replies:
                        waiter(resp)


def _header(now: int, count: int) -> tuple[int, ...]:
    """The batch header fields of a coordinator write, every record stamped ``now``, as a
    plain tuple in ``BatchHeader``'s order (building the named tuple costs more than the
    rest of a one-offset commit's batch): base offset, length, leader epoch, magic, crc,
    attributes, last offset delta, base and max timestamp, producer id, epoch and base
    sequence, record count."""
    return (0, 0, 0, 2, 0, 0, count - 1, now, now, NO_PRODUCER_ID, NO_PRODUCER_EPOCH,
            NO_SEQUENCE, count)


__all__ = ["CoordinatorRuntime", "StateCore", "StateLog", "StateLogs", "Write", "store_error"]
