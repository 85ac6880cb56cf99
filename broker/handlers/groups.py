"""Group membership APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Requests go straight to the coordinator runtime on this loop; JoinGroup and SyncGroup may
park (a future resolved by the runtime), Heartbeat never does and is encoded by hand.
"""

from __future__ import annotations

import asyncio
import datetime
import struct
from time import time
from typing import TYPE_CHECKING, Any

from kafkalite.coordinator.core import CoreConfig
from kafkalite.coordinator.results import PARKED, JoinResult, LeaveResult, SyncResult
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.names import NO_THROTTLE, OFFSETS_TOPIC

from ..auth import Action, Operation, ResourceType
from ..context import RequestContext

if TYPE_CHECKING:
    from ..server import Broker

FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14

_MS = datetime.timedelta(milliseconds=1)


def _ms(value: Any, default: int = -1) -> int:
    if value is None:
        return default
    if isinstance(value, datetime.timedelta):
        return value // _MS
    return int(value)


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


def heartbeat_body(version: int, error: ErrorCode) -> bytes:
    return _HB_BODY[version][error]


def make_runtime(broker: Broker) -> CoordinatorRuntime:
    cfg = broker.config
    core_cfg = CoreConfig(
        num_partitions=cfg.int("offsets.topic.num.partitions"),
        min_session_timeout_ms=cfg.int("group.min.session.timeout.ms"),
        max_session_timeout_ms=cfg.int("group.max.session.timeout.ms"),
        max_size=cfg.int("group.max.size"),
        initial_rebalance_delay_ms=cfg.int("group.initial.rebalance.delay.ms"),
    )
    logs = broker.logs
    if logs is None:
        from kafkalite.coordinator.memlog import MemoryLogs

        logs = MemoryLogs()
    runtime = CoordinatorRuntime(core_cfg, logs)
    # The offsets component (handlers/offsets.py) receives offset commit records from the
    # first load on.
    runtime.offsets = getattr(broker, "offsets_replay", None)
    return runtime


