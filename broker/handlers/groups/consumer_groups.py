"""ConsumerGroupHeartbeat v0-v1 and ConsumerGroupDescribe v0-v1 (KIP-848 consumer groups),
as KafkaApis serves them: UNSUPPORTED_VERSION when the consumer rebalance protocol is off
(``group.coordinator.rebalance.protocols`` without ``consumer``), Read on the group for a
heartbeat, Describe on the subscribed topics (and, for a regex, only the topics the
principal may describe are resolved), Describe on each group for ConsumerGroupDescribe."""

from __future__ import annotations

import struct
from typing import Any

from kafkalite.coordinator.results import (
    ConsumerHeartbeatResult,
    DescribedConsumerGroup,
    DescribedTopicPartitions,
)
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, millis, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE, OPS_OMITTED
from kafkalite.protocol.varint import write_uvarint

from ...auth import Access, Operation, ResourceType
from ...context import RequestContext
from .groups import TOPICS_NOT_DESCRIBABLE, GroupAcl, describable_groups

CONSUMER_GROUP_HEARTBEAT = ApiKey.CONSUMER_GROUP_HEARTBEAT
CONSUMER_GROUP_DESCRIBE = ApiKey.CONSUMER_GROUP_DESCRIBE

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    CONSUMER_GROUP_HEARTBEAT: (0, 1),
    CONSUMER_GROUP_DESCRIBE: (0, 1),
}


