"""The cluster as a one-broker Kafka describes it (DescribeCluster), and admin APIs that mean
little on one broker, answered as a one-broker Kafka answers them: DescribeLogDirs,
AlterReplicaLogDirs, ElectLeaders, ListPartitionReassignments, AlterPartitionReassignments."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE, OPS_OMITTED

from ...auth import CLUSTER_NAME, Access, Action, Operation, ResourceType
from ...cluster import Cluster
from ...context import RequestContext
from ...topic_store import Storage
from .metadata import broker_entries

ALTER_REPLICA_LOG_DIRS = ApiKey.ALTER_REPLICA_LOG_DIRS
DESCRIBE_LOG_DIRS = ApiKey.DESCRIBE_LOG_DIRS
ELECT_LEADERS = ApiKey.ELECT_LEADERS
ALTER_PARTITION_REASSIGNMENTS = ApiKey.ALTER_PARTITION_REASSIGNMENTS
LIST_PARTITION_REASSIGNMENTS = ApiKey.LIST_PARTITION_REASSIGNMENTS
DESCRIBE_CLUSTER = ApiKey.DESCRIBE_CLUSTER

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    DESCRIBE_CLUSTER: (0, 2),
    DESCRIBE_LOG_DIRS: (1, 5),
    ALTER_REPLICA_LOG_DIRS: (1, 2),
    ELECT_LEADERS: (0, 2),
    LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ALTER_PARTITION_REASSIGNMENTS: (0, 1),
}

_CLUSTER_DESCRIBE = (Action(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME),)
_CLUSTER_ALTER = (Action(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME),)
_CLUSTER_DESCRIBE_CONFIGS = (
    Action(Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME),)


def cluster_describe_acl(_req: Any) -> tuple[Action, ...]:
    return _CLUSTER_DESCRIBE


def cluster_alter_acl(_req: Any) -> tuple[Action, ...]:
    return _CLUSTER_ALTER


def cluster_describe_configs_acl(_req: Any) -> tuple[Action, ...]:
    return _CLUSTER_DESCRIBE_CONFIGS


def partition_size(storage: Storage, topic: str, partition: int) -> int:
    """Bytes of a partition's segments."""
    plog = storage.logs.get(topic, partition)
    return 0 if plog is None else plog.size_bytes


def replica_size(cluster: Cluster, topic: str, partition: int) -> int:
    """A follower's replica's size: its segment files in the node's directory."""
    where = Path(cluster.data_dir) / f"{topic}-{partition}"
    try:
        return sum(f.stat().st_size for f in where.iterdir() if f.suffix == ".log")
    except OSError:
        return 0


def log_dir(cluster: Cluster) -> Path:
    """The one log directory, as DescribeLogDirs names it."""
    return Path(cluster.data_dir).resolve()


def describe_log_dirs(cluster: Cluster, storage: Storage, ctx: RequestContext,
                      req: Any) -> Any:
    resp_t = codecs.codec(DESCRIBE_LOG_DIRS, ctx.api_version).response_type
    result_t = nested(resp_t, "DescribeLogDirsResult")
    topic_t = nested(resp_t, "DescribeLogDirsTopic")
    part_t = nested(resp_t, "DescribeLogDirsPartition")
    if req.topics is None:
        wanted = [(t.name, list(range(t.partitions))) for t in storage.catalog]
    else:
        wanted = []
        for t in req.topics:
            info = storage.catalog.get(t.topic)
            if info is None:
                continue  # Kafka leaves out partitions it does not host
            wanted.append((t.topic, [int(p) for p in t.partitions if 0 <= p < info.partitions]))
    # Each node describes the replicas it hosts, its followers' too.
    me = cluster.node_id
    hosted = [(name, [p for p in parts if me in cluster.replicas(name, p)[1]])
              for name, parts in wanted]
    topics = tuple(
        build(topic_t, name=name, partitions=tuple(
            build(part_t, partition_index=p,
                  partition_size=(partition_size(storage, name, p)
                                  if cluster.leader(name, p) == me
                                  else replica_size(cluster, name, p)),
                  offset_lag=0, is_future_key=False)
            for p in parts
        ))
        for name, parts in hosted if parts
    )
    where = log_dir(cluster)
    try:
        usage = shutil.disk_usage(where)
        total, usable = usage.total, usage.free
    except OSError:
        total = usable = -1
    result = build(result_t, error_code=NO_ERROR, log_dir=str(where), topics=topics,
                   total_bytes=total, usable_bytes=usable, is_cordoned=False)
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=NO_ERROR,
                 results=(result,))


