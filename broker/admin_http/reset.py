"""Resetting a group's committed offsets from the console, as ``kafka-consumer-groups
--reset-offsets --execute`` does: only while the group has no members (Kafka's tool
refuses a group that is not inactive), committed as a client outside the group (an
OffsetCommit with no member and generation -1, which the coordinator itself accepts only
for an empty group). To the earliest or latest offset, an offset (clamped into the log's
range, as the tool does), or the first offset at or after a time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit
from kafkalite.protocol.errors import ErrorCode

from .views import BadRequest, NotFound

if TYPE_CHECKING:
    from .views import BrokerView

TARGETS = ("earliest", "latest", "offset", "timestamp")


class GroupNotEmpty(RuntimeError):
    pass


def _target(view: BrokerView, topic: str, p: int, to: str, offset: int, ts: int) -> int:
    plog = view.storage.logs.get(topic, p)
    start = plog.log_start_offset if plog is not None else 0
    end = plog.high_watermark if plog is not None else 0
    if to == "earliest":
        return start
    if to == "latest":
        return end
    if to == "offset":
        return min(max(offset, start), end)
    at = plog.offset_for_timestamp(ts) if plog is not None else None
    return at[0] if at is not None else end


def reset_offsets(view: BrokerView, group_id: str, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    topic = body.get("topic")
    if not isinstance(topic, str) or not topic:
        raise BadRequest("field topic must be a topic name")
    info = view.storage.catalog.get(topic)
    if info is None:
        raise NotFound(f"unknown topic {topic!r}")
    to = body.get("to")
    if to not in TARGETS:
        raise BadRequest(f"field to must be one of {', '.join(TARGETS)}, got {to!r}")
    offset = body.get("offset", 0)
    ts = body.get("timestamp", 0)
    for name, v in (("offset", offset), ("timestamp", ts)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise BadRequest(f"field {name} must be an integer, got {v!r}")
    if to in ("offset", "timestamp") and str(to) not in body:
        raise BadRequest(f"to={to} needs the field {to}")
    partition = body.get("partition")
    if partition is None:
        parts = list(range(info.partitions))
    elif isinstance(partition, int) and not isinstance(partition, bool) \
            and 0 <= partition < info.partitions:
        parts = [partition]
    else:
        raise BadRequest(f"partition must be within 0..{info.partitions - 1}")
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise BadRequest("field dry_run must be true or false")
    try:
        described = view.group(group_id)
    except NotFound:
        described = None
    if described is not None and described.get("members"):
        raise GroupNotEmpty(
            f"offsets of group {group_id!r} can only be reset while it has no members; "
            f"it has {len(described['members'])} (state {described.get('state')})")
    targets = {p: _target(view, topic, p, str(to), offset, ts) for p in parts}
    rows: list[dict[str, Any]] = [{"partition": p, "offset": o, "error": None}
                                  for p, o in targets.items()]
    if not dry_run:
        request = CommitRequest(group_id, topics=[
            (topic, [PartitionCommit(p, o, -1, "") for p, o in targets.items()])])
        result: dict[tuple[str, int], int] = view.groups_write(
            lambda g, now: g.commit_offsets(now, request))
        for row in rows:
            code = result.get((topic, int(str(row["partition"]))), 0)
            if code:
                row["error"] = ErrorCode(code).name
        if any(r["error"] for r in rows):
            if all(r["error"] in ("unknown_member_id", "illegal_generation") for r in rows):
                raise GroupNotEmpty(f"the coordinator refused the commit to group "
                                    f"{group_id!r}: it is not empty")
    return {"group_id": group_id, "topic": topic, "to": to, "dry_run": dry_run,
            "partitions": rows}
