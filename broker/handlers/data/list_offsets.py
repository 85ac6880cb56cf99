"""ListOffsets v1 and up (earliest, latest, max timestamp, by timestamp) and DeleteRecords."""

from __future__ import annotations

from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE
from kafkalite.storage.errors import OffsetOutOfRangeError
from kafkalite.storage.log import PartitionLog

from ...auth import Access, Operation, ResourceType
from ...context import RequestContext
from ...topic_store import Storage
from .leader_epochs import NO_EPOCH, epoch_error

LIST_OFFSETS = ApiKey.LIST_OFFSETS
DELETE_RECORDS = ApiKey.DELETE_RECORDS

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    LIST_OFFSETS: (1, None),
    DELETE_RECORDS: (None, None),
}

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6


def lookup(plog: PartitionLog, timestamp: int, read_committed: bool = False) -> tuple[int, int]:
    """(offset, timestamp) answering a ListOffsets query, as Kafka's UnifiedLog does.

    Under read_committed (isolation level 1) LATEST is the last stable offset and a
    lookup by timestamp finds nothing at or past it (``Partition.fetchOffsetForTimestamp``).
    """
    if timestamp == LATEST:
        return (plog.last_stable_offset if read_committed else plog.high_watermark), -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return plog.log_start_offset, -1
    if timestamp == LATEST_TIERED:
        return -1, -1  # nothing is tiered
    if timestamp == EARLIEST_PENDING_UPLOAD:
        return -1, -1
    if timestamp == MAX_TIMESTAMP:
        found: tuple[int, int] | None = plog.max_timestamp()
    else:
        found = plog.offset_for_timestamp(timestamp)
    if found is None or (read_committed and found[0] >= plog.last_stable_offset):
        return -1, -1
    return found


def epoch_of(plog: PartitionLog, timestamp: int, offset: int) -> int:
    """The leader epoch ListOffsets reports with ``offset``, as Kafka's UnifiedLog does."""
    if offset < 0:
        return -1
    if timestamp == LATEST:
        return plog.leader_epoch
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        first = plog.epochs.earliest
        return first[0] if first is not None and first[1] <= offset else -1
    return plog.epochs.epoch_for_offset(offset)


def list_offsets(storage: Storage, access: Access, ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(LIST_OFFSETS, ctx.api_version).response_type
    topic_t = nested(resp_t, "ListOffsetsTopicResponse")
    part_t = nested(resp_t, "ListOffsetsPartitionResponse")
    read_committed = getattr(req, "isolation_level", 0) == 1
    topics = []
    for t in req.topics:
        allowed = access.permits(ctx, Operation.DESCRIBE, ResourceType.TOPIC, t.name)
        info = storage.catalog.get(t.name) if allowed else None
        parts = []
        for p in t.partitions:
            plog = storage.logs.get(t.name, p.partition_index) if info else None
            if plog is None:
                parts.append(build(part_t, partition_index=p.partition_index,
                                   error_code=ErrorCode.unknown_topic_or_partition
                                   if allowed else ErrorCode.topic_authorization_failed,
                                   timestamp=-1, offset=-1, leader_epoch=-1,
                                   old_style_offsets=()))
                continue
            err = epoch_error(plog, getattr(p, "current_leader_epoch", NO_EPOCH))
            if p.timestamp == MAX_TIMESTAMP and ctx.api_version < 7:
                # As Kafka: the max-timestamp query came with v7 (KIP-734).
                err = ErrorCode.unsupported_version
            if err is not NO_ERROR:
                parts.append(build(part_t, partition_index=p.partition_index, error_code=err,
                                   timestamp=-1, offset=-1, leader_epoch=-1,
                                   old_style_offsets=()))
                continue
            offset, ts = lookup(plog, p.timestamp, read_committed)
            parts.append(build(part_t, partition_index=p.partition_index,
                               error_code=NO_ERROR, timestamp=ts, offset=offset,
                               leader_epoch=epoch_of(plog, p.timestamp, offset),
                               old_style_offsets=()))
        topics.append(build(topic_t, name=t.name, partitions=tuple(parts)))
    return build(resp_t, throttle_time=NO_THROTTLE, topics=tuple(topics))


def delete_records(storage: Storage, access: Access, ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(DELETE_RECORDS, ctx.api_version).response_type
    topic_t = nested(resp_t, "DeleteRecordsTopicResult")
    part_t = nested(resp_t, "DeleteRecordsPartitionResult")
    topics = []
    for t in req.topics:
        allowed = access.permits(ctx, Operation.DELETE, ResourceType.TOPIC, t.name)
        info = storage.catalog.get(t.name)
        parts = []
        for p in t.partitions:
            plog = storage.logs.get(t.name, p.partition_index) if info else None
            if not allowed:
                err, low = ErrorCode.topic_authorization_failed, -1
            elif plog is None:
                err, low = ErrorCode.unknown_topic_or_partition, -1
            elif "delete" not in plog.config.cleanup_policy:
                err, low = ErrorCode.policy_violation, -1
            else:
                try:
                    err, low = NO_ERROR, storage.logs.delete_records(plog, p.offset)
                except OffsetOutOfRangeError:
                    err, low = ErrorCode.offset_out_of_range, -1
            parts.append(build(part_t, partition_index=p.partition_index,
                               low_watermark=low, error_code=err))
        topics.append(build(topic_t, name=t.name, partitions=tuple(parts)))
    return build(resp_t, throttle_time=NO_THROTTLE, topics=tuple(topics))

