"""OffsetCommit v2-v9, OffsetFetch v1-v9 and OffsetDelete v0: wire <-> the pure offset logic
(``coordinator.offsets``; a consumer group's rules in ``coordinator.consumer_admin``) on the
group coordinator's core, driven by its runtime. OffsetCommit v9 and OffsetFetch v9 carry
a consumer group member's id and epoch (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from kafkalite.coordinator.offsets.committed import DeleteOffsetsResult, FetchResult
from kafkalite.coordinator.offsets.store import (
    CommitRequest,
    OffsetRow,
    PartitionCommit,
    PartitionCommitView,
)
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, millis, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE, ZERO_UUID

from ...auth import Access, Action, Operation, ResourceType
from ...context import RequestContext
from ...topic_store import Storage
from .offsets_wire import encode_commit_response, encode_fetch_response

OFFSET_COMMIT = ApiKey.OFFSET_COMMIT
OFFSET_FETCH = ApiKey.OFFSET_FETCH
OFFSET_DELETE = ApiKey.OFFSET_DELETE

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    OFFSET_COMMIT: (2, 10),
    OFFSET_FETCH: (1, 10),
    OFFSET_DELETE: (0, 0),
}


def _known(topic: str, parts: Sequence[PartitionCommitView], count: int,
           unknown: dict[tuple[str, int], int]) -> list[PartitionCommitView]:
    """The partitions below ``count``; the others go into ``unknown``."""
    for p in parts:
        if not 0 <= p.partition_index < count:
            unknown[(topic, p.partition_index)] = ErrorCode.unknown_topic_or_partition
    return [p for p in parts if 0 <= p.partition_index < count]




class _ById(NamedTuple):
    """A v10 request topic (named by id) with the name the catalogue knows it by, or a
    placeholder that keys its UNKNOWN_TOPIC_ID answers."""

    name: str
    topic_id: uuid.UUID
    partitions: Any
    known: bool


def _by_id(storage: Storage, topics: Any) -> list[_ById]:
    out = []
    for t in topics:
        tid = t.topic_id or ZERO_UUID  # kio reads the zero UUID as None
        info = storage.catalog.by_id(tid)
        out.append(_ById(info.name if info is not None else f"\x00{tid}", tid,
                         t.partitions, info is not None))
    return out


def offset_commit(storage: Storage, runtime: CoordinatorRuntime, access: Access,
                  ctx: RequestContext, req: Any) -> bytes:
    v = ctx.api_version
    # As KafkaApis: partitions of unknown topics are answered UNKNOWN_TOPIC_OR_PARTITION
    # (v10, which names topics by id: UNKNOWN_TOPIC_ID) and not committed.
    unknown: dict[tuple[str, int], int] = {}
    topics: list[tuple[str, Sequence[PartitionCommitView]]] = []
    catalog = storage.catalog
    req_topics: Any = req.topics
    if v >= 10:
        req_topics = _by_id(storage, req.topics)
        for t in req_topics:
            if not t.known:
                for p in t.partitions:
                    unknown[(t.name, p.partition_index)] = ErrorCode.unknown_topic_id
        if unknown:
            known = [t for t in req_topics if t.known]
            if not known:
                return encode_commit_response(v, req_topics, unknown)
    checked = not access.open  # without an authorizer every check below would pass
    if checked and not access.permits(ctx, Operation.READ, ResourceType.GROUP, req.group_id):
        return encode_commit_response(v, req_topics, {}, ErrorCode.group_authorization_failed)
    for t in req_topics:
        if v >= 10 and not t.known:
            continue
        if checked and not access.permits(ctx, Operation.READ, ResourceType.TOPIC, t.name):
            for p in t.partitions:
                unknown[(t.name, p.partition_index)] = ErrorCode.topic_authorization_failed
            continue
        info = catalog.get(t.name)
        count = -1 if info is None else info.partitions
        parts: Sequence[PartitionCommitView] = t.partitions
        if v < 6:  # no leader epoch before v6
            parts = [PartitionCommit(p.partition_index, p.committed_offset, -1,
                                     p.committed_metadata) for p in parts]
        for p in parts:  # a loop, not all() over a generator: this runs per commit
            if not 0 <= p.partition_index < count:
                parts = _known(t.name, parts, count, unknown)
                break
        if parts:
            topics.append((t.name, parts))
    if not topics:
        return encode_commit_response(v, req_topics, unknown)
    # Positional (group, member, instance, generation, retention, topics, version): this
    # runs per commit.
    request = CommitRequest(
        req.group_id, req.member_id, req.group_instance_id if v >= 7 else None,
        req.generation_id_or_member_epoch,
        millis(req.retention_time) if 2 <= v <= 4 else -1, topics, v)
    result: dict[tuple[str, int], int] = runtime.groups.write(
        lambda g, now: g.commit_offsets(now, request))
    if unknown:
        result = {**unknown, **result}
    return encode_commit_response(v, req_topics, result)


def _fetch_group(runtime: CoordinatorRuntime, access: Access, ctx: RequestContext, v: int,
                 group_id: str, topics: Any, require_stable: bool,
                 member_id: str | None = None, member_epoch: int = -1,
                 ) -> tuple[int, list[tuple[str, list[OffsetRow]]]]:
    error: int
    if access.open:  # nothing to filter: the path of every broker without ACLs
        wanted = None if topics is None else [(t.name, t.partition_indexes) for t in topics]
        error, rows = runtime.groups.query(lambda g: g.fetch_committed(
            group_id, wanted, require_stable, member_id, member_epoch))
    else:
        error, rows = _fetch_authorized(runtime, access, ctx, v, group_id, topics,
                                        require_stable, member_id, member_epoch)
    if v <= 1 and error != NO_ERROR:
        # v0-v1 have no top-level error: put it on every partition.
        rows = [(t, [(p, -1, -1, "", error) for p, *_ in parts]) for t, parts in rows]
    return error, rows


def _fetch_authorized(runtime: CoordinatorRuntime, access: Access, ctx: RequestContext,
                      v: int, group_id: str, topics: Any, require_stable: bool,
                      member_id: str | None, member_epoch: int,
                      ) -> tuple[int, list[tuple[str, list[OffsetRow]]]]:
    """The fetch as an authorizer filters it."""
    if not access.permits(ctx, Operation.DESCRIBE, ResourceType.GROUP, group_id):
        denied = ErrorCode.group_authorization_failed
        if v <= 1:
            return denied, [(t.name, [(p, -1, -1, "", denied) for p in t.partition_indexes])
                            for t in topics or ()]
        return denied, []

    def may_describe(topic: str) -> bool:
        return access.permits(ctx, Operation.DESCRIBE, ResourceType.TOPIC, topic)

    wanted = None if topics is None else [(t.name, tuple(t.partition_indexes))
                                          for t in topics if may_describe(t.name)]
    fetched: FetchResult = runtime.groups.query(lambda g: g.fetch_committed(
        group_id, wanted, require_stable, member_id, member_epoch))
    error, rows = fetched
    # As KafkaApis: an all-topics fetch leaves out what the principal may not describe;
    # named topics it may not describe are answered TOPIC_AUTHORIZATION_FAILED.
    if topics is None:
        rows = [(t, parts) for t, parts in rows if may_describe(t)]
    for t in topics or ():
        if not may_describe(t.name):
            rows.append((t.name, [(p, -1, -1, "", int(ErrorCode.topic_authorization_failed))
                                  for p in t.partition_indexes]))
    return error, rows


def offset_fetch(storage: Storage, runtime: CoordinatorRuntime, access: Access,
                 ctx: RequestContext, req: Any) -> bytes:
    v = ctx.api_version
    require_stable = v >= 7 and req.require_stable
    if v >= 10:
        return _offset_fetch_by_id(storage, runtime, access, ctx, req)
    if v >= 8:
        groups = []
        for g in req.groups:  # v9 adds the member's id and epoch
            error, rows = _fetch_group(runtime, access, ctx, v, g.group_id, g.topics,
                                       require_stable, g.member_id if v >= 9 else None,
                                       g.member_epoch if v >= 9 else -1)
            groups.append((g.group_id, error, rows))
        return encode_fetch_response(v, groups)
    topics_req = req.topics if v >= 2 else req.topics or ()
    err, rows = _fetch_group(runtime, access, ctx, v, req.group_id, topics_req, require_stable)
    return encode_fetch_response(v, [(req.group_id, err, rows)])


class _NamedTopic(NamedTuple):
    name: str
    partition_indexes: Any


def _offset_fetch_by_id(storage: Storage, runtime: CoordinatorRuntime, access: Access,
                        ctx: RequestContext, req: Any) -> bytes:
    """v10: topics named by id in the request and the response. An id the catalogue does
    not know is answered UNKNOWN_TOPIC_ID; a committed topic that no longer exists is left
    out of an all-topics answer (it has no id to name it by)."""
    v = ctx.api_version
    groups: list[tuple[str, int, list[tuple[str | uuid.UUID, list[OffsetRow]]]]] = []
    for g in req.groups:
        named: list[_NamedTopic] | None = None
        missing: list[tuple[str | uuid.UUID, list[OffsetRow]]] = []
        if g.topics is not None:
            named = []
            for t in g.topics:
                info = storage.catalog.by_id(t.topic_id or ZERO_UUID)
                if info is None:
                    missing.append((t.topic_id or ZERO_UUID, [
                        (p, -1, -1, "", int(ErrorCode.unknown_topic_id))
                        for p in t.partition_indexes]))
                else:
                    named.append(_NamedTopic(info.name, t.partition_indexes))
        error, rows = _fetch_group(runtime, access, ctx, v, g.group_id, named,
                                   v >= 7 and req.require_stable, g.member_id,
                                   g.member_epoch)
        out: list[tuple[str | uuid.UUID, list[OffsetRow]]] = []
        for name, parts in rows:
            info = storage.catalog.get(name)
            if info is not None:
                out.append((info.topic_id, list(parts)))
        groups.append((g.group_id, error, out + missing))
    return encode_fetch_response(v, groups)


def offset_delete(storage: Storage, runtime: CoordinatorRuntime, access: Access,
                  ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(OFFSET_DELETE, ctx.api_version).response_type
    topic_t = nested(resp_t, "OffsetDeleteResponseTopic")
    part_t = nested(resp_t, "OffsetDeleteResponsePartition")
    # As KafkaApis: partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION.
    wanted: list[tuple[str, tuple[int, ...]]] = []
    unknown: list[tuple[str, list[tuple[int, ErrorCode]]]] = []
    for t in req.topics:
        if not access.permits(ctx, Operation.READ, ResourceType.TOPIC, t.name):
            unknown.append((t.name, [(p.partition_index, ErrorCode.topic_authorization_failed)
                                     for p in t.partitions]))
            continue
        info = storage.catalog.get(t.name)
        ok = tuple(p.partition_index for p in t.partitions
                   if info is not None and 0 <= p.partition_index < info.partitions)
        bad = [(p.partition_index, ErrorCode.unknown_topic_or_partition)
               for p in t.partitions if p.partition_index not in ok]
        if ok:
            wanted.append((t.name, ok))
        if bad:
            unknown.append((t.name, bad))
    deleted: DeleteOffsetsResult = runtime.groups.write(
        lambda g, now: g.delete_offsets(now, req.group_id, wanted))
    err, rows = deleted
    if err == NO_ERROR and unknown:
        merged: dict[str, list[tuple[int, ErrorCode]]] = {t: list(parts) for t, parts in rows}
        for t, parts in unknown:
            merged.setdefault(t, []).extend(parts)
        rows = list(merged.items())
    return build(
        resp_t, error_code=ErrorCode(err), throttle_time=NO_THROTTLE,
        topics=tuple(build(topic_t, name=t, partitions=tuple(
            build(part_t, partition_index=p, error_code=ErrorCode(e)) for p, e in parts))
            for t, parts in rows),
    )


def offset_delete_acl(req: Any) -> list[Action]:
    return [Action(Operation.DELETE, ResourceType.GROUP, req.group_id)]
