"""Task assignment as Kafka 4.4's ``StickyTaskAssignor`` does it.

Active tasks, sorted by partition then subtopology: first each goes back to the member
whose previous target had it, while that member is under its share of active tasks; then
to the least loaded of its standby candidates (members whose previous target had it as a
standby, then members reporting offsets for it, the most caught-up first), under the same
share; the rest, sorted by subtopology then partition, to the least loaded process (load:
tasks per member of the process) and, in it, to its least loaded member. The shares shrink
as members fill up, as Kafka's quotas do.

Standby tasks (``streams.num.standby.replicas`` of them for each task of a stateful
subtopology), never on a process that has the task already: first the previous active
owner, then the least loaded standby candidate, under each member's share of all tasks;
replicas left over go to the least loaded processes. Kafka 4.4 assigns no warm-up tasks
(its refiner returns the target as the assignor computed it), and neither does this.

Kafka breaks ties by hash map and heap order; here ties go to the lower process or member
id, so the result is the same task counts, not always the same members.

Pure: members in, each member's target tasks out.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import structlog

from .topology import NO_TASK_TUPLE, NO_TASKS, Task, Tasks, TaskTuple

log = structlog.get_logger("kafkalite.coordinator")


@dataclass(frozen=True, slots=True)
class AssignorMember:
    member_id: str
    process_id: str
    #: The member's previous target (the stickiness).
    previous: TaskTuple = NO_TASK_TUPLE
    #: The changelog offset sums the member last reported per task (its local state).
    task_offsets: Mapping[Task, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Process:
    pid: str
    counts: dict[str, int] = field(default_factory=dict)
    active: dict[str, set[Task]] = field(default_factory=dict)
    standby: dict[str, set[Task]] = field(default_factory=dict)
    tasks: set[Task] = field(default_factory=set)
    task_count: int = 0

    @property
    def load(self) -> float:
        return self.task_count / len(self.counts) if self.counts else -1.0

    def add(self, mid: str, task: Task, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(mid, set()).add(task)
        self.counts[mid] += 1
        return self.counts[mid]

    def add_to_least_loaded(self, task: Task, active: bool) -> int:
        if not self.counts:
            return -1
        mid = min(self.counts, key=lambda m: (self.counts[m], m))
        return self.add(mid, task, active)


@dataclass(slots=True)
class _Quota:
    """Kafka's per-member share: ceil(tasks left / members with room), recomputed each
    time a member reaches it."""

    tasks: int
    members: int
    per_member: int = 0

    def __post_init__(self) -> None:
        self.per_member = _ceil_div(self.tasks, self.members)

    def filled(self, count: int) -> None:
        if count == self.per_member:
            self.members -= 1
            self.tasks -= count
            self.per_member = _ceil_div(self.tasks, self.members)


def _ceil_div(n: int, d: int) -> int:
    return 0 if d <= 0 else -(-n // d)


@dataclass(slots=True)
class _State:
    processes: dict[str, _Process]
    prev_active: dict[Task, tuple[str, str]]  # task -> (process, member)
    candidates: dict[Task, list[tuple[str, str]]]
    active_quota: _Quota
    total_quota: _Quota

    def least_loaded_candidate(self, members: Sequence[tuple[str, str]] | None,
                               standby_of: Task | None) -> tuple[str, str] | None:
        """Kafka's ``findPrevMemberWithLeastLoad``: the first candidate, replaced only by
        one lower both in process load and member load."""
        best: tuple[str, str] | None = None
        best_loads = (0.0, 0)
        for pid, mid in members or ():
            p = self.processes[pid]
            if standby_of is not None and standby_of in p.tasks:
                continue
            loads = (p.load, p.counts[mid])
            if best is None or (loads[0] < best_loads[0] and loads[1] < best_loads[1]):
                best, best_loads = (pid, mid), loads
        return best

    def add(self, pid: str, mid: str, task: Task, active: bool) -> None:
        n = self.processes[pid].add(mid, task, active)
        if active:
            self.active_quota.filled(n)
        self.total_quota.filled(n)


def assign(members: Sequence[AssignorMember], task_counts: Mapping[str, int],
           stateful: frozenset[str] = frozenset(), num_standby_replicas: int = 0
           ) -> dict[str, TaskTuple]:
    if not members:
        return {}
    ordered = sorted(members, key=lambda m: m.member_id)
    processes: dict[str, _Process] = {}
    prev_active: dict[Task, tuple[str, str]] = {}
    ranked: dict[Task, list[tuple[bool, int, int, tuple[str, str]]]] = {}
    for i, m in enumerate(ordered):
        processes.setdefault(m.process_id, _Process(m.process_id)).counts[m.member_id] = 0
        who = (m.process_id, m.member_id)
        for t in m.previous.active:
            prev_active[t] = who
        for t in m.previous.standby:
            ranked.setdefault(t, []).append((False, -m.task_offsets.get(t, 0), i, who))
        # Offsets for tasks the member does not hold as a standby: state on its disk,
        # a weaker candidate.
        for t, offset in m.task_offsets.items():
            if t not in m.previous.standby:
                ranked.setdefault(t, []).append((True, -offset, i, who))
    candidates = {t: [who for *_k, who in sorted(c)] for t, c in ranked.items()}
    tasks = [(s, p) for s, n in task_counts.items() for p in range(n)]
    n_active = len(tasks)
    n_total = n_active + num_standby_replicas * sum(
        n for s, n in task_counts.items() if s in stateful)
    state = _State(processes, prev_active, candidates, _Quota(n_active, len(members)),
                   _Quota(n_total, len(members)))
    _assign_active(state, tasks)
    if num_standby_replicas > 0:
        _assign_standby(state, [t for t in tasks if t[0] in stateful], num_standby_replicas)
    out: dict[str, TaskTuple] = {}
    for m in ordered:
        p = processes[m.process_id]
        out[m.member_id] = TaskTuple(frozenset(p.active.get(m.member_id, ())),
                                     frozenset(p.standby.get(m.member_id, ())), NO_TASKS)
    return out


def _assign_active(state: _State, tasks: list[Task]) -> None:
    left = sorted(tasks, key=lambda t: (t[1], t[0]))
    # 1. Back to the previous owner, within its share.
    rest = []
    for t in left:
        prev = state.prev_active.get(t)
        if prev is not None and state.processes[prev[0]].counts[prev[1]] < \
                state.active_quota.per_member:
            state.add(prev[0], prev[1], t, True)
        else:
            rest.append(t)
    # 2. To the least loaded member that had it as a standby (or has its state).
    left, rest = rest, []
    for t in left:
        c = state.least_loaded_candidate(state.candidates.get(t), None)
        if c is not None and state.processes[c[0]].counts[c[1]] < \
                state.active_quota.per_member:
            state.add(c[0], c[1], t, True)
        else:
            rest.append(t)
    # 3. The rest to the least loaded process, range-like.
    heap = [(p.load, pid) for pid, p in state.processes.items()]
    heapq.heapify(heap)
    for t in sorted(rest):
        _load, pid = heapq.heappop(heap)
        p = state.processes[pid]
        n = p.add_to_least_loaded(t, True)
        state.active_quota.filled(n)
        state.total_quota.filled(n)
        heapq.heappush(heap, (p.load, pid))


def _assign_standby(state: _State, tasks: list[Task], replicas: int) -> None:
    to_least_loaded: list[tuple[Task, int]] = []
    for t in sorted(tasks, key=lambda t: (t[1], t[0]), reverse=True):
        for i in range(replicas):
            prev = state.prev_active.get(t)
            if prev is not None:
                p = state.processes[prev[0]]
                if t not in p.tasks and p.counts[prev[1]] < state.total_quota.per_member:
                    state.add(prev[0], prev[1], t, False)
                    continue
            c = state.least_loaded_candidate(state.candidates.get(t), t)
            if c is not None and state.processes[c[0]].counts[c[1]] < \
                    state.total_quota.per_member:
                state.add(c[0], c[1], t, False)
                continue
            to_least_loaded.append((t, replicas - i))
            break
    heap = [(p.load, pid) for pid, p in state.processes.items()]
    heapq.heapify(heap)
    for t, remaining in sorted(to_least_loaded, reverse=True):
        for i in range(remaining):
            if not _standby_to_least_loaded(state, heap, t):
                log.warning("streams_group.standby_unassigned", task=f"{t[0]}_{t[1]}",
                            missing=remaining - i,
                            standby_replicas=replicas)
                break


def _standby_to_least_loaded(state: _State, heap: list[tuple[float, str]], t: Task) -> bool:
    """The least loaded process without ``t`` takes it as a standby; False: none can."""
    popped: list[str] = []
    found = False
    while heap:
        _load, pid = heapq.heappop(heap)
        popped.append(pid)
        p = state.processes[pid]
        if t not in p.tasks:
            n = p.add_to_least_loaded(t, False)
            if n != -1:
                state.total_quota.filled(n)
                found = True
            break
    for pid in popped:
        heapq.heappush(heap, (state.processes[pid].load, pid))
    return found


def by_subtopology(tasks: Tasks) -> Mapping[str, tuple[int, ...]]:
    """Tasks as the protocol lists them: subtopology id -> sorted partitions."""
    out: dict[str, list[int]] = {}
    for s, p in tasks:
        out.setdefault(s, []).append(p)
    return {s: tuple(sorted(ps)) for s, ps in sorted(out.items())}
