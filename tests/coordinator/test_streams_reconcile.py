"""The streams member state machine (Kafka 4.4's streams ``CurrentAssignmentBuilder``) as a
pure function: revocation before the epoch moves, unreleased tasks, a process never
holding a task twice, and the in-place role changes of active, standby and warm-up tasks
(warm-ups only reach a member through a target that has them)."""

from __future__ import annotations

from dataclasses import replace

from kafkalite.coordinator.streams.group import StreamsMember
from kafkalite.coordinator.streams.reconcile import (
    STABLE,
    UNRELEASED_TASKS,
    UNREVOKED_TASKS,
    Holders,
    reconcile,
)
from kafkalite.coordinator.streams.topology import Task, TaskTuple

T0, T1, T2 = ("0", 0), ("0", 1), ("0", 2)
NONE: frozenset[Task] = frozenset()


def holders(active: dict[Task, str] | None = None,
            standby: dict[Task, set[str]] | None = None,
            warmup: dict[Task, set[str]] | None = None) -> Holders:
    a, s, w = active or {}, standby or {}, warmup or {}
    return Holders(a.get, lambda t: frozenset(s.get(t, ())), lambda t: frozenset(w.get(t, ())))


def member(epoch: int = 1, active: frozenset[Task] = NONE, standby: frozenset[Task] = NONE,
           warmup: frozenset[Task] = NONE, state: str = STABLE) -> StreamsMember:
    return StreamsMember("m", member_epoch=epoch, previous_member_epoch=epoch - 1,
                         state=state, process_id="p1", active=active, standby=standby,
                         warmup=warmup)


def tt(active: set[Task] | None = None, standby: set[Task] | None = None,
       warmup: set[Task] | None = None) -> TaskTuple:
    return TaskTuple(frozenset(active or ()), frozenset(standby or ()),
                     frozenset(warmup or ()))


def test_a_reconciled_member_stays() -> None:
    m = member(2, frozenset({T0}))
    assert reconcile(m, 2, tt({T0}), None, holders()) is m


def test_revoke_first_then_the_target_epoch() -> None:
    m = member(1, frozenset({T0, T1}))
    h = holders({T0: "p1", T1: "p1"})
    # The member still owns T1: it keeps its epoch and only T0.
    r = reconcile(m, 2, tt({T0}), tt({T0, T1}), h)
    assert (r.state, r.member_epoch, r.active, r.revoking) == (
        UNREVOKED_TASKS, 1, frozenset({T0}), frozenset({T1}))
    # No report proves nothing.
    assert reconcile(r, 2, tt({T0}), None, h) is r
    done = reconcile(r, 2, tt({T0}), tt({T0}), h)
    assert (done.state, done.member_epoch, done.previous_member_epoch, done.active,
            done.revoking) == (STABLE, 2, 1, frozenset({T0}), NONE)


def test_a_report_without_the_revoked_tasks_skips_the_revocation_state() -> None:
    m = member(1, frozenset({T0, T1}))
    r = reconcile(m, 2, tt({T0}), tt({T0}), holders({T0: "p1", T1: "p1"}))
    assert (r.state, r.member_epoch, r.active) == (STABLE, 2, frozenset({T0}))


def test_tasks_another_member_holds_wait() -> None:
    m = member(1)
    # T0 is another member's active task (elsewhere); T1 is free.
    r = reconcile(m, 2, tt({T0, T1}), tt(), holders({T0: "p2"}))
    assert (r.state, r.member_epoch, r.active) == (UNRELEASED_TASKS, 2, frozenset({T1}))
    # Released: it comes on the next heartbeat.
    r = reconcile(r, 2, tt({T0, T1}), tt({T1}), holders({T1: "p1"}))
    assert (r.state, r.active) == (STABLE, frozenset({T0, T1}))


def test_a_process_never_holds_a_task_twice() -> None:
    m = member(1)
    # Another member of the same process has T0 as a standby: no active T0 here yet;
    # a standby T1 whose active task runs on this process (another member) waits too,
    # while a standby T2 active elsewhere is granted.
    h = holders({T1: "p1", T2: "p2"}, standby={T0: {"p1"}})
    r = reconcile(m, 2, tt({T0}, {T1, T2}), tt(), h)
    assert (r.state, r.active, r.standby) == (UNRELEASED_TASKS, NONE, frozenset({T2}))


def test_an_active_task_demoted_to_standby_keeps_its_state() -> None:
    m = member(1, frozenset({T0, T1}))
    h = holders({T0: "p1", T1: "p1"})
    r = reconcile(m, 2, tt({T0}, {T1}), tt({T0, T1}), h)
    # The standby is granted at once, the active one is still revoked.
    assert (r.state, r.active, r.standby, r.revoking) == (
        UNREVOKED_TASKS, frozenset({T0}), frozenset({T1}), frozenset({T1}))
    # Owning T1 as a standby is not owning it as an active task.
    done = reconcile(r, 2, tt({T0}, {T1}), tt({T0}, {T1}), h)
    assert (done.state, done.member_epoch, done.standby) == (STABLE, 2, frozenset({T1}))


def test_standby_and_warmup_convert_in_place() -> None:
    m = member(1, standby=frozenset({T0}), warmup=frozenset({T1}))
    h = holders(standby={T0: {"p1"}}, warmup={T1: {"p1"}})
    r = reconcile(m, 2, tt(None, {T1}, {T0}), tt(None, {T0}, {T1}), h)
    # No revocation: the roles swap in one step.
    assert (r.state, r.member_epoch, r.standby, r.warmup, r.revoking_standby,
            r.revoking_warmup) == (STABLE, 2, frozenset({T1}), frozenset({T0}), NONE, NONE)


def test_a_warmup_promoted_to_active_stays_until_the_task_is_released() -> None:
    m = member(1, warmup=frozenset({T0}))
    h = holders({T0: "p2"}, warmup={T0: {"p1"}})
    r = reconcile(m, 2, tt({T0}), tt(None, None, {T0}), h)
    # The active task is still the other member's: the member keeps its warm-up.
    assert (r.state, r.active, r.warmup, r.revoking_warmup) == (
        UNRELEASED_TASKS, NONE, frozenset({T0}), NONE)
    # Released: the warm-up becomes the active task.
    r = reconcile(r, 2, tt({T0}), tt(None, None, {T0}), holders(warmup={T0: {"p1"}}))
    assert (r.state, r.active, r.warmup) == (STABLE, frozenset({T0}), NONE)


def test_revoking_again_moves_the_epoch_by_one() -> None:
    """Kafka's UNREVOKED_TASKS step: once the member released its tasks, if the newer
    target asks it to revoke more, it waits again at its epoch plus one."""
    m = member(3, frozenset({T0}), state=UNREVOKED_TASKS)
    m = replace(m, revoking=frozenset({T1}))
    r = reconcile(m, 5, tt({T2}), tt({T0}), holders({T0: "p1"}))
    assert (r.state, r.member_epoch, r.revoking) == (UNREVOKED_TASKS, 4, frozenset({T0}))
