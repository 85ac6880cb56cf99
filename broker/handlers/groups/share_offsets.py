"""DescribeShareGroupOffsets v0-1, AlterShareGroupOffsets v0 and DeleteShareGroupOffsets
v0 (KIP-932), authorized as KafkaApis does: Describe on the group and on each topic to
describe (topics not authorized answer TOPIC_AUTHORIZATION_FAILED, or are left out when
every topic is asked for); Read on the group and on each topic to alter; Delete on the
group and Read on each topic to delete. The decisions are
``coordinator.share.offsets_admin``'s; the share-partition state is read from and written
to ``__share_group_state`` through a :class:`ShareOffsetsStore`."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from kafkalite.coordinator.results import AFTER_WRITE, Outcome, Write
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.coordinator.share.state_store import ShareKey, ShareState
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE, ZERO_UUID

from ...auth import Access, Operation, ResourceType
from ...context import RequestContext

if TYPE_CHECKING:
    from kafkalite.coordinator.share import offsets_admin as oa
    from kafkalite.coordinator.share.group import ShareGroup

DESCRIBE_SHARE_GROUP_OFFSETS = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS
ALTER_SHARE_GROUP_OFFSETS = ApiKey.ALTER_SHARE_GROUP_OFFSETS
DELETE_SHARE_GROUP_OFFSETS = ApiKey.DELETE_SHARE_GROUP_OFFSETS

VERSIONS: dict[int, tuple[int | None, int | None]] = {
    DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),
    ALTER_SHARE_GROUP_OFFSETS: (0, 0),
    DELETE_SHARE_GROUP_OFFSETS: (0, 0),
}

GROUP_AUTH_MESSAGE = "Group authorization failed."
TOPIC_AUTH_MESSAGE = "Topic authorization failed."


class ShareOffsetsStore(Protocol):
    """The share-partition state as these APIs need it."""

    def states(self) -> Mapping[ShareKey, ShareState]:
        """Every share-partition's replayed state."""
        ...

    def high_watermark(self, topic_id: uuid.UUID, partition: int) -> int | None: ...

    def apply(self, change: oa.Change) -> ErrorCode:
        """Write ``change``'s resets and deletes (their records in the log before this
        returns) and drop the group's share-partitions the broker holds in memory, so
        that they are made again from the new state."""
        ...


def _topics_meta(runtime: CoordinatorRuntime) -> tuple[dict[str, oa.TopicMeta],
                                                          dict[uuid.UUID, str]]:
    from kafkalite.coordinator.share import offsets_admin as oa

    image = runtime.groups.query(lambda c: c.topics)
    by_name = {n: oa.TopicMeta(t.topic_id, t.num_partitions) for n, t in image.by_name.items()}
    return by_name, {t.topic_id: n for n, t in image.by_name.items()}


def _group(runtime: CoordinatorRuntime, gid: str
           ) -> tuple[ErrorCode, str | None, ShareGroup | None]:
    """The group's coordinator status, its kind and the share group."""
    def lookup(c: Any) -> tuple[ErrorCode, str | None, ShareGroup | None]:
        status, ps = c.group_partition(gid)
        if ps is None:
            return status, None, None
        return status, ps.kind_of(gid), ps.share_groups.get(gid)
    return runtime.groups.query(lookup)  # type: ignore[no-any-return]


# --- DescribeShareGroupOffsets -------------------------------------------------------------

