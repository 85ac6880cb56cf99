"""Share-partition state in ``__share_group_state`` (Kafka's share coordinator), as a pure
object: what to write for a state change, and the state rebuilt by replaying the records.

Each share-partition (group, topic id, partition) has a snapshot (``ShareSnapshot``: its
start offset, epochs and state batches) followed by updates (``ShareUpdate``: a new start
offset, or -1 for unchanged, and the batches that changed). Replaying an update merges its
batches over the current ones (newer states win, offsets below the start offset are
dropped), as Kafka's ``ShareCoordinatorShard`` does; after ``updates_per_snapshot``
updates the next write is a fresh snapshot holding the merged state, with the next
snapshot epoch (Kafka's ``share.coordinator.snapshot.update.records.per.snapshot``).
The state is changed only by :meth:`replay`, live and at load, so a restart replaying the
topic finds what was written.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace

from kafkalite.protocol import share_state_records as ss
from kafkalite.protocol.consumer_offsets import group_partition

#: A share-partition: (group id, topic id, partition).
ShareKey = tuple[str, uuid.UUID, int]
Record = tuple[ss.ShareStateKey, ss.ShareStateValue | None]


def coordinator_key(group: str, topic_id: uuid.UUID, partition: int) -> str:
    """Kafka's ``SharePartitionKey.asCoordinatorKey``: FindCoordinator's key (key type
    share) for a share-partition, ``group:topic id:partition`` with the topic id as Kafka's
    ``Uuid.toString`` writes it."""
    tid = base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")
    return f"{group}:{tid}:{partition}"


def state_partition(key: str, num_partitions: int) -> int:
    """The ``__share_group_state`` partition holding a coordinator key's state (Kafka's
    ``Utils.abs(key.hashCode()) % share.coordinator.state.topic.num.partitions``)."""
    return group_partition(key, num_partitions)


@dataclass(frozen=True, slots=True)
class ShareState:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    batches: tuple[ss.StateBatch, ...]
    #: Updates replayed since the snapshot.
    updates: int = 0


def merge_batches(current: Iterable[ss.StateBatch], newer: Iterable[ss.StateBatch],
                  start_offset: int) -> tuple[ss.StateBatch, ...]:
    """``current`` with ``newer`` laid over it, nothing below ``start_offset``, adjacent
    offsets of one state and delivery count joined into one batch. Works on ranges, never
    offset by offset: a batch may span many offsets."""
    runs: list[list[int]] = []  # [first, last, state, count], in order, not overlapping
    for b in current:
        runs = _overlay(runs, b, start_offset)
    for b in newer:
        runs = _overlay(runs, b, start_offset)
    out: list[list[int]] = []
    for run in runs:
        prev = out[-1] if out else None
        if prev is not None and prev[1] + 1 == run[0] and prev[2:] == run[2:]:
            prev[1] = run[1]
        else:
            out.append(list(run))
    return tuple(ss.StateBatch(*run) for run in out)


def _overlay(runs: list[list[int]], b: ss.StateBatch, start_offset: int) -> list[list[int]]:
    """``runs`` with ``b`` (clipped at ``start_offset``) in place of what it covers."""
    first, last = max(b.first_offset, start_offset), b.last_offset
    if first > last:
        return runs
    new = [first, last, b.delivery_state, b.delivery_count]
    if not runs or runs[-1][1] < first:  # the usual case: past everything so far
        runs.append(new)
        return runs
    out: list[list[int]] = []
    placed = False
    for r in runs:
        if r[1] < first:
            out.append(r)
            continue
        if r[0] > last:
            if not placed:
                out.append(new)
                placed = True
            out.append(r)
            continue
        if r[0] < first:
            out.append([r[0], first - 1, r[2], r[3]])
        if not placed:
            out.append(new)
            placed = True
        if r[1] > last:
            out.append([last + 1, r[1], r[2], r[3]])
    if not placed:
        out.append(new)
    return out


class ShareStateStore:
    def __init__(self, updates_per_snapshot: int = 500) -> None:
        self.updates_per_snapshot = updates_per_snapshot
        self.states: dict[ShareKey, ShareState] = {}

    def read(self, key: ShareKey) -> ShareState | None:
        return self.states.get(key)

    def initialize(self, key: ShareKey, state_epoch: int, start_offset: int,
                   now: int) -> list[Record]:
        """A new (or reset) share-partition: a snapshot at the next snapshot epoch."""
        old = self.states.get(key)
        epoch = 0 if old is None else old.snapshot_epoch + 1
        return [(ss.ShareStateKey(ss.SHARE_SNAPSHOT, *key),
                 ss.ShareSnapshotValue(epoch, state_epoch, -1, start_offset, now, now, ()))]

    def write(self, key: ShareKey, leader_epoch: int, start_offset: int,
              batches: Iterable[ss.StateBatch], now: int) -> list[Record]:
        """The record for a state change: an update, or a snapshot when the share-partition
        has none yet or has had ``updates_per_snapshot`` updates since its last one.
        ``start_offset`` -1: unchanged."""
        changed = tuple(batches)
        old = self.states.get(key)
        if old is None or old.updates >= self.updates_per_snapshot:
            start = start_offset if start_offset != -1 else (
                old.start_offset if old is not None else 0)
            merged = merge_batches(old.batches if old is not None else (), changed, start)
            return [(ss.ShareStateKey(ss.SHARE_SNAPSHOT, *key), ss.ShareSnapshotValue(
                0 if old is None else old.snapshot_epoch + 1,
                0 if old is None else old.state_epoch, leader_epoch, start,
                now if old is None else old.create_timestamp, now, merged))]
        return [(ss.ShareStateKey(ss.SHARE_UPDATE, *key),
                 ss.ShareUpdateValue(old.snapshot_epoch, leader_epoch, start_offset, changed))]

    def delete(self, key: ShareKey) -> list[Record]:
        """Tombstones for a share-partition's state (its group or topic was deleted)."""
        return [(ss.ShareStateKey(ss.SHARE_SNAPSHOT, *key), None),
                (ss.ShareStateKey(ss.SHARE_UPDATE, *key), None)]

    def replay(self, key: ss.ShareStateKey, value: ss.ShareStateValue | None) -> None:
        k: ShareKey = (key.group, key.topic_id, key.partition)
        if value is None:
            if key.record_type == ss.SHARE_SNAPSHOT:
                self.states.pop(k, None)
            return
        if isinstance(value, ss.ShareSnapshotValue):
            self.states[k] = ShareState(
                value.snapshot_epoch, value.state_epoch, value.leader_epoch,
                value.start_offset, value.create_timestamp, value.write_timestamp,
                merge_batches((), value.state_batches, value.start_offset))
            return
        old = self.states.get(k)
        if old is None or value.snapshot_epoch != old.snapshot_epoch:
            return  # an update of a snapshot that is gone: Kafka ignores it too
        start = old.start_offset if value.start_offset == -1 else value.start_offset
        self.states[k] = replace(
            old, leader_epoch=value.leader_epoch, start_offset=start,
            batches=merge_batches(old.batches, value.state_batches, start),
            updates=old.updates + 1)
