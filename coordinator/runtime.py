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

Handlers reach a core only through its ``Coordinator`` (``runtime.groups``, and the one
``serve`` returns for another topic): ``write(op)`` reads the clock, runs ``op`` on the
core, appends and replays what it writes, answers and re-arms the timers; ``read(op)``
runs an operation that writes nothing (its deadlines may move: a heartbeat's);
``query(op)`` one that only looks (no clock, no timers).

Time comes from the scheduler's clock; each core's deadlines are keys in the scheduler,
routed to the handler of their kind in that core's ``timer_handlers`` table.

The runtime owns its partitions' life: ``load`` replays one from its log, ``unload``
gives it up (its parked requests answered NOT_COORDINATOR), ``hold_partition`` moves one
away for a while and loads it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Generic, Protocol, TypeVar

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
from kafkalite.storage.errors import append_error
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

log = structlog.get_logger("kafkalite.coordinator")

C = TypeVar("C")
T = TypeVar("T")


class StateLog(Protocol):
    """A partition log as the runtime writes and loads it (``storage.log.PartitionLog``,
    or ``tests/coordinator/memlog.py``'s ``MemoryLog``)."""

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


#: Kafka's coordinators answer a failed store write with these instead (the coordinators'
#: ``handleOperationException``); any other failure is UNKNOWN_SERVER_ERROR.
_STORE_ERRORS: dict[ErrorCode, ErrorCode] = {
    ErrorCode.invalid_producer_epoch: ErrorCode.invalid_producer_epoch,
    ErrorCode.request_timed_out: ErrorCode.coordinator_not_available,
    ErrorCode.kafka_storage_error: ErrorCode.not_coordinator,
}


def store_error(exc: BaseException) -> ErrorCode:
    """Map a failed append as Kafka's group store does (GroupMetadataManager.storeGroup;
    the coordinators' ``handleOperationException``): the append's own error first."""
    return _STORE_ERRORS.get(append_error(exc), ErrorCode.unknown_server_error)


class Coordinator(Generic[C]):
    """One internal topic's core as request handlers reach it (Kafka's
    ``scheduleWriteOperation`` / ``scheduleReadOperation``): ``op`` gets the core and the
    time, the runtime does the rest."""

    __slots__ = ("_carry", "_core", "_now", "_rearm", "_timers")

    def __init__(self, runtime: CoordinatorRuntime, core: C) -> None:
        self._core = core
        # Bound once: a commit's and a heartbeat's path, one call each.
        self._now = runtime.now
        self._carry = runtime._carry
        self._rearm = runtime.scheduler.rearm
        self._timers = runtime.scheduler.timers

    def write(self, op: Callable[[C, int], Outcome]) -> Any:
        """Run an operation that may write: its records appended and replayed, parked
        requests answered, timers re-armed; the response to the request."""
        response = self._carry(op(self._core, self._now()))
        self._rearm()
        return response

    def query(self, op: Callable[[C], T]) -> T:
        """Run an operation that neither writes nor needs the time nor moves a deadline
        (a lookup, a fetch, a describe)."""
        return op(self._core)

    def read(self, op: Callable[[C, int], T]) -> T:
        """Run an operation that writes nothing; the timers are re-armed only if it moved
        a deadline earlier (a heartbeat usually moves one later, which needs nothing)."""
        timers = self._timers
        pushes = timers.pushes
        result = op(self._core, self._now())
        if timers.pushes != pushes:
            self._rearm()
        return result



class OnDemand(Coordinator[C]):
    """A coordinator built on its first operation (or ``served()``): the transaction
    coordinator of a broker no transactional producer has used is neither imported nor
    built before it listens."""

    __slots__ = ("_build", "_served")

    def __init__(self, build: Callable[[], Coordinator[C]]) -> None:
        # No Coordinator.__init__: every operation goes to the one ``build`` returns.
        self._build = build
        self._served: Coordinator[C] | None = None

    def served(self) -> Coordinator[C]:
        served = self._served
        if served is None:
            served = self._served = self._build()
        return served

    @property
    def built(self) -> bool:
        return self._served is not None

    @property
    def core(self) -> C:
        return self.served()._core

    def write(self, op: Callable[[C, int], Outcome]) -> Any:
        return self.served().write(op)

    def query(self, op: Callable[[C], T]) -> T:
        return self.served().query(op)

    def read(self, op: Callable[[C, int], T]) -> T:
        return self.served().read(op)

class CoordinatorRuntime:
    def __init__(
        self,
        core: GroupCoordinatorCore,
        logs: StateLogs,
        scheduler: Scheduler,
        ensure_topic: Callable[[], None] = lambda: None,
    ) -> None:
        self.logs = logs
        self.scheduler = scheduler
        #: The scheduler's clock, bound once: every commit reads it twice.
        self.now: Callable[[], int] = scheduler.clock.now_ms
        self.stopped = False
        self.topics: dict[str, StateTopic] = {}
        #: Internal topics whose coordinator is built on first use (``serve_on_demand``).
        self._on_demand: dict[str, Callable[[], object]] = {}
        #: Set by ``begin_loading``: whether a topic has logs yet; a topic served from then
        #: on (built on first use) is loaded as it is served.
        self._exists: Callable[[str], bool] | None = None
        #: The group coordinator (classic and consumer groups, offsets).
        self.groups = self.serve(StateTopic(OFFSETS_TOPIC, core.config.num_partitions, core,
                                            OFFSETS_CODEC, ensure_topic), core)
        scheduler.handle(RELOAD_TIMER, self._reload)

    def serve(self, topic: StateTopic, core: C) -> Coordinator[C]:
        """Drive a core over its internal topic (loaded by ``load_all``); ``core`` is
        ``topic.core``, typed as the operations given to the returned ``Coordinator``
        see it."""
        assert core is topic.core
        self.topics[topic.name] = topic
        self._on_demand.pop(topic.name, None)
        for kind, handler in topic.core.timer_handlers().items():
            self.scheduler.handle(kind, self._timer(handler))
        if self._exists is not None:
            self._load_now(topic, self._exists(topic.name))
        return Coordinator(self, core)

    def serve_on_demand(self, name: str, build: Callable[[], object]) -> None:
        """``build`` serves topic ``name`` (calls ``serve``) the first time it is needed:
        ``topic(name)``, ``ensure_topic(name)``. A coordinator a new broker has no use for
        is then neither imported nor built before it listens."""
        self._on_demand[name] = build

    def topic(self, name: str) -> StateTopic:
        """An internal topic served here, its coordinator built now if it is built on
        first use (KeyError for a topic not served at all)."""
        found = self.topics.get(name)
        if found is None and name in self._on_demand:
            self._on_demand.pop(name)()
            found = self.topics[name]
        if found is None:
            raise KeyError(name)
        return found

    def _timer(self, handler: TimerHandler) -> Callable[[tuple[Hashable, ...], int, int], None]:
        def fire(key: tuple[Hashable, ...], deadline: int, now: int) -> None:
            self.run(handler(key, deadline, now))

        return fire

    def ensure_topic(self, name: str = OFFSETS_TOPIC) -> None:
        """Create an internal topic on first use (FindCoordinator, or a core's first write)."""
        topic = self.topic(name)
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

    def append_marker(self, name: str, partition: int, producer_id: int, producer_epoch: int,
                      coordinator_epoch: int, commit: bool) -> ErrorCode:
        """Append a transaction's COMMIT or ABORT marker to a partition of an internal
        topic (the caller replays it into its core when this answers NONE); a failure
        mapped as the marker writer answers it."""
        if self.stopped:
            return ErrorCode.not_leader_or_follower
        self.ensure_topic(name)
        try:
            self.logs.get_or_create(name, partition).append_control_marker(
                producer_id, producer_epoch, coordinator_epoch, commit)
        except Exception as e:
            err = append_error(e)
            log.warning("coordinator.marker_failed", topic=name, partition=partition,
                        producer_id=producer_id, error=repr(e), mapped=err.name)
            return err
        return NO_ERROR

    # --- life cycle ----------------------------------------------------------------------

    def begin_loading(self, exists: Callable[[str], bool]) -> list[StateTopic]:
        """Every partition of every topic served now is loading from here on, before any
        request can reach it; a topic served later (its coordinator built on first use)
        is loaded as it is served. Returns the topics for ``load_all``."""
        self._exists = exists
        topics = list(self.topics.values())
        for topic in topics:
            for p in range(topic.num_partitions):
                topic.core.begin_load(p)
        return topics

    async def load_all(self, exists: Callable[[str], bool] | bool = True,
                       topics: list[StateTopic] | None = None) -> None:
        """Replay every partition of every internal topic (or of ``topics``); while a
        partition loads, its groups (or transactional ids) answer
        COORDINATOR_LOAD_IN_PROGRESS. ``exists``: does the topic have logs yet (a new
        broker has none)."""
        for topic in list(self.topics.values()) if topics is None else topics:
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

    def _load_now(self, topic: StateTopic, there: bool) -> None:
        for p in range(topic.num_partitions):
            topic.core.begin_load(p)
        for p in range(topic.num_partitions):
            if there:
                self.load_partition(topic, p)
            else:
                self._finish_load(topic, p)
        self.scheduler.rearm()

    def load(self, name: str, partition: int) -> None:
        """Become the coordinator of a partition of an internal topic: replay its log into
        the topic's core (its requests answer LOAD_IN_PROGRESS until this returns)."""
        self.load_partition(self.topic(name), partition)

    def unload(self, name: str, partition: int) -> None:
        """Stop being the coordinator of a partition: the core forgets it and its parked
        requests are answered (NOT_COORDINATOR, as Kafka)."""
        out = self.topic(name).core.unload(partition)
        if out is not None:
            self.run(out)

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
        topic = self.topic(name)
        self.unload(name, partition)
        if not moved:
            topic.core.begin_load(partition)
        log.info("coordinator.partition_held", topic=name, partition=partition,
                 for_ms=for_ms, answers="NOT_COORDINATOR" if moved else "LOAD_IN_PROGRESS")
        self.scheduler.timers.schedule(_reload_key(name, partition),
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


#: The timer kind of a held partition's reload (``hold_partition``).
RELOAD_TIMER = "partition-reload"


def _reload_key(name: str, partition: int) -> tuple[str, str, int]:
    return (RELOAD_TIMER, name, partition)


def _header(now: int, count: int) -> tuple[int, ...]:
    """The batch header fields of a coordinator write, every record stamped ``now``, as a
    plain tuple in ``BatchHeader``'s order (building the named tuple costs more than the
    rest of a one-offset commit's batch): base offset, length, leader epoch, magic, crc,
    attributes, last offset delta, base and max timestamp, producer id, epoch and base
    sequence, record count."""
    return (0, 0, 0, 2, 0, 0, count - 1, now, now, NO_PRODUCER_ID, NO_PRODUCER_EPOCH,
            NO_SEQUENCE, count)


__all__ = ["Coordinator", "CoordinatorRuntime", "StateCore", "StateLog", "StateLogs", "Write",
           "store_error"]