def install(broker: Broker) -> None:
    runtime: CoordinatorRuntime | None = None

    def rt() -> CoordinatorRuntime:
        assert runtime is not None
        return runtime

    def ensure_topic() -> None:
        # Like Kafka, the topic is created on first use (FindCoordinator for a group).
        if broker.topics.get(OFFSETS_TOPIC) is None:
            broker.create_topic(
                OFFSETS_TOPIC,
                rt().core.config.num_partitions,
                {
                    "cleanup.policy": "compact",
                    "segment.bytes": str(broker.config.int("offsets.topic.segment.bytes")),
                },
                internal=True,
            )

    async def start() -> None:
        nonlocal runtime
        runtime = make_runtime(broker)
        info = broker.topics.get(OFFSETS_TOPIC)
        if info is not None:
            # The topic's partition count wins over the property, as in Kafka.
            runtime.core.config.num_partitions = info.partitions
        runtime.ensure_topic = ensure_topic
        broker.coordinator = runtime
        await runtime.load_all(exists=info is not None)

    async def stop() -> None:
        if runtime is not None:
            await runtime.stop()

    broker.add_service(start, stop)

    # --- FindCoordinator ------------------------------------------------------------

    def find_coordinator(ctx: RequestContext, req: Any) -> Any:
        resp_t = codecs.codec(FIND_COORDINATOR, ctx.api_version).response_type
        listener = next((b for b in broker.listeners if b.name == ctx.listener),
                        broker.listeners[0])
        key_type = getattr(req, "key_type", 0)

        def answer(key: str) -> tuple[ErrorCode, str | None]:
            if key_type == 0 and runtime is not None and key:
                ensure_topic()
            if key_type == 0 and runtime is not None:
                err = runtime.core.group_status(key)
                if err is ErrorCode.coordinator_load_in_progress:
                    return ErrorCode.coordinator_load_in_progress, None
                if err is ErrorCode.invalid_group_id:
                    return ErrorCode.invalid_request, "empty group id"
                if err is not ErrorCode.none:
                    return ErrorCode.coordinator_not_available, None
            elif runtime is None:
                return ErrorCode.coordinator_not_available, None
            return ErrorCode.none, None

        if ctx.api_version >= 4:
            coord_t = nested(resp_t, "Coordinator")
            out = []
            for key in req.coordinator_keys:
                err, msg = answer(key)
                ok = err is ErrorCode.none
                out.append(build(coord_t, key=key, node_id=broker.node_id if ok else -1,
                                 host=listener.advertised_host if ok else "",
                                 port=listener.advertised_port if ok else -1,
                                 error_code=err, error_message=msg))
            return build(resp_t, throttle_time=NO_THROTTLE, coordinators=tuple(out))
        err, msg = answer(req.key)
        ok = err is ErrorCode.none
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=err, error_message=msg,
                     node_id=broker.node_id if ok else -1,
                     host=listener.advertised_host if ok else "",
                     port=listener.advertised_port if ok else -1)

    def find_acl(req: Any) -> list[Action]:
        keys = req.coordinator_keys if hasattr(req, "coordinator_keys") else (req.key,)
        rtype = ResourceType.GROUP if getattr(req, "key_type", 0) == 0 \
            else ResourceType.TRANSACTIONAL_ID
        return [Action(Operation.DESCRIBE, rtype, k) for k in keys]

    # --- JoinGroup ------------------------------------------------------------------

    def join_response(version: int, res: JoinResult) -> Any:
        resp_t = codecs.codec(JOIN_GROUP, version).response_type
        member_t = nested(resp_t, "JoinGroupResponseMember")
        members = tuple(
            build(member_t, member_id=mid, group_instance_id=iid, metadata=meta)
            for mid, iid, meta in res.members
        )
        name = res.protocol_name
        if name is None and version < 7:
            name = ""
        return build(
            resp_t, throttle_time=NO_THROTTLE, error_code=res.error, generation_id=res.generation,
            protocol_type=res.protocol_type, protocol_name=name, leader=res.leader,
            skip_assignment=res.skip_assignment, member_id=res.member_id, members=members,
        )

    def join_group(ctx: RequestContext, req: Any) -> Any:
        r = rt()
        version = ctx.api_version
        loop = r.loop
        fut: asyncio.Future[Any] = loop.create_future()

        def waiter(res: JoinResult) -> None:
            if not fut.done():
                fut.set_result(join_response(version, res))

        session = _ms(req.session_timeout)
        out = r.core.join(
            r.now(), waiter,
            group_id=req.group_id,
            member_id=req.member_id,
            group_instance_id=getattr(req, "group_instance_id", None),
            require_known_member_id=version >= 4,
            client_id=ctx.client_id,
            client_host="/" + ctx.client_host,
            rebalance_timeout_ms=_ms(getattr(req, "rebalance_timeout", None), session),
            session_timeout_ms=session,
            protocol_type=req.protocol_type,
            protocols=[(p.name, p.metadata) for p in req.protocols],
            reason=getattr(req, "reason", None),
            version=version,
        )
        response = r.process(out)
        if response is not PARKED:
            return join_response(version, response)
        return fut

    # --- SyncGroup ------------------------------------------------------------------

    def sync_response(version: int, res: SyncResult) -> Any:
        resp_t = codecs.codec(SYNC_GROUP, version).response_type
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=res.error,
                     protocol_type=res.protocol_type, protocol_name=res.protocol_name,
                     assignment=res.assignment)

    def sync_group(ctx: RequestContext, req: Any) -> Any:
        r = rt()
        version = ctx.api_version
        fut: asyncio.Future[Any] = r.loop.create_future()

        def waiter(res: SyncResult) -> None:
            if not fut.done():
                fut.set_result(sync_response(version, res))

        out = r.core.sync(
            r.now(), waiter,
            group_id=req.group_id,
            generation=req.generation_id,
            member_id=req.member_id,
            group_instance_id=getattr(req, "group_instance_id", None),
            protocol_type=getattr(req, "protocol_type", None),
            protocol_name=getattr(req, "protocol_name", None),
            assignments={a.member_id: a.assignment for a in req.assignments},
        )
        response = r.process(out)
        if response is not PARKED:
            return sync_response(version, response)
        return fut

    # --- Heartbeat ------------------------------------------------------------------

    def heartbeat(ctx: RequestContext, req: Any) -> bytes:
        r = runtime
        version = ctx.header.api_version
        if r is None:
            return _HB_BODY[version][ErrorCode.coordinator_not_available]
        core = r.core
        timers = core.timers
        pushes = timers.pushes
        err = core.heartbeat(int(time() * 1000), req.group_id, req.member_id,
                             req.group_instance_id if version >= 3 else None, req.generation_id)
        if timers.pushes != pushes:
            r.process_timers()
        return _HB_BODY[version][err]

    # --- LeaveGroup -----------------------------------------------------------------

    def leave_group(ctx: RequestContext, req: Any) -> Any:
        r = rt()
        version = ctx.api_version
        resp_t = codecs.codec(LEAVE_GROUP, version).response_type
        members: list[tuple[str, str | None, str | None]]
        if version < 3:
            members = [(req.member_id, None, None)]
        else:
            members = [(m.member_id, m.group_instance_id, getattr(m, "reason", None))
                       for m in req.members]
        res: LeaveResult = r.process(r.core.leave(r.now(), req.group_id, members))
        if version < 3:
            err = res.error
            if err is ErrorCode.none and res.members:
                err = res.members[0][2]
            return build(resp_t, throttle_time=NO_THROTTLE, error_code=err)
        member_t = nested(resp_t, "MemberResponse")
        return build(
            resp_t, throttle_time=NO_THROTTLE, error_code=res.error,
            members=tuple(build(member_t, member_id=m, group_instance_id=i, error_code=e)
                          for m, i, e in res.members),
        )

    acl_cache: dict[str, tuple[Action]] = {}

    def group_acl(req: Any) -> tuple[Action]:
        # Cached: this runs for every heartbeat.
        gid = req.group_id
        found = acl_cache.get(gid)
        if found is None:
            if len(acl_cache) > 10000:
                acl_cache.clear()
            found = acl_cache[gid] = (Action(Operation.READ, ResourceType.GROUP, gid),)
        return found

    apis = broker.apis
    apis.register(FIND_COORDINATOR, find_coordinator, min_version=0, max_version=6, acl=find_acl)
    apis.register(JOIN_GROUP, join_group, min_version=0, max_version=9, acl=group_acl)
    apis.register(SYNC_GROUP, sync_group, min_version=0, max_version=5, acl=group_acl)
    apis.register(HEARTBEAT, heartbeat, min_version=0, max_version=4, acl=group_acl)
    apis.register(LEAVE_GROUP, leave_group, min_version=0, max_version=5, acl=group_acl)
