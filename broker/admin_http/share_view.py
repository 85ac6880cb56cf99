"""Share groups (KIP-932) as the admin API and the console show them: the group's epochs
and members with their assigned partitions, and per share-partition its start offset, end
offset, in-flight records by state (available, acquired, acknowledged, archived), the log
end offset and the lag.

A share-partition the broker holds in memory (it has been fetched from since the broker
started) is read live; one known only from ``__share_group_state`` is read from its
persisted state, where acquired records are stored as available. Reads only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from kafkalite.coordinator.share.partition import RecordState, SharePartition
from kafkalite.coordinator.share.state_store import ShareKey, ShareState

if TYPE_CHECKING:
    from kafkalite.coordinator.share.group import ShareGroup

STATE_NAMES = {s: s.name.lower() for s in RecordState}


class LiveSharePartitions(Protocol):
    """The broker's share-partition manager, as far as this view reads it."""

    partitions: dict[ShareKey, SharePartition]


def _live(sp: SharePartition) -> dict[str, Any]:
    counts = dict.fromkeys(STATE_NAMES.values(), 0)
    for first, last, r in sp.runs():
        counts[STATE_NAMES[r.state]] += last - first + 1
    return {"start_offset": sp.start_offset, "end_offset": sp.end_offset,
            "in_flight": counts, "source": "live"}


def _persisted(state: ShareState) -> dict[str, Any]:
    counts = dict.fromkeys(STATE_NAMES.values(), 0)
    end = state.start_offset - 1
    for b in state.batches:
        counts[STATE_NAMES[RecordState(b.delivery_state)]] += b.last_offset - b.first_offset + 1
        end = max(end, b.last_offset)
    return {"start_offset": state.start_offset, "end_offset": end, "in_flight": counts,
            "source": "persisted"}


class ShareView:
    def __init__(self, live: LiveSharePartitions,
                 persisted: Callable[[], Mapping[ShareKey, ShareState]],
                 names: Callable[[uuid.UUID], str | None],
                 high_watermark: Callable[[uuid.UUID, int], int | None]) -> None:
        self.live = live
        self.persisted = persisted
        self.names = names
        self.high_watermark = high_watermark

    def partitions(self, group_id: str) -> list[dict[str, Any]]:
        states = self.persisted()
        keys = {k for k in self.live.partitions if k[0] == group_id}
        keys |= {k for k in states if k[0] == group_id}
        out = []
        for key in sorted(keys, key=lambda k: (self.names(k[1]) or str(k[1]), k[2])):
            _g, topic_id, p = key
            sp = self.live.partitions.get(key)
            row = _live(sp) if sp is not None else _persisted(states[key])
            end = self.high_watermark(topic_id, p)
            if sp is not None:
                done = row["in_flight"]["acknowledged"] + row["in_flight"]["archived"]
                row["lag"] = None if end is None else max(0, end - sp.start_offset - done)
            else:
                from kafkalite.coordinator.share.offsets_admin import lag

                found = lag(states[key], end)
                row["lag"] = None if found < 0 else found
            out.append({"topic": self.names(topic_id) or str(topic_id), "partition": p,
                        "log_end_offset": end, **row})
        return out


def share_group(group: ShareGroup, names: Callable[[uuid.UUID], str | None],
                view: ShareView | None, now_ms: int) -> dict[str, Any]:
    # Share groups' modules load with the first share group, not at start-up.
    from kafkalite.coordinator.share.group import describe

    d = describe(group)

    def assigned(parts: frozenset[tuple[uuid.UUID, int]]) -> list[dict[str, Any]]:
        by_topic: dict[str, list[int]] = {}
        for t, p in parts:
            by_topic.setdefault(names(t) or str(t), []).append(p)
        return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]

    return {
        "group_id": d.group_id, "type": "share", "state": d.state,
        "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch,
        "assignor": d.assignor_name, "now_ms": now_ms,
        "members": [{"member_id": m.member_id, "client_id": m.client_id,
                     "client_host": m.client_host, "rack_id": m.rack_id,
                     "member_epoch": m.member_epoch,
                     "subscribed_topics": list(m.subscribed_topic_names),
                     "assignment": assigned(m.assigned)} for m in d.members],
        "share_partitions": [] if view is None else view.partitions(d.group_id),
    }