def _compact_string(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    raw = s.encode()
    return write_uvarint(len(raw) + 1) + raw


_HB_HEAD = struct.Struct(">ih")
_HB_EPOCHS = struct.Struct(">ii")
_I32 = struct.Struct(">i")


def encode_heartbeat_response(res: ConsumerHeartbeatResult) -> bytes:
    """A ConsumerGroupHeartbeat response body (v0 and v1 share it), by hand: this answers
    every heartbeat of every member (kio's encoder costs more than the heartbeat itself).
    Topic ids in Kafka's ``Uuid`` order, partitions ascending."""
    parts = [_HB_HEAD.pack(0, res.error), _compact_string(res.message),
             _compact_string(res.member_id),
             _HB_EPOCHS.pack(res.member_epoch, res.heartbeat_interval_ms)]
    a = res.assignment
    if a is None:
        parts.append(b"\xff")  # a null struct
    else:
        from kafkalite.coordinator.consumer.assignors import java_uuid_key

        parts.append(b"\x01")
        parts.append(write_uvarint(len(a) + 1))
        for t in sorted(a, key=java_uuid_key):
            ps = sorted(a[t])
            parts.append(t.bytes)
            parts.append(write_uvarint(len(ps) + 1))
            parts.append(b"".join(_I32.pack(x) for x in ps))
            parts.append(b"\x00")  # the topic's tagged fields
        parts.append(b"\x00")  # the assignment's tagged fields
    parts.append(b"\x00")  # the response's tagged fields
    return b"".join(parts)


def _heartbeat_response(version: int, res: ConsumerHeartbeatResult) -> bytes:
    return encode_heartbeat_response(res)


def consumer_group_heartbeat(runtime: CoordinatorRuntime, access: Access, enabled: bool,
                             group_acl: GroupAcl, ctx: RequestContext, req: Any) -> bytes:
    """``group_acl``: Read on the group, cached per group id (every heartbeat asks)."""
    version = ctx.api_version
    if not enabled:
        # As KafkaApis: the API is there, the protocol is not.
        return _heartbeat_response(version, ConsumerHeartbeatResult(
            ErrorCode.unsupported_version))
    if not access.authorizer.authorize(ctx.principal, group_acl(req)[0], ctx.client_host):
        return _heartbeat_response(version, ConsumerHeartbeatResult(
            ErrorCode.group_authorization_failed))
    names = req.subscribed_topic_names
    may_describe = None
    if not access.open:
        if names and not all(access.permits(ctx, Operation.DESCRIBE, ResourceType.TOPIC, t)
                             for t in set(names)):
            return _heartbeat_response(version, ConsumerHeartbeatResult(
                ErrorCode.topic_authorization_failed))

        def may_describe(topic: str) -> bool:
            return access.permits(ctx, Operation.DESCRIBE, ResourceType.TOPIC, topic)

    # KIP-848 groups' modules load with the first consumer group heartbeat.
    from kafkalite.coordinator.consumer.lifecycle import ConsumerHeartbeatRequest

    owned = req.topic_partitions
    request = ConsumerHeartbeatRequest(
        group_id=req.group_id,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
        instance_id=req.instance_id,
        rack_id=req.rack_id,
        rebalance_timeout_ms=millis(req.rebalance_timeout),
        subscribed_topic_names=names,
        subscribed_topic_regex=getattr(req, "subscribed_topic_regex", None),
        server_assignor=req.server_assignor,
        topic_partitions=None if owned is None else [
            (tp.topic_id, tp.partitions) for tp in owned if tp.topic_id is not None],
        client_id=ctx.client_id,
        client_host="/" + ctx.client_host,
        api_version=version,
        may_describe=may_describe,
    )
    groups = runtime.groups
    # Nothing written: the timers alone moved (as the classic Heartbeat's path).
    steady = groups.read(lambda g, now: g.steady_heartbeat(now, request))
    if steady is not None:
        return encode_heartbeat_response(steady)
    res: ConsumerHeartbeatResult = groups.write(
        lambda g, now: g.consumer_group_heartbeat(now, request))
    return _heartbeat_response(version, res)


def _assignment(resp_t: type[Any], parts: tuple[DescribedTopicPartitions, ...]) -> Any:
    tp_t = nested(resp_t, "TopicPartitions")
    return nested(resp_t, "Assignment")(topic_partitions=tuple(
        tp_t(topic_id=p.topic_id, topic_name=p.topic_name, partitions=p.partitions)
        for p in parts))


def _topics_of(d: DescribedConsumerGroup) -> set[str]:
    out: set[str] = set()
    for m in d.members:
        out.update(m.subscribed_topic_names)
        for parts in (m.assignment, m.target_assignment):
            out.update(p.topic_name for p in parts)
    return out


def consumer_group_describe(runtime: CoordinatorRuntime, access: Access, enabled: bool,
                            ctx: RequestContext, req: Any) -> Any:
    version = ctx.api_version
    resp_t = codecs.codec(CONSUMER_GROUP_DESCRIBE, version).response_type
    group_t = nested(resp_t, "DescribedGroup")
    member_t = nested(resp_t, "Member")

    def failed(gid: str, err: ErrorCode, message: str | None = None) -> Any:
        return build(group_t, error_code=err, error_message=message, group_id=gid,
                     group_state="", group_epoch=0, assignment_epoch=0, assignor_name="",
                     members=(), authorized_operations=OPS_OMITTED)

    if not enabled:
        return build(resp_t, throttle_time=NO_THROTTLE, groups=tuple(
            failed(g, ErrorCode.unsupported_version) for g in req.group_ids))
    authorized, out = describable_groups(access, ctx, req.group_ids, failed)
    want_ops = bool(req.include_authorized_operations)
    for d in runtime.groups.query(lambda g: g.describe_consumer_groups(authorized)):
        if d.error is not NO_ERROR:
            out.append(failed(d.group_id, d.error, d.message))
            continue
        if not access.open and not all(
                access.permits(ctx, Operation.DESCRIBE, ResourceType.TOPIC, t)
                for t in _topics_of(d)):
            # Kafka 4.1+: a member's topics must be describable too.
            out.append(failed(d.group_id, ErrorCode.topic_authorization_failed,
                              TOPICS_NOT_DESCRIBABLE))
            continue
        ops = (access.operations_for(ctx, ResourceType.GROUP, d.group_id) if want_ops
               else OPS_OMITTED)
        out.append(build(
            group_t, error_code=NO_ERROR, error_message=None, group_id=d.group_id,
            group_state=d.state, group_epoch=d.group_epoch,
            assignment_epoch=d.assignment_epoch, assignor_name=d.assignor,
            authorized_operations=ops,
            members=tuple(build(
                member_t, member_id=m.member_id, instance_id=m.instance_id,
                rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
                client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=_assignment(resp_t, m.assignment),
                target_assignment=_assignment(resp_t, m.target_assignment),
                member_type=m.member_type)
                for m in d.members)))
    return build(resp_t, throttle_time=NO_THROTTLE, groups=tuple(out))

