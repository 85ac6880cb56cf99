"""The one test driver of the coordinator: the real runtime over in-memory logs, on a
manual clock. No sockets, no sleeps; ``advance`` moves the clock and runs every deadline
that passed, through the same scheduler the broker uses."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkalite.coordinator.classic.group import GroupMetadata
from kafkalite.coordinator.classic.membership import JoinRequest
from kafkalite.coordinator.classic.states import COMPLETING, PREPARING
from kafkalite.coordinator.config import CoreConfig
from kafkalite.coordinator.consumer.lifecycle import ConsumerHeartbeatRequest
from kafkalite.coordinator.core import GroupCoordinatorCore
from kafkalite.coordinator.group_service import GroupService
from kafkalite.coordinator.offsets.store import CommittedOffset
from kafkalite.coordinator.results import PARKED, ConsumerHeartbeatResult, Outcome
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.coordinator.topics_image import TopicChange, TopicEvent
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.records import iter_records
from kafkalite.storage.errors import RecordTooLargeError
from kafkalite.timekeeping.clock import ManualClock
from kafkalite.timekeeping.scheduler import Scheduler

from .memlog import MemoryLogs

GROUP = "g"
SESSION = 1000
REBALANCE = 5000
DELAY = 100
START = 1_000_000

#: The exception beneath the log that makes the runtime answer each mapped error.
FAILURES: dict[ErrorCode, BaseException] = {
    ErrorCode.not_coordinator: OSError(28, "No space left on device"),
    ErrorCode.coordinator_not_available: TimeoutError("append timed out"),
    ErrorCode.unknown_server_error: RecordTooLargeError("record too large"),
}


class Box:
    """A parked response's waiter: remembers what it was answered."""

    def __init__(self) -> None:
        self.value: Any = None
        self.calls = 0

    def __call__(self, value: Any) -> None:
        self.value = value
        self.calls += 1

    @property
    def done(self) -> bool:
        return self.calls > 0


class RecordingLogs(MemoryLogs):
    """In-memory logs that can fail every append with a chosen error."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_with: ErrorCode | None = None
        #: (partition, batch) of every append, in order.
        self.appends: list[tuple[int, bytes]] = []

    def get_or_create(self, topic: str, partition: int) -> Any:
        log = super().get_or_create(topic, partition)
        outer = self

        def fail(batch: bytes) -> None:
            if outer.fail_with is not None:
                raise FAILURES[outer.fail_with]
            outer.appends.append((partition, batch))

        log.fail = fail
        return log


def decode_records(batch: bytes) -> list[tuple[co.RecordKey, co.RecordValue | None]]:
    out = []
    for _h, r in iter_records(batch):
        assert r.key is not None
        k = co.decode_key(r.key, consumer_groups=True)
        out.append((k, co.decode_value(k, r.value)))
    return out


def topic_id(name: str) -> uuid.UUID:
    """The id the harness gives a topic: the same on every run, so records can be spelled."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafkalite:{name}")


