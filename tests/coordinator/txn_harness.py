"""A thin driver for the transaction coordinator core on the broker's scheduler and a
manual clock: append to a list (as bytes, read back as the log would be), replay, answer.
No sockets, no sleeps. (The runtime takes this role in the broker.)"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkalite.coordinator.results import PARKED, Outcome
from kafkalite.coordinator.txn.state import TopicPartition
from kafkalite.coordinator.txn.transactions import TransactionCoordinatorCore, TxnConfig
from kafkalite.protocol import transaction_log as tl
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.names import TRANSACTION_STATE_TOPIC
from kafkalite.timekeeping.clock import ManualClock
from kafkalite.timekeeping.scheduler import Scheduler

from .harness import Box

TXN = "txn-1"
TIMEOUT = 60_000
PARTITIONS = 4
START = 1_000_000

Record = tuple[int, tl.TransactionLogKey, tl.TransactionLogValue | None]


class FakeMarkers:
    """Records every marker call; ``errors[tp]`` queues the answers for a partition."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int, bool, tuple[TopicPartition, ...]]] = []
        self.errors: dict[TopicPartition, list[ErrorCode]] = {}

    def write_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                      commit: bool, partitions: Sequence[TopicPartition],
                      transaction_version: int = 0) -> dict[TopicPartition, ErrorCode]:
        self.calls.append((producer_id, producer_epoch, coordinator_epoch, commit,
                           tuple(partitions)))
        out: dict[TopicPartition, ErrorCode] = {}
        for tp in partitions:
            queued = self.errors.get(tp)
            out[tp] = queued.pop(0) if queued else ErrorCode.none
        return out