#: A partition's future directory name is ``<topic>-<n>.<32 hex digits>-future``.
_FUTURE_SUFFIX_LENGTH = 1 + 32 + len("-future")


def alter_replica_log_dirs(cluster: Cluster, storage: Storage, access: Access,
                           ctx: RequestContext, req: Any) -> Any:
    """Every replica already lives in the one log directory: moving it there is done at
    once; any other directory is LOG_DIR_NOT_FOUND, as Kafka answers for a directory
    that is not one of its ``log.dirs``."""
    resp_t = codecs.codec(ALTER_REPLICA_LOG_DIRS, ctx.api_version).response_type
    topic_t = nested(resp_t, "AlterReplicaLogDirTopicResult")
    part_t = nested(resp_t, "AlterReplicaLogDirPartitionResult")
    allowed = access.permits(ctx, Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)
    here = log_dir(cluster)
    ours = {str(here), str(Path(cluster.data_dir).absolute())}
    # Kafka reads the request into a map: a partition named twice takes the last directory.
    wanted: dict[tuple[str, int], str] = {}
    for d in req.dirs:
        for t in d.topics:
            for p in t.partitions:
                wanted[(t.name, int(p))] = d.path
    results: dict[str, list[Any]] = {}
    for (topic, partition), path in wanted.items():
        if not allowed:
            err = ErrorCode.cluster_authorization_failed
        elif len(f"{topic}-{partition}") + _FUTURE_SUFFIX_LENGTH > 255:
            err = ErrorCode.invalid_topic_exception
        elif path not in ours:
            err = ErrorCode.log_dir_not_found
        elif storage.logs.get(topic, partition) is None:
            err = ErrorCode.replica_not_available
        else:
            err = NO_ERROR
        results.setdefault(topic, []).append(build(part_t, partition_index=partition,
                                                   error_code=err))
    return build(resp_t, throttle_time=NO_THROTTLE, results=tuple(
        build(topic_t, topic_name=topic, partitions=tuple(parts))
        for topic, parts in results.items()))


def elect_leaders(cluster: Cluster, storage: Storage, ctx: RequestContext, req: Any) -> Any:
    """ElectLeaders (v0: preferred; v1+: preferred or unclean). One node leads every
    partition already; several elect as Kafka's controller does (``cluster/replication``)."""
    resp_t = codecs.codec(ELECT_LEADERS, ctx.api_version).response_type
    topic_t = nested(resp_t, "ReplicaElectionResult")
    part_t = nested(resp_t, "PartitionResult")
    unclean = int(getattr(req, "election_type", 0)) == 1
    elections = cluster.elections
    results = []
    wanted = req.topic_partitions
    if wanted is None and elections is not None:
        # Every partition; Kafka reports only the partitions it elected.
        for every in storage.catalog:
            elected = [build(part_t, partition_id=p, error_code=NO_ERROR, error_message=None)
                       for p in range(every.partitions)
                       if elections.elect_leader(every.name, p, unclean) is NO_ERROR]
            if elected:
                results.append(build(topic_t, topic=every.name,
                                     partition_result=tuple(elected)))
    for tp in wanted or ():
        info = storage.catalog.get(tp.topic)
        parts = []
        for p in tp.partitions:
            if info is None or not 0 <= p < info.partitions:
                parts.append(build(part_t, partition_id=p,
                                   error_code=ErrorCode.unknown_topic_or_partition,
                                   error_message="The partition does not exist."))
                continue
            err = (ErrorCode.election_not_needed if elections is None
                   else elections.elect_leader(tp.topic, p, unclean))
            parts.append(build(part_t, partition_id=p, error_code=err,
                               error_message=_ELECTION_MESSAGES.get(err)))
        results.append(build(topic_t, topic=tp.topic, partition_result=tuple(parts)))
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=NO_ERROR,
                 replica_election_results=tuple(results))


_ELECTION_MESSAGES = {
    ErrorCode.election_not_needed: "Leader election not needed for topic partition.",
    ErrorCode.preferred_leader_not_available:
        "Failed to elect leader for partition: the preferred replica is not live or not "
        "in sync.",
    ErrorCode.eligible_leaders_not_available:
        "Failed to elect leader for partition: no live replica.",
}


