"""A streams member's next current assignment toward its target, as Kafka 4.4's streams
``CurrentAssignmentBuilder`` computes it, for its active, standby and warm-up tasks:

- tasks in both the current and the target assignment stay; current tasks not in the
  target are to be revoked; target tasks not current are to be assigned unless another
  member still holds them (an active task anywhere, a standby or warm-up task on the same
  process; a process never runs a task twice): those wait (UNRELEASED_TASKS);
- a role change of the member's own task needs no revocation: an active task demoted to a
  standby, and a standby turned warm-up or back, are granted at once; a standby or warm-up
  promoted to active stays until the active task is granted;
- while tasks are to be revoked and the member's last report still owns any of them, it
  keeps its epoch and only the tasks it keeps (UNREVOKED_TASKS); once they are released it
  takes the target epoch with every task it can have.

Pure: the member, its target and who holds what in, the member's next state out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .topology import NO_TASKS, Task, Tasks, TaskTuple

if TYPE_CHECKING:
    from .group import StreamsMember

STABLE = "STABLE"
UNREVOKED_TASKS = "UNREVOKED_TASKS"
UNRELEASED_TASKS = "UNRELEASED_TASKS"


@dataclass(frozen=True, slots=True)
class Holders:
    """Who holds each task now (the group before this heartbeat): the process of its
    active owner, and the processes holding it as a standby or a warm-up."""

    active: Callable[[Task], str | None]
    standby: Callable[[Task], frozenset[str]]
    warmup: Callable[[Task], frozenset[str]]


def _released(owned: TaskTuple | None, pending: TaskTuple) -> bool:
    """Revocation is acknowledged: the member's report owns none of ``pending`` (no
    report proves nothing)."""
    if not pending:
        return True
    # Role by role, as Kafka's TasksTuple.containsAny: a demoted task owned as a standby
    # is a released active task.
    return owned is not None and not (owned.active & pending.active
                                      or owned.standby & pending.standby
                                      or owned.warmup & pending.warmup)


def reconcile(member: StreamsMember, target_epoch: int, target: TaskTuple,
              owned: TaskTuple | None, holders: Holders) -> StreamsMember:
    if member.state == UNREVOKED_TASKS:
        if not _released(owned, member.pending):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, owned, holders)
    if member.state == STABLE and member.member_epoch == target_epoch:
        return member
    return _next(member, member.member_epoch, target_epoch, target, owned, holders)


def _next(member: StreamsMember, epoch_if_revoking: int, target_epoch: int,
          target: TaskTuple, owned: TaskTuple | None, holders: Holders) -> StreamsMember:
    cur = member.assigned
    pid = member.process_id

    def other_on_process(holding: Callable[[Task], frozenset[str]], mine: Tasks,
                         t: Task) -> bool:
        return pid in holding(t) and t not in mine

    def active_unreleased(t: Task) -> bool:
        return (holders.active(t) is not None
                or other_on_process(holders.standby, cur.standby, t)
                or other_on_process(holders.warmup, cur.warmup, t))

    def standby_unreleased(t: Task) -> bool:
        return ((holders.active(t) == pid and t not in cur.active)
                or pid in holders.standby(t)
                or other_on_process(holders.warmup, cur.warmup, t))

    def warmup_unreleased(t: Task) -> bool:
        return (holders.active(t) == pid
                or other_on_process(holders.standby, cur.standby, t)
                or pid in holders.warmup(t))

    def diff(now: Tasks, want: Tasks, unreleased: Callable[[Task], bool]
             ) -> tuple[set[Task], set[Task], set[Task], bool]:
        keep = set(now & want)
        revoke = set(now - want)
        pending = {t for t in want - now if not unreleased(t)}
        return keep, revoke, pending, len(pending) != len(want - now)

    a_keep, a_revoke, a_new, a_wait = diff(cur.active, target.active, active_unreleased)
    s_keep, s_revoke, s_new, s_wait = diff(cur.standby, target.standby, standby_unreleased)
    w_keep, w_revoke, w_new, w_wait = diff(cur.warmup, target.warmup, warmup_unreleased)
    # Role changes of the member's own tasks, granted at once (the client recycles the
    # task): an active task demoted to a standby (the active one is still revoked), a
    # standby turned warm-up and back (nothing to revoke).
    for t in cur.active & s_new:
        s_new.discard(t)
        s_keep.add(t)
    for t in cur.standby & w_new:
        w_new.discard(t)
        w_keep.add(t)
        s_revoke.discard(t)
    for t in cur.warmup & s_new:
        s_new.discard(t)
        s_keep.add(t)
        w_revoke.discard(t)
    # A standby or warm-up promoted to active is never revoked; the member keeps it until
    # the active task is granted.
    s_revoke -= target.active
    w_revoke -= target.active
    pending = TaskTuple(frozenset(a_revoke), frozenset(s_revoke), frozenset(w_revoke))
    revoking = bool(pending) and not _released(owned, pending)
    for mine, keep in ((cur.standby, s_keep), (cur.warmup, w_keep)):
        for t in mine & target.active:
            if revoking or t not in a_new:
                keep.add(t)
    waiting = a_wait or s_wait or w_wait
    if revoking:
        return _build(member, UNREVOKED_TASKS, epoch_if_revoking,
                      TaskTuple(frozenset(a_keep), frozenset(s_keep), frozenset(w_keep)),
                      pending, target_epoch)
    state = UNRELEASED_TASKS if waiting else STABLE
    return _build(member, state, target_epoch,
                  TaskTuple(frozenset(a_keep | a_new), frozenset(s_keep | s_new),
                            frozenset(w_keep | w_new)), TaskTuple(), target_epoch)


def _build(member: StreamsMember, state: str, epoch: int, assigned: TaskTuple,
           pending: TaskTuple, target_epoch: int) -> StreamsMember:
    # An active task keeps the epoch it was assigned at; a new one takes the target's.
    old = member.task_epochs
    epochs = {t: old.get(t, target_epoch) for t in assigned.active | pending.active}
    # Kafka's updateMemberEpoch: the previous epoch is always the one it had.
    return replace(member, state=state, member_epoch=epoch, task_epochs=epochs,
                   previous_member_epoch=member.member_epoch, active=assigned.active,
                   standby=assigned.standby, warmup=assigned.warmup,
                   revoking=pending.active or NO_TASKS,
                   revoking_standby=pending.standby or NO_TASKS,
                   revoking_warmup=pending.warmup or NO_TASKS)