@dataclass
class TxnHarness:
    core: TransactionCoordinatorCore
    markers: FakeMarkers
    scheduler: Scheduler
    #: Every record appended, in order: (partition, key, value).
    written: list[Record] = field(default_factory=list)
    #: The outcome of the next appends, in order (then they succeed): ``ErrorCode.none``
    #: lets one through, another code fails it.
    appends: list[ErrorCode] = field(default_factory=list)

    @classmethod
    def make(cls, *, first_pid: int = 1000, **cfg: Any) -> TxnHarness:
        base: dict[str, Any] = dict(num_partitions=PARTITIONS, offsets_partitions=8,
                                    max_timeout_ms=900_000)
        base.update(cfg)
        pids = itertools.count(first_pid)
        markers = FakeMarkers()
        scheduler = Scheduler(ManualClock(START))
        core = TransactionCoordinatorCore(TxnConfig(**base), scheduler.timers,
                                          allocate_producer_id=lambda: next(pids),
                                          markers=markers)
        h = cls(core, markers, scheduler)
        for kind, handler in core.timer_handlers().items():
            scheduler.handle(kind, lambda key, deadline, now, handler=handler: h.run(
                handler(key, deadline, now)))
        for p in range(base["num_partitions"]):
            core.begin_load(p)
            h.run(core.finish_load(p, h.now))
        return h

    def run(self, out: Outcome) -> Any:
        for waiter, resp in out.replies:
            waiter(resp)
        for w in out.writes:
            assert w.topic == TRANSACTION_STATE_TOPIC
            err = self.appends.pop(0) if self.appends else ErrorCode.none
            if err is ErrorCode.none:
                for key, value in w.records:
                    # What the log holds is bytes: replay what reads back.
                    k = tl.decode_key(tl.encode_key(key))
                    v = None if value is None else tl.decode_value(tl.encode_value(value))
                    self.written.append((w.partition, k, v))
                    self.core.replay(w.partition, k, v)
            if w.then is not None:
                self.run(w.then(err, self.now))
        return out.response

    def ask(self, request: Callable[[Box], Outcome]) -> Any:
        """Run one request (given its waiter); its answer, now or from a later reply."""
        box = Box()
        resp = self.run(request(box))
        if resp is not PARKED:
            box(resp)
        assert box.calls == 1
        return box.value

    @property
    def now(self) -> int:
        return self.scheduler.now()

    def wait(self, ms: int) -> None:
        """Let time pass without running deadlines (requests arrive at the new time)."""
        assert isinstance(self.scheduler.clock, ManualClock)
        self.scheduler.clock.advance(ms)

    def advance(self, ms: int) -> None:
        """Let time pass and run every deadline it crosses."""
        self.scheduler.advance(ms)

    def records(self, since: int = 0) -> list[tuple[str, tl.TransactionLogValue | None]]:
        return [(k.transactional_id, v) for _p, k, v in self.written[since:]]

    # --- requests ------------------------------------------------------------------------

    def init(self, tid: str | None = TXN, *, timeout: int = TIMEOUT, pid: int = -1,
             epoch: int = -1, version: int = 4) -> Any:
        return self.ask(lambda box: self.core.init_producer_id(
            self.now, box, transactional_id=tid, transaction_timeout_ms=timeout,
            producer_id=pid, producer_epoch=epoch, version=version))

    def add(self, pid: int, epoch: int, *parts: TopicPartition, tid: str = TXN,
            version: int = 3) -> Any:
        return self.ask(lambda box: self.core.add_partitions(
            self.now, box, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
            partitions=parts, version=version))

    def add_offsets(self, pid: int, epoch: int, group: str, *, tid: str = TXN,
                    version: int = 3) -> Any:
        return self.ask(lambda box: self.core.add_offsets(
            self.now, box, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
            group_id=group, version=version))

    def end(self, pid: int, epoch: int, commit: bool, *, tid: str = TXN,
            version: int = 4) -> Any:
        return self.ask(lambda box: self.core.end_txn(
            self.now, box, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
            committed=commit, version=version))

    def describe(self, *tids: str) -> Any:
        return self.run(self.core.describe_transactions(tids))

    def state(self, tid: str = TXN) -> str:
        meta = self.core.transaction(tid)
        assert meta is not None
        return meta.state.label

    def reload(self, tid: str = TXN, *extra: tl.TransactionLogValue | None,
               coordinator_epoch: int = 0) -> None:
        """Load ``tid``'s partition again from the records written so far (plus ``extra``
        records for ``tid``, as if found in the log): what a restart does."""
        p = self.core.partition_for(tid)
        for value in extra:
            self.written.append((p, tl.TransactionLogKey(tid), value))
        self.core.begin_load(p, coordinator_epoch)
        for q, k, v in self.written:
            if q == p:
                self.core.replay(q, k, v)
        self.run(self.core.finish_load(p, self.now))

    def rebuilt(self) -> TransactionCoordinatorCore:
        """A fresh core loaded from the written records (no markers are due)."""
        core = TransactionCoordinatorCore(self.core.config, allocate_producer_id=lambda: -1,
                                          markers=FakeMarkers())
        for p in range(self.core.config.num_partitions):
            core.begin_load(p)
        for p, k, v in self.written:
            core.replay(p, k, v)
        for p in range(self.core.config.num_partitions):
            out = core.finish_load(p, self.now)
            assert not out.writes, "a completed log needs no completion on load"
        return core


def val(pid: int, epoch: int, state: int, parts: Sequence[TopicPartition] = (), *, last: int,
        start: int = -1, prev: int | None = None, nxt: int = -1, ctv: int = 0,
        timeout: int = TIMEOUT) -> tl.TransactionLogValue:
    """The TransactionLogValue v1 expected for a transition (``prev`` defaults to ``pid``:
    Kafka records the producer id held before the transition)."""
    grouped: dict[str, list[int]] = {}
    for topic, p in sorted(parts):
        grouped.setdefault(topic, []).append(p)
    partitions = None if state == 0 else tuple(
        tl.TxnTopicPartitions(t, tuple(ps)) for t, ps in grouped.items())
    return tl.TransactionLogValue(pid, epoch, timeout, state, partitions, last, start,
                                  pid if prev is None else prev, nxt, ctv)