def describe_share_group_offsets(runtime: CoordinatorRuntime, access: Access,
                                 store: ShareOffsetsStore, ctx: RequestContext,
                                 req: Any) -> Any:
    from kafkalite.coordinator.share import offsets_admin as oa

    resp_t = codecs.codec(DESCRIBE_SHARE_GROUP_OFFSETS, ctx.api_version).response_type
    group_t = nested(resp_t, "DescribeShareGroupOffsetsResponseGroup")
    topic_t = nested(resp_t, "DescribeShareGroupOffsetsResponseTopic")
    part_t = nested(resp_t, "DescribeShareGroupOffsetsResponsePartition")
    by_name, names = _topics_meta(runtime)
    states = store.states()

    def topic(t: oa.TopicResult) -> Any:
        return build(topic_t, topic_name=t.name, topic_id=t.topic_id, partitions=tuple(
            build(part_t, partition_index=p.partition, start_offset=p.start_offset,
                  leader_epoch=p.leader_epoch, lag=p.lag, error_code=p.error,
                  error_message=p.message)
            for p in t.partitions))

    def visible(name: str) -> bool:
        return access.permits(ctx, Operation.DESCRIBE, ResourceType.TOPIC, name)

    out = []
    for g in req.groups:
        gid = g.group_id
        if not access.permits(ctx, Operation.DESCRIBE, ResourceType.GROUP, gid):
            out.append(build(group_t, group_id=gid, topics=(),
                             error_code=ErrorCode.group_authorization_failed,
                             error_message=GROUP_AUTH_MESSAGE))
            continue
        if g.topics is None:
            found = oa.describe(gid, None, states, by_name, names, store.high_watermark)
            topics = [t for t in found if access.open or visible(t.name)]
        else:
            allowed: list[tuple[str, tuple[int, ...]]] = []
            refused: list[oa.TopicResult] = []
            for t in g.topics:
                if access.open or visible(t.topic_name):
                    allowed.append((t.topic_name, tuple(t.partitions)))
                else:
                    refused.append(oa.TopicResult(t.topic_name, ZERO_UUID, tuple(
                        oa.PartitionOffset(p, error=ErrorCode.topic_authorization_failed,
                                           message=TOPIC_AUTH_MESSAGE) for p in t.partitions)))
            topics = oa.describe(gid, allowed, states, by_name, names, store.high_watermark)
            topics += refused
        out.append(build(group_t, group_id=gid, topics=tuple(topic(t) for t in topics),
                         error_code=NO_ERROR, error_message=None))
    return build(resp_t, throttle_time=NO_THROTTLE, groups=tuple(out))


# --- AlterShareGroupOffsets ----------------------------------------------------------------

def _refused(runtime: CoordinatorRuntime, gid: str) -> oa.Change | None:
    from kafkalite.coordinator.share import offsets_admin as oa

    if not gid:
        return None
    status = _group(runtime, gid)[0]
    if status is not NO_ERROR:
        return oa.Change(status)
    return None


def alter_share_group_offsets(runtime: CoordinatorRuntime, access: Access,
                              store: ShareOffsetsStore, ctx: RequestContext, req: Any) -> Any:
    from kafkalite.coordinator.share import offsets_admin as oa

    resp_t = codecs.codec(ALTER_SHARE_GROUP_OFFSETS, ctx.api_version).response_type
    topic_t = nested(resp_t, "AlterShareGroupOffsetsResponseTopic")
    part_t = nested(resp_t, "AlterShareGroupOffsetsResponsePartition")
    gid = req.group_id

    def answer(err: ErrorCode, message: str | None, topics: list[oa.TopicResult]) -> Any:
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=err, error_message=message,
                     responses=tuple(build(
                         topic_t, topic_name=t.name,
                         topic_id=t.topic_id if t.topic_id is not None else ZERO_UUID,
                         partitions=tuple(build(part_t, partition_index=p.partition,
                                                error_code=p.error, error_message=p.message)
                                          for p in t.partitions)) for t in topics))

    if not access.permits(ctx, Operation.READ, ResourceType.GROUP, gid):
        return answer(ErrorCode.group_authorization_failed, GROUP_AUTH_MESSAGE, [])
    by_name, _names = _topics_meta(runtime)
    early: list[oa.TopicResult] = []
    passed: list[tuple[str, list[tuple[int, int]]]] = []
    for t in req.topics:
        parts = [(p.partition_index, p.start_offset) for p in t.partitions]
        if not access.permits(ctx, Operation.READ, ResourceType.TOPIC, t.topic_name):
            err, message = ErrorCode.topic_authorization_failed, TOPIC_AUTH_MESSAGE
        elif t.topic_name not in by_name:
            err, message = ErrorCode.unknown_topic_or_partition, oa.UNKNOWN_TOPIC_MESSAGE
        else:
            passed.append((t.topic_name, parts))
            continue
        meta = by_name.get(t.topic_name)
        early.append(oa.TopicResult(t.topic_name, meta.topic_id if meta else None, tuple(
            oa.PartitionOffset(p, error=err, message=message) for p, _o in parts)))
    change = _refused(runtime, gid)
    if change is None:
        _status, kind, group = _group(runtime, gid) if gid else (NO_ERROR, None, None)
        change = oa.alter(gid, kind, group, passed, by_name)
    if change.error is NO_ERROR and change.new_group:
        made = _make_group(runtime, gid, change)
        if made is not NO_ERROR:
            return answer(made, None, [])
    if change.error is NO_ERROR and (change.resets or change.deletes):
        record_state_metadata(runtime, change, before=True)
        written = store.apply(change)
        if written is not NO_ERROR:
            return answer(written, None, [])
        record_state_metadata(runtime, change)
    if change.error is not NO_ERROR:
        return answer(change.error, change.message, [])
    return answer(NO_ERROR, None, early + list(change.topics))


