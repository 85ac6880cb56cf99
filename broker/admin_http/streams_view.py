"""Streams groups (KIP-1071) as the admin API and the console show them: the group's
epochs, topology epoch and state, and each member's process, epoch, state, session deadline
and tasks (active, standby and warm-up, owned now and target). A member's ``assignment``
(for the lag table's owners) is the input partitions of its active tasks: task
(subtopology, p) reads partition p of the subtopology's source and repartition topics.
Reads only; called on the coordinator's loop (``groups_query``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkalite.coordinator.streams.group import StreamsGroup

Task = tuple[str, int]


def tasks_json(tasks: Iterable[Task]) -> list[dict[str, Any]]:
    by_sub: dict[str, list[int]] = {}
    for sub, p in tasks:
        by_sub.setdefault(sub, []).append(p)
    return [{"subtopology": s, "partitions": sorted(ps)} for s, ps in sorted(by_sub.items())]


def _roles(tasks: Any) -> dict[str, list[dict[str, Any]]]:
    return {"active": tasks_json(tasks.active), "standby": tasks_json(tasks.standby),
            "warmup": tasks_json(tasks.warmup)}


def streams_group(group: StreamsGroup | None, deadlines: Mapping[str, int | None]
                  ) -> dict[str, Any] | None:
    """The view of a streams group (None: the group is not one) whose members' session
    deadlines are ``deadlines``."""
    if group is None:
        return None
    group_id = group.group_id
    inputs: dict[str, list[str]] = {}
    if group.topology is not None:
        inputs = {s.subtopology_id: [*s.source_topics,
                                     *(t.name for t in s.repartition_source_topics)]
                  for s in group.topology.subtopologies}
    members = []
    for m in group.members.values():
        owned: dict[str, set[int]] = {}
        for sub, p in m.active:
            for topic in inputs.get(sub, ()):
                owned.setdefault(topic, set()).add(p)
        target = group.target.get(m.member_id)
        members.append({
            "member_id": m.member_id, "instance_id": m.instance_id,
            "process_id": m.process_id, "client_id": m.client_id,
            "client_host": m.client_host, "member_epoch": m.member_epoch, "state": m.state,
            "topology_epoch": m.topology_epoch,
            "session_deadline_ms": deadlines.get(m.member_id),
            "tasks": _roles(m.assigned),
            "target": None if target is None else _roles(target),
            "assignment": [{"topic": t, "partitions": sorted(ps)}
                           for t, ps in sorted(owned.items())],
        })
    return {
        "group_id": group_id, "type": "streams", "state": group.state,
        "group_epoch": group.group_epoch, "assignment_epoch": group.target_epoch,
        "topology_epoch": None if group.topology is None else group.topology.epoch,
        "subtopologies": sorted(inputs), "assignor": "sticky", "members": members,
    }