def list_reassignments(cluster: Cluster, ctx: RequestContext, req: Any) -> Any:
    """The reassignments in progress (several nodes; none with one), of the named
    partitions or of all."""
    resp_t = codecs.codec(LIST_PARTITION_REASSIGNMENTS, ctx.api_version).response_type
    topic_t = nested(resp_t, "OngoingTopicReassignment")
    part_t = nested(resp_t, "OngoingPartitionReassignment")
    ongoing = cluster.reassignments.ongoing() if cluster.reassignments is not None else []
    wanted = None if req.topics is None else {
        (t.name, int(p)) for t in req.topics for p in t.partition_indexes}
    by_topic: dict[str, list[Any]] = {}
    for o in ongoing:
        if wanted is None or (o.topic, o.partition) in wanted:
            by_topic.setdefault(o.topic, []).append(build(
                part_t, partition_index=o.partition, replicas=o.replicas,
                adding_replicas=o.adding, removing_replicas=o.removing))
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=NO_ERROR,
                 error_message=None, topics=tuple(
                     build(topic_t, name=name, partitions=tuple(parts))
                     for name, parts in by_topic.items()))


def alter_reassignments(cluster: Cluster, storage: Storage, ctx: RequestContext,
                        req: Any) -> Any:
    resp_t = codecs.codec(ALTER_PARTITION_REASSIGNMENTS, ctx.api_version).response_type
    topic_t = nested(resp_t, "ReassignableTopicResponse")
    part_t = nested(resp_t, "ReassignablePartitionResponse")
    nodes = {m.node_id for m in cluster.members()}
    reassigner = cluster.reassignments
    out = []
    for t in req.topics:
        info = storage.catalog.get(t.name)
        parts = []
        for p in t.partitions:
            err, msg = NO_ERROR, None
            ids = None if p.replicas is None else [int(r) for r in p.replicas]
            unknown = [r for r in ids or () if r not in nodes]
            if info is None or not 0 <= p.partition_index < info.partitions:
                err, msg = ErrorCode.unknown_topic_or_partition, \
                    "The partition does not exist."
            elif ids is None:
                err = (ErrorCode.no_reassignment_in_progress if reassigner is None
                       else reassigner.reassign(t.name, p.partition_index, None))
                if err is not NO_ERROR:
                    msg = "No ongoing reassignment for this partition."
            elif not ids:
                err, msg = ErrorCode.invalid_replica_assignment, \
                    "The manual partition assignment includes an empty replica list."
            elif unknown:
                err, msg = ErrorCode.invalid_replica_assignment, \
                    f"The manual partition assignment includes broker {unknown[0]}, " \
                    "but no such broker is registered."
            elif len(set(ids)) != len(ids):
                err, msg = ErrorCode.invalid_replica_assignment, \
                    "The manual partition assignment includes duplicate replicas."
            elif reassigner is not None:
                err = reassigner.reassign(t.name, p.partition_index, ids)
            parts.append(build(part_t, partition_index=p.partition_index, error_code=err,
                               error_message=msg))
        out.append(build(topic_t, name=t.name, partitions=tuple(parts)))
    return build(resp_t, throttle_time=NO_THROTTLE,
                 allow_replication_factor_change=getattr(
                     req, "allow_replication_factor_change", True),
                 error_code=NO_ERROR, error_message=None, responses=tuple(out))

def describe_cluster(cluster: Cluster, access: Access, ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(DESCRIBE_CLUSTER, ctx.api_version).response_type
    broker_t = nested(resp_t, "DescribeClusterBroker")
    endpoint_type = int(getattr(req, "endpoint_type", 1))
    if endpoint_type != 1:
        return build(resp_t, throttle_time=NO_THROTTLE,
                     error_code=ErrorCode.unsupported_endpoint_type,
                     error_message="The request was sent to an endpoint of type BROKER, but "
                     f"we wanted an endpoint of type {endpoint_type}",
                     endpoint_type=endpoint_type, cluster_id=cluster.cluster_id,
                     controller_id=-1, brokers=(), cluster_authorized_operations=OPS_OMITTED)
    brokers = broker_entries(cluster, broker_t, ctx.listener, "broker_id",
                             bool(getattr(req, "include_fenced_brokers", False)))
    # As Kafka, served to anyone: only the authorized operations need Describe.
    ops = OPS_OMITTED
    if req.include_cluster_authorized_operations:
        ops = access.cluster_operations_for(ctx)
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=NO_ERROR,
                 error_message=None, endpoint_type=1, cluster_id=cluster.cluster_id,
                 controller_id=cluster.controller_id,
                 brokers=brokers, cluster_authorized_operations=ops)
