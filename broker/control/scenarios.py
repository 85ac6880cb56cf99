"""Coordinator scenarios by name, for the admin API, ``kafkalite ctl scenario`` and the
test fixtures: each runs one of the core's scenario transitions (``coordinator/
scenarios.py``) or holds a ``__consumer_offsets`` partition, through the runtime, so what
clients see is what a broker in that state sends them. Call ``run`` on the broker's loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafkalite.coordinator.core import GroupCoordinatorCore
from kafkalite.coordinator.results import Outcome
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import OFFSETS_TOPIC

NAMES = ("rebalance", "expire-member", "evict-member", "fence-static-member",
         "partition-loading", "partition-moved")


class ScenarioError(ValueError):
    """A scenario that does not exist, or parameters it cannot run with."""


def _text(params: Mapping[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{name} is required (a non-empty string)")
    return value


def _int(params: Mapping[str, Any], name: str, default: int | None = None) -> int:
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ScenarioError(f"{name} is required (a non-negative integer)")
    return value


def _static_member_id(g: GroupCoordinatorCore, group_id: str, instance_id: str) -> str | None:
    kind = g.streams_group(group_id) or g.consumer_group(group_id)
    if kind is not None:
        member = kind.static_member(instance_id)
        return None if member is None else member.member_id
    group = g.group(group_id)
    return None if group is None else group.static_member_id(instance_id)


class CoordinatorScenarios:
    def __init__(self, runtime: CoordinatorRuntime) -> None:
        self.runtime = runtime

    def run(self, name: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Run scenario ``name``; the outcome as JSON: ``error`` is Kafka's error name
        (NONE when it took effect), with what it acted on."""
        rt = self.runtime
        groups = rt.groups
        if name in ("partition-loading", "partition-moved"):
            if "partition" in params:
                partition = _int(params, "partition")
                count = rt.topics[OFFSETS_TOPIC].num_partitions
                if partition >= count:
                    raise ScenarioError(f"__consumer_offsets has {count}"
                                        f" partitions, not {partition + 1}")
            else:
                gid = _text(params, "group_id")
                partition = groups.query(lambda g: g.partition_for(gid))
            for_ms = _int(params, "for_ms")
            moved = name == "partition-moved"
            rt.hold_partition(OFFSETS_TOPIC, partition, for_ms, moved)
            return {"error": "NONE", "partition": partition, "for_ms": for_ms,
                    "answers": "NOT_COORDINATOR" if moved else "COORDINATOR_LOAD_IN_PROGRESS"}
        group_id = _text(params, "group_id")
        op: Callable[[GroupCoordinatorCore, int], Outcome]
        if name == "rebalance":

            def op(g: GroupCoordinatorCore, now: int) -> Outcome:
                if g.streams_group(group_id) is not None:
                    return g.streams.force_rebalance(now, group_id)
                if g.consumer_group(group_id) is not None:
                    return g.consumer.force_rebalance(now, group_id)
                return g.force_rebalance(now, group_id)
        elif name in ("expire-member", "evict-member"):
            mid = _text(params, "member_id")
            evict = name == "evict-member"

            def op(g: GroupCoordinatorCore, now: int) -> Outcome:
                # A share, streams or consumer group member's session ends as its timer
                # would end it; a streams or consumer group member past
                # max.poll.interval.ms leaves the group with the same records.
                if g.share_group(group_id) is not None and not evict:
                    return g.share.expire_member(now, group_id, mid)
                if g.streams_group(group_id) is not None:
                    return g.streams.expire_member(now, group_id, mid)
                if g.consumer_group(group_id) is not None:
                    return g.consumer.expire_member(now, group_id, mid)
                if evict:
                    return g.evict_member(now, group_id, mid)
                return g.expire_member(now, group_id, mid)
        elif name == "fence-static-member":
            iid = _text(params, "group_instance_id")

            def op(g: GroupCoordinatorCore, now: int) -> Outcome:
                if g.streams_group(group_id) is not None:
                    return g.streams.fence_static_member(now, group_id, iid)
                if g.consumer_group(group_id) is not None:
                    return g.consumer.fence_static_member(now, group_id, iid)
                return g.fence_static_member(now, group_id, iid)
        else:
            raise ScenarioError(f"unknown scenario {name!r}; known: {', '.join(NAMES)}")
        err: ErrorCode = groups.write(op)
        result: dict[str, Any] = {"error": err.name.upper(), "group_id": group_id}
        if name == "fence-static-member" and err is NO_ERROR:
            result["member_id"] = groups.query(
                lambda g: _static_member_id(g, group_id, params["group_instance_id"]))
        return result
