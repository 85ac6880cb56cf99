"""The runtime and scheduler on a real event loop with the system clock: one loop timer
armed for the earliest deadline, heartbeats that do not touch it, expiry off that timer,
and the log loaded back."""

from __future__ import annotations

import asyncio
from typing import Any

from kafkalite.coordinator.classic.membership import JoinRequest
from kafkalite.coordinator.classic.states import GroupState
from kafkalite.coordinator.config import CoreConfig
from kafkalite.coordinator.core import GroupCoordinatorCore
from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol.errors import ErrorCode as E
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.protocol.records import decode_batch
from kafkalite.timekeeping.clock import SystemClock
from kafkalite.timekeeping.scheduler import Scheduler

from .memlog import MemoryLogs

CFG = dict(num_partitions=2, min_session_timeout_ms=10, initial_rebalance_delay_ms=0)


def make(logs: MemoryLogs) -> CoordinatorRuntime:
    scheduler = Scheduler(SystemClock())
    rt = CoordinatorRuntime(GroupCoordinatorCore(CoreConfig(**CFG), scheduler.timers),
                            logs, scheduler)
    scheduler.start()
    return rt


def _core(rt: CoordinatorRuntime) -> GroupCoordinatorCore:
    core = rt.topics[OFFSETS_TOPIC].core
    assert isinstance(core, GroupCoordinatorCore)
    return core


def _stable_member(rt: CoordinatorRuntime, session_ms: int) -> str:
    answers: list[Any] = []
    rt.groups.write(lambda c, now: c.join(now, answers.append, JoinRequest(
        group_id="g", member_id="", group_instance_id=None,
        require_known_member_id=False, client_id="c", client_host="/h",
        rebalance_timeout_ms=session_ms, session_timeout_ms=session_ms,
        protocol_type="consumer", protocols=[("range", b"m")],
    )))
    [join] = answers
    assert join.error is E.none
    mid: str = join.member_id
    rt.groups.write(lambda c, now: c.sync(
        now, answers.append, group_id="g", generation=join.generation, member_id=mid,
        group_instance_id=None, protocol_type=None, protocol_name=None,
        assignments={mid: b"assigned"},
    ))
    assert answers[-1].error is E.none
    return mid


def test_heartbeats_leave_the_loop_timer_alone_and_expiry_fires() -> None:
    async def run() -> None:
        rt = make(MemoryLogs())
        await rt.load_all(exists=False)
        mid = _stable_member(rt, 150)
        handle = rt.scheduler._handle
        assert handle is not None
        core = _core(rt)
        for _ in range(1000):
            pushes = core.timers.pushes
            assert rt.groups.read(lambda c, now: c.heartbeat(now, "g", mid, None, 1)) is E.none
            assert core.timers.pushes == pushes
        assert rt.scheduler._handle is handle  # no re-arm, no task per heartbeat
        await asyncio.sleep(0.4)  # the member stops heartbeating: expired off the timer
        g = core.group("g")
        assert g is not None and g.state is GroupState.EMPTY and not g.members
        rt.scheduler.stop()
        await rt.stop()

    asyncio.run(run())


def test_records_in_the_log_load_back_into_a_stable_group() -> None:
    async def run() -> None:
        logs = MemoryLogs()
        rt = make(logs)
        await rt.load_all(exists=False)
        mid = _stable_member(rt, 30000)
        p = _core(rt).partition_for("g")
        batches = list(logs.get_or_create(OFFSETS_TOPIC, p).iter_batches())
        assert len(batches) == 1
        _h, [rec] = decode_batch(batches[0])
        assert rec.key == b"\x00\x02\x00\x01g" and rec.value is not None
        rt.scheduler.stop()
        await rt.stop()

        again = make(logs)
        await again.load_all(exists=True)
        g = _core(again).group("g")
        assert g is not None and g.state is GroupState.STABLE and g.generation == 1
        assert g.members[mid].assignment == b"assigned"
        assert _core(again).heartbeat(again.now(), "g", mid, None, 1) is E.none
        again.scheduler.stop()
        await again.stop()

    asyncio.run(run())


def test_the_internal_topic_is_ensured_before_the_first_write_only() -> None:
    async def run() -> None:
        logs = MemoryLogs()
        scheduler = Scheduler(SystemClock())
        ensured: list[int] = []
        rt = CoordinatorRuntime(GroupCoordinatorCore(CoreConfig(**CFG), scheduler.timers),
                                logs, scheduler, ensure_topic=lambda: ensured.append(1))
        await rt.load_all(exists=False)
        assert ensured == []  # loading creates nothing
        for offset in range(3):
            req = CommitRequest("g", topics=[("t", [PartitionCommit(0, offset)])])
            errors = rt.groups.write(lambda c, now, req=req: c.commit_offsets(now, req))
            assert errors == {("t", 0): E.none}
        assert ensured == [1]
        p = _core(rt).partition_for("g")
        assert len(list(logs.get_or_create(OFFSETS_TOPIC, p).iter_batches())) == 3
        rt.ensure_topic()  # FindCoordinator asks again: the topic's own check decides
        assert ensured == [1, 1]
        await rt.stop()

    asyncio.run(run())


def test_the_loop_timer_is_rearmed_when_a_deadline_moves_earlier_only() -> None:
    async def run() -> None:
        scheduler = Scheduler(SystemClock())
        fired: list[tuple[object, ...]] = []
        scheduler.handle("t", lambda key, _deadline, _now: fired.append(key))
        scheduler.start()
        timers, now = scheduler.timers, scheduler.now()
        timers.schedule(("t", "late"), now + 60_000)
        scheduler.rearm()
        armed = scheduler._handle
        assert armed is not None
        timers.schedule(("t", "late"), now + 120_000)  # later: rides on the armed handle
        scheduler.rearm()
        assert scheduler._handle is armed
        timers.schedule(("t", "soon"), scheduler.now() + 20)  # earlier: re-armed for it
        scheduler.rearm()
        assert scheduler._handle is not armed
        await asyncio.sleep(0.2)
        assert fired == [("t", "soon")]
        # A handle armed for a deadline that moved later fires early, runs nothing and
        # re-arms for the new deadline.
        timers.schedule(("t", "moved"), scheduler.now() + 20)
        scheduler.rearm()
        timers.schedule(("t", "moved"), scheduler.now() + 60_000)
        await asyncio.sleep(0.2)
        assert fired == [("t", "soon")]
        assert scheduler._handle is not None and ("t", "moved") in timers
        scheduler.stop()

    asyncio.run(run())
