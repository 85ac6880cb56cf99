"""Group membership APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Requests go straight to the coordinator runtime on this loop; JoinGroup and SyncGroup may
park (a future resolved by the runtime), Heartbeat never does. The three are encoded by
hand (JoinGroup and SyncGroup in ``group_wire``).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable, Iterable
from typing import Any

from kafkalite.coordinator.classic.membership import JoinRequest
from kafkalite.coordinator.results import PARKED, JoinResult, LeaveResult, SyncResult
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, millis, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE

from ...auth import Access, Action, Operation, ResourceType
from ...context import RequestContext
from .group_wire import join_body, sync_body

JOIN_GROUP = ApiKey.JOIN_GROUP
HEARTBEAT = ApiKey.HEARTBEAT
LEAVE_GROUP = ApiKey.LEAVE_GROUP
SYNC_GROUP = ApiKey.SYNC_GROUP

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    JOIN_GROUP: (0, 9),
    SYNC_GROUP: (0, 5),
    HEARTBEAT: (0, 4),
    LEAVE_GROUP: (0, 5),
}


# Heartbeat response bodies by version, then error: v0 error only; v1-3 throttle + error;
# v4 adds an empty tagged-field section.
_HB_BODY: tuple[dict[ErrorCode, bytes], ...] = tuple(
    {
        e: (struct.pack(">h", e.value) if v == 0 else
            struct.pack(">ih", 0, e.value) if v < 4 else struct.pack(">ihb", 0, e.value, 0))
        for e in ErrorCode
    }
    for v in range(5)
)


def join_group(runtime: CoordinatorRuntime, ctx: RequestContext, req: Any) -> Any:
    """Answered at once, or parked until the rebalance completes (a future)."""
    version = ctx.api_version
    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def waiter(res: JoinResult) -> None:
        if not fut.done():
            fut.set_result(join_body(version, res))

    session = millis(req.session_timeout)
    request = JoinRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        group_instance_id=getattr(req, "group_instance_id", None),
        require_known_member_id=version >= 4,
        client_id=ctx.client_id,
        client_host="/" + ctx.client_host,
        rebalance_timeout_ms=millis(getattr(req, "rebalance_timeout", None), session),
        session_timeout_ms=session,
        protocol_type=req.protocol_type,
        protocols=[(p.name, p.metadata) for p in req.protocols],
        reason=getattr(req, "reason", None),
        version=version,
    )
    response = runtime.groups.write(lambda g, now: g.join(now, waiter, request))
    if response is not PARKED:
        return join_body(version, response)
    return fut


def sync_group(runtime: CoordinatorRuntime, ctx: RequestContext, req: Any) -> Any:
    """Answered at once, or parked until the leader's assignment arrives (a future)."""
    version = ctx.api_version
    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def waiter(res: SyncResult) -> None:
        if not fut.done():
            fut.set_result(sync_body(version, res))

    response = runtime.groups.write(lambda g, now: g.sync(
        now, waiter,
        group_id=req.group_id,
        generation=req.generation_id,
        member_id=req.member_id,
        group_instance_id=getattr(req, "group_instance_id", None),
        protocol_type=getattr(req, "protocol_type", None),
        protocol_name=getattr(req, "protocol_name", None),
        assignments={a.member_id: a.assignment for a in req.assignments},
    ))
    if response is not PARKED:
        return sync_body(version, response)
    return fut


def heartbeat(runtime: CoordinatorRuntime, ctx: RequestContext, req: Any) -> bytes:
    """The hottest path: no parking, no kio encoder, timers touched only when moved."""
    version = ctx.header.api_version
    err = runtime.groups.read(lambda g, now: g.heartbeat(
        now, req.group_id, req.member_id, req.group_instance_id if version >= 3 else None,
        req.generation_id))
    return _HB_BODY[version][err]


def leave_group(runtime: CoordinatorRuntime, ctx: RequestContext, req: Any) -> Any:
    version = ctx.api_version
    resp_t = codecs.codec(LEAVE_GROUP, version).response_type
    members: list[tuple[str, str | None, str | None]]
    if version < 3:
        members = [(req.member_id, None, None)]
    else:
        members = [(m.member_id, m.group_instance_id, getattr(m, "reason", None))
                   for m in req.members]
    res: LeaveResult = runtime.groups.write(lambda g, now: g.leave(now, req.group_id, members))
    if version < 3:
        err = res.error
        if err is NO_ERROR and res.members:
            err = res.members[0][2]
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=err)
    member_t = nested(resp_t, "MemberResponse")
    return build(
        resp_t, throttle_time=NO_THROTTLE, error_code=res.error,
        members=tuple(build(member_t, member_id=m, group_instance_id=i, error_code=e)
                      for m, i, e in res.members),
    )


#: A described group's error when its members use topics the client may not describe
#: (Kafka 4.1+).
TOPICS_NOT_DESCRIBABLE = ("The described group uses topics that the client is not "
                          "authorized to describe.")


def describable_groups(access: Access, ctx: RequestContext, group_ids: Iterable[str],
                       failed: Callable[[str, ErrorCode], Any]) -> tuple[list[str], list[Any]]:
    """The group ids the client may DESCRIBE, and for the others the answer ``failed``
    builds with GROUP_AUTHORIZATION_FAILED (the Describe requests of every group type)."""
    authorized: list[str] = []
    refused: list[Any] = []
    for gid in group_ids:
        if access.permits(ctx, Operation.DESCRIBE, ResourceType.GROUP, gid):
            authorized.append(gid)
        else:
            refused.append(failed(gid, ErrorCode.group_authorization_failed))
    return authorized, refused


class GroupAcl:
    """READ on the request's group, cached per group id: this runs for every heartbeat."""

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: dict[str, tuple[Action]] = {}

    def __call__(self, req: Any) -> tuple[Action]:
        gid = req.group_id
        found = self._cache.get(gid)
        if found is None:
            if len(self._cache) > 10000:
                self._cache.clear()
            found = self._cache[gid] = (Action(Operation.READ, ResourceType.GROUP, gid),)
        return found
