"""Active task assignment as Kafka 4.4's ``StickyTaskAssignor`` does it for active tasks: a
task stays with the member that has it while that member is within its share, then every
other task goes to the least loaded process (load: tasks per member of the process) and,
in it, to its least loaded member. Standby and warm-up tasks are not assigned
(docs/compatibility.md).

Pure: members in, each member's target tasks out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .topology import Task, Tasks


@dataclass(frozen=True, slots=True)
class AssignorMember:
    member_id: str
    process_id: str
    #: The active tasks the member has now (the stickiness).
    active: Tasks


def assign(members: Sequence[AssignorMember], tasks: Sequence[Task]) -> dict[str, Tasks]:
    if not members:
        return {}
    by_id = {m.member_id: m for m in members}
    out: dict[str, set[Task]] = {m.member_id: set() for m in members}
    process_members: dict[str, list[str]] = {}
    for m in sorted(members, key=lambda m: m.member_id):
        process_members.setdefault(m.process_id, []).append(m.member_id)
    cap = math.ceil(len(tasks) / len(members))
    wanted = set(tasks)
    # Sticky first: a task stays with its owner while the owner is under its share.
    taken: set[Task] = set()
    for mid in sorted(by_id):
        for t in sorted(by_id[mid].active):
            if t in wanted and t not in taken and len(out[mid]) < cap:
                out[mid].add(t)
                taken.add(t)

    def process_load(pid: str) -> float:
        ms = process_members[pid]
        return sum(len(out[m]) for m in ms) / len(ms)

    for t in tasks:
        if t in taken:
            continue
        pid = min(process_members, key=lambda p: (process_load(p), p))
        mid = min(process_members[pid], key=lambda m: (len(out[m]), m))
        out[mid].add(t)
        taken.add(t)
    return {mid: frozenset(ts) for mid, ts in out.items()}


def by_subtopology(tasks: Tasks) -> Mapping[str, tuple[int, ...]]:
    """Tasks as the protocol lists them: subtopology id -> sorted partitions."""
    out: dict[str, list[int]] = {}
    for s, p in tasks:
        out.setdefault(s, []).append(p)
    return {s: tuple(sorted(ps)) for s, ps in sorted(out.items())}
