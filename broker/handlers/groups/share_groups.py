"""ShareGroupHeartbeat v1 and ShareGroupDescribe v1 (KIP-932 share groups), authorized as
KafkaApis does: Read on the group and Describe on every subscribed topic for a heartbeat,
Describe on each group (and on the topics its members use) for ShareGroupDescribe."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.coordinator.topics_image import TopicsImage
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE, OPS_OMITTED

from ...auth import Access, Operation, ResourceType
from ...context import RequestContext
from .groups import TOPICS_NOT_DESCRIBABLE, GroupAcl, describable_groups

if TYPE_CHECKING:
    from kafkalite.coordinator.share.group import DescribedShareGroup, ShareHeartbeatResult

SHARE_GROUP_HEARTBEAT = ApiKey.SHARE_GROUP_HEARTBEAT
SHARE_GROUP_DESCRIBE = ApiKey.SHARE_GROUP_DESCRIBE

#: The versions served: (lowest, highest).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    SHARE_GROUP_HEARTBEAT: (1, 1),
    SHARE_GROUP_DESCRIBE: (1, 1),
}

_MS = datetime.timedelta(milliseconds=1)


def _heartbeat_response(version: int, res: ShareHeartbeatResult) -> Any:
    resp_t = codecs.codec(SHARE_GROUP_HEARTBEAT, version).response_type
    assignment = None
    if res.assignment is not None:
        tp_t = nested(resp_t, "TopicPartitions")
        assignment = nested(resp_t, "Assignment")(topic_partitions=tuple(
            tp_t(topic_id=tp.topic_id, partitions=tp.partitions) for tp in res.assignment))
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=res.error,
                 error_message=res.error_message, member_id=res.member_id,
                 member_epoch=res.member_epoch,
                 heartbeat_interval=res.heartbeat_interval_ms * _MS, assignment=assignment)


def share_group_heartbeat(runtime: CoordinatorRuntime, access: Access, group_acl: GroupAcl,
                          ctx: RequestContext, req: Any) -> Any:
    # Share groups' modules are imported by the first share group request, not at start-up.
    from kafkalite.coordinator.share.group import ShareHeartbeat, ShareHeartbeatResult

    version = ctx.api_version
    if not access.authorizer.authorize(ctx.principal, group_acl(req)[0], ctx.client_host):
        return _heartbeat_response(version, ShareHeartbeatResult(
            ErrorCode.group_authorization_failed))
    names = req.subscribed_topic_names
    if names and not access.open and not all(
            access.permits(ctx, Operation.DESCRIBE, ResourceType.TOPIC, t) for t in set(names)):
        return _heartbeat_response(version, ShareHeartbeatResult(
            ErrorCode.topic_authorization_failed))
    request = ShareHeartbeat(
        group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
        rack_id=req.rack_id,
        subscribed_topic_names=None if names is None else tuple(names),
        client_id=ctx.client_id, client_host="/" + ctx.client_host)
    res: ShareHeartbeatResult = runtime.groups.write(
        lambda g, now: g.share_group_heartbeat(now, request))
    return _heartbeat_response(version, res)


def _parts(resp_t: type[Any], topics: TopicsImage, assigned: Any) -> Any:
    tp_t = nested(resp_t, "TopicPartitions")
    by_topic: dict[Any, list[int]] = {}
    for topic_id, p in assigned:
        by_topic.setdefault(topic_id, []).append(p)
    return nested(resp_t, "Assignment")(topic_partitions=tuple(
        tp_t(topic_id=t, topic_name=topics.name_of(t) or "", partitions=tuple(sorted(ps)))
        for t, ps in sorted(by_topic.items(), key=lambda kv: kv[0].bytes)))


def _topics_of(d: DescribedShareGroup, topics: TopicsImage) -> set[str]:
    out: set[str] = set()
    for m in d.members:
        out.update(m.subscribed_topic_names)
        out.update(n for n in (topics.name_of(t) for t, _p in m.assigned) if n is not None)
    return out


def share_group_describe(runtime: CoordinatorRuntime, access: Access, ctx: RequestContext,
                         req: Any) -> Any:
    resp_t = codecs.codec(SHARE_GROUP_DESCRIBE, ctx.api_version).response_type
    group_t = nested(resp_t, "DescribedGroup")
    member_t = nested(resp_t, "Member")

    def failed(gid: str, err: ErrorCode, message: str | None = None) -> Any:
        return build(group_t, error_code=err, error_message=message, group_id=gid,
                     group_state="", group_epoch=0, assignment_epoch=0, assignor_name="",
                     members=(), authorized_operations=OPS_OMITTED)

    authorized, out = describable_groups(access, ctx, req.group_ids, failed)
    want_ops = bool(req.include_authorized_operations)
    topics = runtime.groups.query(lambda g: g.topics)
    for d in runtime.groups.query(lambda g: g.describe_share_groups(authorized)):
        group = d.group
        if group is None:
            out.append(failed(d.group_id, d.error, d.message))
            continue
        if not access.open and not all(
                access.permits(ctx, Operation.DESCRIBE, ResourceType.TOPIC, t)
                for t in _topics_of(group, topics)):
            out.append(failed(d.group_id, ErrorCode.topic_authorization_failed,
                              TOPICS_NOT_DESCRIBABLE))
            continue
        ops = (access.operations_for(ctx, ResourceType.GROUP, d.group_id) if want_ops
               else OPS_OMITTED)
        out.append(build(
            group_t, error_code=NO_ERROR, error_message=None, group_id=d.group_id,
            group_state=group.state, group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch, assignor_name=group.assignor_name,
            authorized_operations=ops,
            members=tuple(build(
                member_t, member_id=m.member_id, rack_id=m.rack_id,
                member_epoch=m.member_epoch, client_id=m.client_id,
                client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
                assignment=_parts(resp_t, topics, m.assigned))
                for m in group.members)))
    return build(resp_t, throttle_time=NO_THROTTLE, groups=tuple(out))
