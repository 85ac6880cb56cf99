"""The share-group offsets APIs (KIP-932's DescribeShareGroupOffsets,
AlterShareGroupOffsets and DeleteShareGroupOffsets) as pure decisions over the
share-partition state replayed from ``__share_group_state``, as Kafka's
``GroupCoordinatorService`` and ``GroupMetadataManager`` decide them:

- Describe reads each share-partition's start offset and leader epoch; a partition with no
  state, or of a topic that does not exist, answers start offset -1 without an error (as
  Kafka treats it like OffsetFetch's absence of data). ``topics`` None: every
  share-partition of the topics the group has state for. v1's lag is the records from the
  start offset to the high watermark that are not yet acknowledged or archived (-1 when
  there is no start offset).
- Alter needs a share group with no members (NON_EMPTY_GROUP; another kind of group's id:
  GROUP_ID_NOT_FOUND); a group id that names no group gets a new, empty share group at
  epoch 1 when a partition is to be reset, as Kafka 4.4 makes one. Each partition that
  exists gets a fresh state at the given start offset (a new snapshot with the group
  epoch as its state epoch, as Kafka's ``initializeState``), the others
  UNKNOWN_TOPIC_OR_PARTITION.
- Delete needs the same; a topic whose share-partitions have state loses it (every
  partition's), a topic without state answers UNKNOWN_TOPIC_OR_PARTITION ("There is no
  offset information to delete.").

Kafka decides which share-partitions are initialized from a record of its own
(ShareGroupStatePartitionMetadata); kafkalite writes that record as the state is written,
but takes the share-partitions that have state in ``__share_group_state`` as the
initialized ones here (docs/compatibility.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafkalite.protocol import share_group_records as sg
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import ZERO_UUID

from .group import Record, ShareGroup
from .partition import RecordState
from .state_store import ShareKey, ShareState

UNINITIALIZED_START_OFFSET = -1
DEFAULT_LEADER_EPOCH = 0
NO_LAG = -1
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
NO_OFFSETS_MESSAGE = "There is no offset information to delete."

#: The high watermark of (topic id, partition), None when the partition does not exist.
HighWatermark = Callable[[uuid.UUID, int], int | None]


@dataclass(frozen=True, slots=True)
class TopicMeta:
    topic_id: uuid.UUID
    partitions: int


@dataclass(frozen=True, slots=True)
class PartitionOffset:
    partition: int
    start_offset: int = UNINITIALIZED_START_OFFSET
    leader_epoch: int = DEFAULT_LEADER_EPOCH
    lag: int = NO_LAG
    error: ErrorCode = NO_ERROR
    message: str | None = None


@dataclass(frozen=True, slots=True)
class TopicResult:
    """One topic of an answer: its partitions (Describe, Alter) or its own error (Delete)."""

    name: str
    topic_id: uuid.UUID | None
    partitions: tuple[PartitionOffset, ...] = ()
    error: ErrorCode = NO_ERROR
    message: str | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """What Alter or Delete decided: a group-level error, or the topics' answers and the
    share-partitions to reset (key, start offset) or to delete."""

    error: ErrorCode = NO_ERROR
    message: str | None = None
    topics: tuple[TopicResult, ...] = ()
    resets: tuple[tuple[ShareKey, int], ...] = ()
    deletes: tuple[ShareKey, ...] = ()
    state_epoch: int = 0
    #: Records of ``__consumer_offsets`` making the (new, empty) share group first.
    new_group: tuple[Record, ...] = ()


NEW_GROUP_EPOCH = 1


def new_group_records(group_id: str) -> tuple[Record, ...]:
    """An empty share group at epoch 1: what Kafka 4.4's AlterShareGroupOffsets writes for
    a group id that names no group."""
    return ((sg.ShareGroupMetadataKey(group_id), sg.ShareGroupMetadataValue(NEW_GROUP_EPOCH)),
            (sg.ShareGroupTargetAssignmentMetadataKey(group_id),
             sg.ShareGroupTargetAssignmentMetadataValue(NEW_GROUP_EPOCH)))


def lag(state: ShareState, high_watermark: int | None) -> int:
    """Records from the start offset to the high watermark not yet acknowledged or
    archived."""
    start = state.start_offset
    if start < 0 or high_watermark is None:
        return NO_LAG
    done = 0
    for b in state.batches:
        if b.delivery_state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
            first, last = max(b.first_offset, start), min(b.last_offset, high_watermark - 1)
            done += max(0, last - first + 1)
    return max(0, high_watermark - start - done)


def group_keys(states: Mapping[ShareKey, ShareState], group_id: str) -> list[ShareKey]:
    return sorted((k for k in states if k[0] == group_id), key=lambda k: (k[1].bytes, k[2]))


def _offset(states: Mapping[ShareKey, ShareState], key: ShareKey,
            hwm: HighWatermark) -> PartitionOffset:
    state = states.get(key)
    if state is None:
        return PartitionOffset(key[2])
    # A state written by an alter has no leader epoch (-1); Kafka reports it as 0.
    return PartitionOffset(key[2], state.start_offset, max(state.leader_epoch,
                                                           DEFAULT_LEADER_EPOCH),
                           lag(state, hwm(key[1], key[2])))


def describe(group_id: str, topics: Sequence[tuple[str, Sequence[int]]] | None,
             states: Mapping[ShareKey, ShareState], by_name: Mapping[str, TopicMeta],
             names: Mapping[uuid.UUID, str], hwm: HighWatermark) -> list[TopicResult]:
    """One group of DescribeShareGroupOffsets (its authorized topics only)."""
    if topics is None:
        # Every partition of each topic the group has state for: Kafka initializes all
        # the share-partitions of a topic its members are assigned (start offset -1 until
        # the first fetch), and lists the initialized ones.
        tids = sorted({k[1] for k in group_keys(states, group_id) if k[1] in names},
                      key=lambda t: t.bytes)
        return [TopicResult(names[tid], tid, tuple(
            _offset(states, (group_id, tid, p), hwm)
            for p in range(by_name[names[tid]].partitions)))
            for tid in tids if names[tid] in by_name]
    out: list[TopicResult] = []
    for name, partitions in topics:
        meta = by_name.get(name)
        if meta is None:
            out.append(TopicResult(name, ZERO_UUID, tuple(PartitionOffset(p)
                                                          for p in partitions)))
            continue
        out.append(TopicResult(name, meta.topic_id, tuple(
            _offset(states, (group_id, meta.topic_id, p), hwm) for p in partitions)))
    return out


def _empty_share_group(group_id: str, kind: str | None, group: ShareGroup | None
                       ) -> Change | None:
    if not group_id:
        return Change(ErrorCode.invalid_group_id, "The configured groupId is invalid.")
    if group is None:
        message = (f"Group {group_id} not found." if kind is None
                   else f"Group {group_id} is not a share group.")
        return Change(ErrorCode.group_id_not_found, message)
    if group.members:
        return Change(ErrorCode.non_empty_group, "The group is not empty.")
    return None


def alter(group_id: str, kind: str | None, group: ShareGroup | None,
          topics: Iterable[tuple[str, Sequence[tuple[int, int]]]],
          by_name: Mapping[str, TopicMeta]) -> Change:
    """AlterShareGroupOffsets for the topics the handler let through (authorized, known):
    ``topics`` as (name, [(partition, start offset)])."""
    new_group: tuple[Record, ...] = ()
    if group_id and kind is None:
        group = ShareGroup(group_id, NEW_GROUP_EPOCH, assignment_epoch=NEW_GROUP_EPOCH)
        new_group = new_group_records(group_id)
    refused = _empty_share_group(group_id, kind, group)
    if refused is not None:
        return refused
    assert group is not None
    results: list[TopicResult] = []
    resets: list[tuple[ShareKey, int]] = []
    for name, partitions in topics:
        meta = by_name.get(name)
        if meta is None:
            results.append(TopicResult(name, None, tuple(
                PartitionOffset(p, error=ErrorCode.unknown_topic_or_partition,
                                message=UNKNOWN_TOPIC_MESSAGE) for p, _o in partitions)))
            continue
        parts: list[PartitionOffset] = []
        for p, start in partitions:
            if 0 <= p < meta.partitions:
                parts.append(PartitionOffset(p))
                resets.append(((group_id, meta.topic_id, p), start))
            else:
                parts.append(PartitionOffset(p, error=ErrorCode.unknown_topic_or_partition,
                                             message=UNKNOWN_TOPIC_MESSAGE))
        results.append(TopicResult(name, meta.topic_id, tuple(parts)))
    # Kafka makes the group only with a share-partition to initialize.
    return Change(topics=tuple(results), resets=tuple(resets), state_epoch=group.group_epoch,
                  new_group=new_group if resets else ())


def delete(group_id: str, kind: str | None, group: ShareGroup | None, topics: Iterable[str],
           states: Mapping[ShareKey, ShareState], by_name: Mapping[str, TopicMeta]) -> Change:
    """DeleteShareGroupOffsets for the topics the handler let through (authorized)."""
    refused = _empty_share_group(group_id, kind, group)
    if refused is not None:
        return refused
    keys = group_keys(states, group_id)
    deleted: list[TopicResult] = []
    failed: list[TopicResult] = []
    deletes: list[ShareKey] = []
    for name in topics:
        meta = by_name.get(name)
        if meta is None:
            failed.append(TopicResult(name, None, error=ErrorCode.unknown_topic_or_partition,
                                      message=UNKNOWN_TOPIC_MESSAGE))
            continue
        mine = [k for k in keys if k[1] == meta.topic_id]
        if not mine:
            failed.append(TopicResult(name, None, error=ErrorCode.unknown_topic_or_partition,
                                      message=NO_OFFSETS_MESSAGE))
            continue
        deletes.extend(mine)
        deleted.append(TopicResult(name, meta.topic_id))
    return Change(topics=tuple(deleted + failed), deletes=tuple(deletes))
