"""StreamsGroupHeartbeat and StreamsGroupDescribe v0-1 (KIP-1071 streams groups) and
StreamsGroupTopologyDescriptionUpdate v0, authorized as KafkaApis does: Read on the group
and Describe on the topology's source topics for a heartbeat, Describe on each group for
StreamsGroupDescribe, Read on the group for a topology description push.

Version 1 (KIP-1331) is about topology descriptions kept by a broker plugin
(``group.streams.topology.description.plugin.class``). kafkalite has none, as a Kafka
without that setting: a heartbeat never asks for a push, a push answers
UNSUPPORTED_VERSION and a v1 describe reports each group's description as not stored.

A heartbeat whose group misses internal topics (repartition and changelog topics) answers
MISSING_INTERNAL_TOPICS and the coordinator creates them, as Kafka 4.4's does, when the
client may create them (Create on the cluster or on the topic); their partition counts
come from the topology (``coordinator.streams.topology``)."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

import structlog

from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE, OPS_OMITTED

from ...auth import CLUSTER_NAME, Access, Operation, ResourceType
from ...context import RequestContext
from ...topic_store import Storage
from .groups import GroupAcl, describable_groups

if TYPE_CHECKING:
    from kafkalite.coordinator.streams.group import StreamsHeartbeatResult
    from kafkalite.coordinator.streams.topology import Tasks, Topology

STREAMS_GROUP_HEARTBEAT = ApiKey.STREAMS_GROUP_HEARTBEAT
STREAMS_GROUP_DESCRIBE = ApiKey.STREAMS_GROUP_DESCRIBE

STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE = ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE

#: The versions served: (lowest, highest), Kafka 4.4's.
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    STREAMS_GROUP_HEARTBEAT: (0, 1),
    STREAMS_GROUP_DESCRIBE: (0, 1),
    STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE: (0, 0),
}
#: StreamsGroupDescribe v1's TopologyDescriptionStatus without a description plugin.
TOPOLOGY_DESCRIPTION_NOT_STORED = 1
#: The assignor a streams group's tasks come from (Kafka's StickyTaskAssignor).
ASSIGNOR_NAME = "sticky"

_MS = datetime.timedelta(milliseconds=1)

log = structlog.get_logger("kafkalite.coordinator")


def _task_ids(t: type[Any], tasks: Tasks) -> tuple[Any, ...]:
    from kafkalite.coordinator.streams.assignor import by_subtopology

    return tuple(t(subtopology_id=s, partitions=ps) for s, ps in by_subtopology(tasks).items())


def _heartbeat_response(version: int, res: StreamsHeartbeatResult) -> Any:
    resp_t = codecs.codec(STREAMS_GROUP_HEARTBEAT, version).response_type
    task_t = nested(resp_t, "TaskIds")
    status_t = nested(resp_t, "Status")
    ep_t = nested(resp_t, "EndpointToPartitions")
    endpoint_t = nested(resp_t, "Endpoint")
    tp_t = nested(resp_t, "TopicPartition")
    active = standby = warmup = None
    if res.active_tasks is not None:
        active = _task_ids(task_t, res.active_tasks)
        standby = _task_ids(task_t, res.standby_tasks or frozenset())
        warmup = _task_ids(task_t, res.warmup_tasks or frozenset())
    iq = None if res.endpoints is None else tuple(build(
        ep_t, user_endpoint=build(endpoint_t, host=e.endpoint[0], port=e.endpoint[1]),
        active_partitions=tuple(build(tp_t, topic=t, partitions=ps) for t, ps in e.active),
        standby_partitions=tuple(build(tp_t, topic=t, partitions=ps) for t, ps in e.standby))
        for e in res.endpoints)
    status = () if res.status is None else tuple(
        status_t(status_code=s.code, status_detail=s.detail) for s in res.status)
    ok = res.error is NO_ERROR and res.member_epoch >= 0  # not an error, nor a leave
    # The group's acceptable recovery lag and task offset interval (its configs, else the
    # broker's). v0's lag is its legacy int32 field, which Kafka 4.4 leaves 0 (it sets v1's
    # int64 one); an error or leave answer has Kafka's defaults (v1's is -1).
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=res.error,
                 error_message=res.error_message, member_id=res.member_id,
                 member_epoch=res.member_epoch,
                 heartbeat_interval=res.heartbeat_interval_ms * _MS,
                 acceptable_recovery_lag=(0 if version < 1 else
                                          res.acceptable_recovery_lag if ok else -1),
                 task_offset_interval=(res.task_offset_interval_ms if ok else 0) * _MS,
                 status=status, active_tasks=active, standby_tasks=standby,
                 warmup_tasks=warmup,
                 endpoint_information_epoch=res.endpoint_information_epoch,
                 partitions_by_user_endpoint=iq,
                 **({"topology_description_required": False} if version >= 1 else {}))


def _topology(req: Any) -> Topology | None:
    from kafkalite.coordinator.streams.topology import (
        CopartitionGroup,
        Subtopology,
        TopicInfo,
        Topology,
    )

    t = req.topology
    if t is None:
        return None

    def info(i: Any) -> TopicInfo:
        return TopicInfo(i.name, i.partitions, i.replication_factor,
                         tuple((kv.key, kv.value) for kv in i.topic_configs))

    return Topology(t.epoch, tuple(Subtopology(
        s.subtopology_id, tuple(s.source_topics), tuple(s.source_topic_regex),
        tuple(s.repartition_sink_topics), tuple(info(i) for i in s.repartition_source_topics),
        tuple(info(i) for i in s.state_changelog_topics),
        tuple(CopartitionGroup(tuple(c.source_topics), tuple(c.repartition_source_topics))
              for c in s.copartition_groups)) for s in t.subtopologies))


def _offsets(items: Any) -> dict[tuple[str, int], int] | None:
    if items is None:
        return None
    return {(o.subtopology_id, int(o.partition)): int(o.offset) for o in items}


def _tasks(ids: Any) -> Tasks | None:
    if ids is None:
        return None
    return frozenset((t.subtopology_id, int(p)) for t in ids for p in t.partitions)


def streams_group_heartbeat(runtime: CoordinatorRuntime, storage: Storage, access: Access,
                            group_acl: GroupAcl, ctx: RequestContext, req: Any) -> Any:
    from kafkalite.coordinator.streams.group import StreamsHeartbeat, StreamsHeartbeatResult

    version = ctx.api_version
    if not access.authorizer.authorize(ctx.principal, group_acl(req)[0], ctx.client_host):
        return _heartbeat_response(version, StreamsHeartbeatResult(
            ErrorCode.group_authorization_failed))
    topology = _topology(req)
    if topology is not None and not access.open:
        sources = {t for s in topology.subtopologies for t in s.source_topics}
        if not all(access.permits(ctx, Operation.DESCRIBE, ResourceType.TOPIC, t)
                   for t in sources):
            return _heartbeat_response(version, StreamsHeartbeatResult(
                ErrorCode.topic_authorization_failed))
    ep = req.user_endpoint
    request = StreamsHeartbeat(
        group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
        endpoint_information_epoch=req.endpoint_information_epoch,
        instance_id=req.instance_id, rack_id=req.rack_id,
        rebalance_timeout_ms=int(req.rebalance_timeout / _MS), topology=topology,
        active_tasks=_tasks(req.active_tasks), standby_tasks=_tasks(req.standby_tasks),
        warmup_tasks=_tasks(req.warmup_tasks), process_id=req.process_id,
        user_endpoint=None if ep is None else (ep.host, int(ep.port)),
        client_tags=None if req.client_tags is None else tuple(
            (kv.key, kv.value) for kv in req.client_tags),
        task_offsets=_offsets(req.task_offsets), task_end_offsets=_offsets(req.task_end_offsets),
        shutdown_application=bool(req.shutdown_application),
        client_id=ctx.client_id, client_host="/" + ctx.client_host)
    res: StreamsHeartbeatResult = runtime.groups.write(
        lambda g, now: g.streams_group_heartbeat(now, request))
    if res.to_create:
        _create_internal_topics(storage, access, ctx, res.to_create)
    return _heartbeat_response(version, res)


def _create_internal_topics(storage: Storage, access: Access, ctx: RequestContext,
                            topics: tuple[Any, ...]) -> None:
    """Kafka's ``AutoTopicCreationManager.createStreamsInternalTopics``: each missing
    internal topic with the topology's partitions and configs; a topic the client may not
    create stays missing (the status says so on the next heartbeat)."""
    cluster_create = access.open or access.permits(
        ctx, Operation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
    for t in topics:
        if storage.catalog.get(t.name) is not None:
            continue
        if not cluster_create and not access.permits(ctx, Operation.CREATE,
                                                      ResourceType.TOPIC, t.name):
            log.warning("streams_group.internal_topic_unauthorized", topic=t.name)
            continue
        try:
            storage.create_topic(t.name, t.partitions, dict(t.configs) or None)
        except Exception as e:  # a bad config: the topic stays missing, as Kafka logs it
            log.warning("streams_group.internal_topic_failed", topic=t.name, error=str(e))


def streams_group_describe(runtime: CoordinatorRuntime, access: Access, ctx: RequestContext,
                           req: Any) -> Any:
    resp_t = codecs.codec(STREAMS_GROUP_DESCRIBE, ctx.api_version).response_type
    group_t = nested(resp_t, "DescribedGroup")
    member_t = nested(resp_t, "Member")
    assignment_t = nested(resp_t, "Assignment")
    task_t = nested(resp_t, "TaskIds")
    topo_t = nested(resp_t, "Topology")
    sub_t = nested(resp_t, "Subtopology")
    info_t = nested(resp_t, "TopicInfo")
    kv_t = nested(resp_t, "KeyValue")
    ep_t = nested(resp_t, "Endpoint")
    from kafkalite.coordinator.streams.topology import TaskTuple

    def failed(gid: str, err: ErrorCode, message: str | None = None) -> Any:
        return build(group_t, error_code=err, error_message=message, group_id=gid,
                     group_state="", group_epoch=0, assignment_epoch=0, topology=None,
                     members=(), authorized_operations=OPS_OMITTED)

    offset_t = nested(resp_t, "TaskOffset")

    def offsets(by_task: dict[tuple[str, int], int] | None) -> tuple[Any, ...]:
        return tuple(build(offset_t, subtopology_id=st, partition=p, offset=o)
                     for (st, p), o in sorted((by_task or {}).items()))

    def assignment(tasks: TaskTuple) -> Any:
        return build(assignment_t, active_tasks=_task_ids(task_t, tasks.active),
                     standby_tasks=_task_ids(task_t, tasks.standby),
                     warmup_tasks=_task_ids(task_t, tasks.warmup))

    topics = runtime.groups.query(lambda g: g.topics)

    def partitions(name: str, asked: int) -> int:
        """An internal topic's partitions as configured: the topic's own once it exists."""
        found = topics.by_name.get(name)
        return asked if found is None else found.num_partitions

    def infos(ts: Any) -> tuple[Any, ...]:
        return tuple(build(info_t, name=i.name, partitions=partitions(i.name, i.partitions),
                           replication_factor=i.replication_factor,
                           topic_configs=tuple(build(kv_t, key=k, value=v)
                                               for k, v in i.configs)) for i in ts)

    authorized, out = describable_groups(access, ctx, req.group_ids, failed)
    want_ops = bool(req.include_authorized_operations)
    v1_fields: dict[str, Any] = {}
    if ctx.api_version >= 1:
        # Not asked for: NOT_REQUESTED (0), the field's default.
        v1_fields = dict(topology_description=None, assignor_name=ASSIGNOR_NAME,
                         topology_description_status=TOPOLOGY_DESCRIPTION_NOT_STORED
                         if req.include_topology_description else 0)
    for d in runtime.groups.query(lambda g: g.describe_streams_groups(authorized)):
        group = d.group
        if group is None:
            out.append(failed(d.group_id, d.error, d.message))
            continue
        topology = None
        if group.topology is not None:
            topology = build(topo_t, epoch=group.topology.epoch, subtopologies=tuple(
                build(sub_t, subtopology_id=s.subtopology_id, source_topics=s.source_topics,
                      repartition_sink_topics=s.repartition_sink_topics,
                      state_changelog_topics=infos(s.state_changelog_topics),
                      repartition_source_topics=infos(s.repartition_source_topics))
                for s in group.topology.subtopologies))
        ops = (access.operations_for(ctx, ResourceType.GROUP, d.group_id) if want_ops
               else OPS_OMITTED)
        members = tuple(build(
            member_t, member_id=m.member_id, member_epoch=m.member_epoch,
            instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
            client_host=m.client_host, topology_epoch=m.topology_epoch,
            process_id=m.process_id,
            user_endpoint=None if m.user_endpoint is None else build(
                ep_t, host=m.user_endpoint[0], port=m.user_endpoint[1]),
            client_tags=tuple(build(kv_t, key=k, value=v) for k, v in m.client_tags),
            task_offsets=offsets(group.task_offsets.get(m.member_id)),
            task_end_offsets=offsets(group.task_end_offsets.get(m.member_id)),
            assignment=assignment(m.assigned),
            target_assignment=assignment(group.target.get(m.member_id, TaskTuple())),
            is_classic=False) for m in group.members.values())
        out.append(build(group_t, error_code=NO_ERROR, error_message=None,
                         group_id=d.group_id, group_state=group.state,
                         group_epoch=group.group_epoch, assignment_epoch=group.target_epoch,
                         topology=topology, members=members, authorized_operations=ops,
                         **v1_fields))
    return build(resp_t, throttle_time=NO_THROTTLE, groups=tuple(out))


def streams_group_topology_description_update(access: Access, ctx: RequestContext,
                                              req: Any) -> Any:
    """KIP-1331's push of a topology description: Kafka without a description plugin
    refuses it, after the group's Read check."""
    resp_t = codecs.codec(STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE,
                          ctx.api_version).response_type
    if not access.permits(ctx, Operation.READ, ResourceType.GROUP, req.group_id):
        return build(resp_t, throttle_time=NO_THROTTLE,
                     error_code=ErrorCode.group_authorization_failed, error_message=None)
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=ErrorCode.unsupported_version,
                 error_message="No topology description plugin is configured.")
