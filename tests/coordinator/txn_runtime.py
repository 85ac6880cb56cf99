"""Both coordinator cores on the real runtime, as the broker composes them: the group core
over ``__consumer_offsets`` and the transaction core over ``__transaction_state``, in
memory logs, on a manual clock; markers go to data partitions' memory logs and, for
``__consumer_offsets``, through the group service's ``complete_transaction``. No sockets, no
sleeps."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from typing import Any

from kafkalite.coordinator.config import CoreConfig
from kafkalite.coordinator.core import GroupCoordinatorCore
from kafkalite.coordinator.group_service import GroupService
from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit
from kafkalite.coordinator.results import PARKED, Outcome
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.coordinator.state_topics import StateTopic
from kafkalite.coordinator.txn.markers import LocalMarkerWriter
from kafkalite.coordinator.txn.transactions import (
    TRANSACTION_CODEC,
    TransactionCoordinatorCore,
    TxnConfig,
)
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.control import read_end_txn_marker
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.names import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from kafkalite.protocol.records import BatchHeader, decode_batch, iter_batch_headers
from kafkalite.timekeeping.clock import ManualClock
from kafkalite.timekeeping.scheduler import Scheduler

from .harness import Box, RecordingLogs
from .memlog import MemoryLog

START = 1_000_000
TXN = "txn-1"
GROUP = "g"
TOPIC = "t"
OFFSETS_PARTITIONS = 4
TXN_PARTITIONS = 4


@dataclass
class Both:
    runtime: CoordinatorRuntime
    clock: ManualClock
    logs: RecordingLogs
    txn: TransactionCoordinatorCore
    core: GroupCoordinatorCore

    @classmethod
    def make(cls, logs: RecordingLogs | None = None, start: int = START,
             **txn_cfg: Any) -> Both:
        clock = ManualClock(start)
        scheduler = Scheduler(clock)
        ids = itertools.count(1)
        core = GroupCoordinatorCore(
            CoreConfig(num_partitions=OFFSETS_PARTITIONS, min_session_timeout_ms=10,
                       initial_rebalance_delay_ms=0),
            scheduler.timers, new_id=lambda: f"m{next(ids)}")
        logs = logs if logs is not None else RecordingLogs()
        fresh = not logs.logs
        for p in range(2):  # the data partitions markers go to
            logs.get_or_create(TOPIC, p)
        runtime = CoordinatorRuntime(core, logs, scheduler)
        groups = GroupService(runtime, core)
        pids = itertools.count(1000)
        cfg = TxnConfig(num_partitions=TXN_PARTITIONS, offsets_partitions=OFFSETS_PARTITIONS,
                        **txn_cfg)
        txn = TransactionCoordinatorCore(
            cfg, scheduler.timers, allocate_producer_id=lambda: next(pids),
            markers=LocalMarkerWriter(lambda t, p: logs.logs.get((t, p)), groups),
            group_partition_for=core.partition_for)
        runtime.serve(StateTopic(TRANSACTION_STATE_TOPIC, TXN_PARTITIONS, txn,
                                 TRANSACTION_CODEC, lambda: None), txn)
        asyncio.run(runtime.load_all(exists=not fresh))
        return cls(runtime, clock, logs, txn, core)

    def reload(self) -> Both:
        """Fresh cores and runtime loaded from what this one wrote: a restart."""
        return Both.make(self.logs, start=self.clock.now_ms())

    # --- plumbing ------------------------------------------------------------------------

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    def advance(self, ms: int) -> None:
        self.runtime.scheduler.advance(ms)

    def ask(self, start: Any) -> Any:
        box = Box()
        resp = self.runtime.run(start(box))
        if resp is not PARKED:
            box(resp)
        assert box.calls == 1
        return box.value

    def run(self, out: Outcome) -> Any:
        return self.runtime.run(out)

    def log(self, topic: str, partition: int) -> MemoryLog:
        return self.logs.logs[(topic, partition)]

    @property
    def offsets_partition(self) -> int:
        return self.core.partition_for(GROUP)

    def batches(self, topic: str, partition: int) -> list[tuple[BatchHeader, list[Any]]]:
        """Every batch of a log: (header, its records decoded as the topic's)."""
        out = []
        for raw in self.log(topic, partition).batches:
            for pos, h in iter_batch_headers(raw):
                if h.is_control:
                    out.append((h, [read_end_txn_marker(raw[pos:pos + h.size])]))
                    continue
                _h, recs = decode_batch(raw, pos)
                if topic == OFFSETS_TOPIC:
                    keys = [co.decode_key(r.key) for r in recs if r.key is not None]
                    out.append((h, [(k, co.decode_value(k, r.value))
                                    for k, r in zip(keys, recs, strict=True)]))
                else:
                    out.append((h, [r.value for r in recs]))
        return out

    # --- requests --------------------------------------------------------------------------

    def init(self, tid: str = TXN, timeout: int = 60_000) -> tuple[int, int]:
        r = self.ask(lambda box: self.txn.init_producer_id(
            self.now, box, transactional_id=tid, transaction_timeout_ms=timeout, version=4))
        assert r.error is ErrorCode.none, r
        return r.producer_id, r.producer_epoch

    def add(self, pid: int, epoch: int, *parts: tuple[str, int], tid: str = TXN) -> Any:
        return self.ask(lambda box: self.txn.add_partitions(
            self.now, box, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
            partitions=parts))

    def add_offsets(self, pid: int, epoch: int, group: str = GROUP, tid: str = TXN) -> Any:
        return self.ask(lambda box: self.txn.add_offsets(
            self.now, box, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
            group_id=group))

    def end(self, pid: int, epoch: int, commit: bool, tid: str = TXN, version: int = 4) -> Any:
        return self.ask(lambda box: self.txn.end_txn(
            self.now, box, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
            committed=commit, version=version))

    def txn_commit(self, pid: int, epoch: int, offsets: dict[tuple[str, int], int],
                   group: str = GROUP, generation: int = -1, member: str = "",
                   instance: str | None = None) -> dict[tuple[str, int], ErrorCode]:
        topics: dict[str, list[PartitionCommit]] = {}
        for (t, p), o in offsets.items():
            topics.setdefault(t, []).append(PartitionCommit(p, o, -1, ""))
        req = CommitRequest(group, member, instance, generation, topics=list(topics.items()),
                            api_version=3)
        result: dict[tuple[str, int], ErrorCode] = self.run(
            self.core.commit_txn_offsets(self.now, req, pid, epoch))
        return result

    def commit(self, offsets: dict[tuple[str, int], int], group: str = GROUP) -> None:
        """A plain (simple-group) OffsetCommit."""
        topics: dict[str, list[PartitionCommit]] = {}
        for (t, p), o in offsets.items():
            topics.setdefault(t, []).append(PartitionCommit(p, o, -1, ""))
        errors = self.run(self.core.commit_offsets(
            self.now, CommitRequest(group, topics=list(topics.items()))))
        assert set(errors.values()) == {ErrorCode.none}, errors

    def fetch(self, *parts: tuple[str, int], stable: bool = False, group: str = GROUP
              ) -> dict[tuple[str, int], tuple[int, ErrorCode]]:
        topics: dict[str, list[int]] = {}
        for t, p in parts:
            topics.setdefault(t, []).append(p)
        err, rows = self.run(self.core.fetch_offsets(group, list(topics.items()), stable))
        assert err is ErrorCode.none
        return {(t, r[0]): (r[1], ErrorCode(r[4])) for t, rs in rows for r in rs}

    def state(self, tid: str = TXN) -> str:
        meta = self.txn.transaction(tid)
        assert meta is not None
        return meta.state.label


def group_state(core: GroupCoordinatorCore) -> tuple[Any, ...]:
    """The group side's persisted state: committed offsets and pending ones."""
    committed = {gid: dict(o) for gid, o in core.offsets.by_group.items()}
    pending = {k: {ok: (p.value, p.record_offset, p.superseded) for ok, p in v.items()}
               for k, v in core.pending.by_producer.items()}
    opened = {g: set(p) for g, p in core.pending.open_by_group.items() if p}
    return committed, pending, opened


def check_reload(h: Both) -> Both:
    """A restart from the logs holds the same transactions and group-side state."""
    again = h.reload()
    assert group_state(again.core) == group_state(h.core)
    assert again.txn.snapshot() == h.txn.snapshot()
    return again