@dataclass
class Harness:
    runtime: CoordinatorRuntime
    groups: GroupService
    clock: ManualClock
    logs: RecordingLogs
    config: CoreConfig
    seen_batches: int = 0
    #: The broker's topics: name -> partition count.
    topics: dict[str, int] = field(default_factory=dict)

    @classmethod
    def make(cls, logs: RecordingLogs | None = None, start: int = START,
             retention_check_ms: int = 60_000, topics: Mapping[str, int] | None = None,
             **cfg: Any) -> Harness:
        base: dict[str, Any] = dict(
            num_partitions=4, min_session_timeout_ms=10, max_session_timeout_ms=60000,
            initial_rebalance_delay_ms=DELAY,
        )
        base.update(cfg)
        config = CoreConfig(**base)
        ids = itertools.count(1)
        clock = ManualClock(start)
        scheduler = Scheduler(clock)
        core = GroupCoordinatorCore(config, scheduler.timers, new_id=lambda: f"id{next(ids)}")
        logs = logs if logs is not None else RecordingLogs()
        runtime = CoordinatorRuntime(core, logs, scheduler)
        groups = GroupService(runtime, core, retention_check_interval_ms=retention_check_ms)
        h = cls(runtime, groups, clock, logs, config, topics=dict(topics or {}))
        core.set_topics([TopicChange(TopicEvent.CREATED, n, topic_id(n), c)
                         for n, c in h.topics.items()], start)
        exists = bool(logs.logs)
        asyncio.run(runtime.load_all(exists=exists))
        h.seen_batches = len(logs.appends)
        return h

    def reload(self) -> Harness:
        """A fresh core and runtime loaded from what this one wrote, at the same time."""
        return Harness.make(self.logs, start=self.clock.now_ms(), topics=self.topics,
                            **_cfg_dict(self.config))

    # --- the clock and the log ---------------------------------------------------------

    @property
    def core(self) -> GroupCoordinatorCore:
        return self.groups.core

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    @now.setter
    def now(self, value: int) -> None:
        """Move the clock without running deadlines (as if a request arrived later)."""
        self.clock.advance(value - self.clock.now_ms())

    def advance(self, ms: int) -> None:
        self.runtime.scheduler.advance(ms)

    @property
    def fail_with(self) -> ErrorCode | None:
        return self.logs.fail_with

    @fail_with.setter
    def fail_with(self, err: ErrorCode | None) -> None:
        self.logs.fail_with = err

    @property
    def written(self) -> list[list[tuple[co.RecordKey, co.RecordValue | None]]]:
        """The records of each append since this harness was made, in order."""
        return [decode_records(b) for _p, b in self.logs.appends[self.seen_batches:]]

    def run(self, out: Outcome) -> Any:
        return self.runtime.run(out)

    # --- requests --------------------------------------------------------------------

    def join(self, member_id: str = "", *, group: str = GROUP, instance: str | None = None,
             protocols: list[tuple[str, bytes]] | None = None, session: int = SESSION,
             rebalance: int = REBALANCE, protocol_type: str = "consumer",
             require_known: bool = False, client_id: str = "c") -> Box:
        box = Box()
        resp = self.run(self.core.join(self.now, box, JoinRequest(
            group_id=group, member_id=member_id, group_instance_id=instance,
            require_known_member_id=require_known, client_id=client_id,
            client_host="/127.0.0.1", rebalance_timeout_ms=rebalance,
            session_timeout_ms=session, protocol_type=protocol_type,
            protocols=protocols if protocols is not None else [("range", b"m")],
            reason="test",
        )))
        if resp is not PARKED:
            box(resp)
        return box

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None,
             *, group: str = GROUP, instance: str | None = None,
             protocol_type: str | None = None, protocol_name: str | None = None) -> Box:
        box = Box()
        resp = self.run(self.core.sync(
            self.now, box, group_id=group, generation=generation, member_id=member_id,
            group_instance_id=instance, protocol_type=protocol_type,
            protocol_name=protocol_name, assignments=assignments or {},
        ))
        if resp is not PARKED:
            box(resp)
        return box

    def heartbeat(self, member_id: str, generation: int, *, group: str = GROUP,
                  instance: str | None = None) -> ErrorCode:
        err: ErrorCode = self.runtime.groups.read(
            lambda g, now: g.heartbeat(now, group, member_id, instance, generation))
        return err

    def leave(self, *members: tuple[str, str | None], group: str = GROUP) -> Any:
        return self.run(self.core.leave(self.now, group, [(m, i, "bye") for m, i in members]))

    # --- consumer groups (KIP-848) ----------------------------------------------------

    def cg(self, member_id: str, epoch: int, *, group: str = GROUP,
           names: Sequence[str] | None = None, regex: str | None = None,
           owned: Sequence[tuple[uuid.UUID, Sequence[int]]] | None = None,
           instance: str | None = None, rebalance: int | None = None,
           assignor: str | None = None, version: int = 1, client_id: str = "c",
           may_describe: Any = None) -> ConsumerHeartbeatResult:
        """One ConsumerGroupHeartbeat. A join (epoch 0) sends what a join must: the
        rebalance timeout and an empty owned list."""
        if epoch == 0:
            owned = [] if owned is None else owned
            rebalance = REBALANCE if rebalance is None else rebalance
        res = self.run(self.core.consumer_group_heartbeat(self.now, ConsumerHeartbeatRequest(
            group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance,
            rebalance_timeout_ms=-1 if rebalance is None else rebalance,
            subscribed_topic_names=names, subscribed_topic_regex=regex,
            server_assignor=assignor, topic_partitions=owned, client_id=client_id,
            client_host="/127.0.0.1", api_version=version, may_describe=may_describe)))
        assert isinstance(res, ConsumerHeartbeatResult), res
        return res

    def cgroup(self, group: str = GROUP) -> Any:
        return self.core.consumer_group(group)

    def _topic_event(self, event: TopicEvent, name: str, partitions: int) -> None:
        self.groups.on_topic_change(TopicChange(event, name, topic_id(name), partitions))

    def create_topic(self, name: str, partitions: int) -> None:
        self.topics[name] = partitions
        self._topic_event(TopicEvent.CREATED, name, partitions)

    def grow_topic(self, name: str, partitions: int) -> None:
        self.topics[name] = partitions
        self._topic_event(TopicEvent.CHANGED, name, partitions)

    def delete_topic(self, name: str) -> None:
        self._topic_event(TopicEvent.DELETED, name, self.topics.pop(name))

    def settle(self, boxes: list[Box]) -> None:
        """Advance by the initial delay until every box is answered (each join extends)."""
        for _ in range(100):
            if all(b.done for b in boxes):
                return
            self.advance(DELAY)

    # --- shortcuts -------------------------------------------------------------------

    def group(self, group: str = GROUP) -> Any:
        return self.core.group(group)

    def stable_group(self, n: int, **kw: Any) -> list[str]:
        """Form a Stable group of ``n`` dynamic members; returns their ids, leader first."""
        boxes = [self.join(**kw) for _ in range(n)]
        self.settle(boxes)
        assert all(b.done for b in boxes), [b.value for b in boxes]
        ids = [b.value.member_id for b in boxes]
        g = self.group()
        gen = g.generation
        leader = g.leader_id
        syncs = [self.sync(m, gen, {x: x.encode() for x in ids} if m == leader else None)
                 for m in ids]
        assert all(s.done and s.value.error is ErrorCode.none for s in syncs)
        assert g.state.value == "Stable"
        return [leader] + [m for m in ids if m != leader]