def record_state_metadata(runtime: CoordinatorRuntime, change: oa.Change,
                          before: bool = False) -> None:
    """Record 15 of the group follows what ``change`` writes to ``__share_group_state``,
    as Kafka's coordinator: ``before`` it, reset share-partitions initializing and deleted
    ones' topics deleting; after it, the first initialized and the others gone."""
    topics = runtime.groups.query(lambda g: g.topics.by_id)
    for (gid, tid, p), _start in change.resets:
        info = topics.get(tid)
        if info is not None:
            runtime.groups.write(lambda g, now: (
                g.share.partition_initializing if before else g.share.partition_initialized
            )(now, gid, tid, info.name, p))  # noqa: B023
    by_group: dict[str, set[uuid.UUID]] = {}
    for gid, tid, _p in change.deletes:
        by_group.setdefault(gid, set()).add(tid)
    for gid, tids in by_group.items():
        runtime.groups.write(lambda g, now: (
            g.share.state_deleting if before else g.share.state_deleted)(now, gid, tids))  # noqa: B023


def _make_group(runtime: CoordinatorRuntime, gid: str, change: oa.Change) -> ErrorCode:
    """Write the new share group's records to ``__consumer_offsets`` (in the log and
    replayed before the state is written)."""
    def op(core: Any, _now: int) -> Outcome:
        return Outcome(AFTER_WRITE, writes=[Write(
            core.partition_for(gid), gid, list(change.new_group),
            lambda err, _t: Outcome(err))])
    err: ErrorCode = runtime.groups.write(op)
    return err


# --- DeleteShareGroupOffsets ---------------------------------------------------------------

def delete_share_group_offsets(runtime: CoordinatorRuntime, access: Access,
                               store: ShareOffsetsStore, ctx: RequestContext,
                               req: Any) -> Any:
    from kafkalite.coordinator.share import offsets_admin as oa

    resp_t = codecs.codec(DELETE_SHARE_GROUP_OFFSETS, ctx.api_version).response_type
    topic_t = nested(resp_t, "DeleteShareGroupOffsetsResponseTopic")
    gid = req.group_id

    def answer(err: ErrorCode, message: str | None, topics: list[oa.TopicResult]) -> Any:
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=err, error_message=message,
                     responses=tuple(build(topic_t, topic_name=t.name, topic_id=t.topic_id,
                                           error_code=t.error, error_message=t.message)
                                     for t in topics))

    if not access.permits(ctx, Operation.DELETE, ResourceType.GROUP, gid):
        return answer(ErrorCode.group_authorization_failed, GROUP_AUTH_MESSAGE, [])
    early: list[oa.TopicResult] = []
    passed: list[str] = []
    for t in req.topics:
        if access.permits(ctx, Operation.READ, ResourceType.TOPIC, t.topic_name):
            passed.append(t.topic_name)
        else:
            early.append(oa.TopicResult(t.topic_name, None,
                                        error=ErrorCode.topic_authorization_failed,
                                        message=TOPIC_AUTH_MESSAGE))
    by_name, _names = _topics_meta(runtime)
    change = _refused(runtime, gid)
    if change is None:
        _status, kind, group = _group(runtime, gid) if gid else (NO_ERROR, None, None)
        change = oa.delete(gid, kind, group, passed, store.states(), by_name)
    if change.error is not NO_ERROR:
        return answer(change.error, change.message, [])
    if change.deletes:
        written = store.apply(change)
        if written is not NO_ERROR:
            return answer(written, None, [])
        record_state_metadata(runtime, change)
    return answer(NO_ERROR, None, early + list(change.topics))