def _cfg_dict(cfg: CoreConfig) -> dict[str, Any]:
    return {name: getattr(cfg, name) for name in CoreConfig.__slots__}


# --- persisted state -------------------------------------------------------------------


def persisted_group(g: GroupMetadata) -> tuple[Any, ...]:
    """What a group's record keeps: compared between a live core and one reloaded."""
    return (
        g.group_id, g.state, g.generation, g.protocol_type, g.protocol_name, g.leader_id,
        tuple(sorted((m.member_id, m.group_instance_id, m.client_id, m.client_host,
                      m.rebalance_timeout_ms, m.session_timeout_ms,
                      m.metadata(g.protocol_name), m.assignment)
                     for m in g.members.values())),
    )


def persisted_state(core: GroupCoordinatorCore
                    ) -> tuple[dict[str, tuple[Any, ...]], dict[str, dict[Any, CommittedOffset]]]:
    """(settled groups, committed offsets). A group in the middle of a rebalance is left
    out: its next record is not written yet, so a reload shows its last settled generation
    (see ``check_replay``)."""
    groups = {g.group_id: persisted_group(g) for g in core.groups()
              if g.state not in (PREPARING, COMPLETING)}
    return groups, {gid: dict(o) for gid, o in core.offsets.by_group.items()}


def persisted_consumer_groups(core: GroupCoordinatorCore) -> dict[str, tuple[Any, ...]]:
    """Everything a consumer group's records keep, per group."""
    return {g.group_id: (g.group_epoch, g.assignment_epoch, dict(g.members),
                         {m: dict(a) for m, a in g.target_assignment.items()},
                         dict(g.subscription_metadata), dict(g.resolved_regexes),
                         dict(g.static_members), dict(g.partition_epochs))
            for g in core.consumer_groups()}


def check_replay(h: Harness) -> None:
    """A core rebuilt from the written records holds the live core's persisted state."""
    reloaded = h.reload()
    assert persisted_consumer_groups(reloaded.core) == persisted_consumer_groups(h.core)
    live_groups, live_offsets = persisted_state(h.core)
    groups, offsets = persisted_state(reloaded.core)
    assert offsets == live_offsets
    for gid, state in live_groups.items():
        assert groups.get(gid) == state, gid
    for g in h.core.groups():
        r = reloaded.core.group(g.group_id)
        if g.state in (PREPARING, COMPLETING):
            assert r is None or r.generation <= g.generation
        else:
            assert r is not None
    for g in reloaded.core.groups():
        assert h.core.group(g.group_id) is not None, g.group_id
