"""Admin APIs that mean little on one broker, answered as a one-broker Kafka answers them:
DescribeLogDirs, ElectLeaders, ListPartitionReassignments, AlterPartitionReassignments."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.names import NO_THROTTLE

from ..auth import CLUSTER_NAME, Action, Operation, ResourceType
from ..context import RequestContext

if TYPE_CHECKING:
    from ..server import Broker

DESCRIBE_LOG_DIRS = 35
ELECT_LEADERS = 43
ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46



def partition_size(broker: Broker, topic: str, partition: int) -> int:
    """Bytes of a partition's segments: from the log manager, else from its directory."""
    get = getattr(broker.logs, "get", None)
    plog = get(topic, partition) if callable(get) else None
    if plog is not None and hasattr(plog, "size_bytes"):
        size = plog.size_bytes
        return int(size() if callable(size) else size)
    d = Path(broker.data_dir) / f"{topic}-{partition}"
    try:
        return sum(f.stat().st_size for f in d.iterdir() if f.suffix == ".log")
    except OSError:
        return 0


def install(broker: Broker) -> None:
    apis = broker.apis
    cluster = [Action(Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)]
    cluster_alter = [Action(Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)]

    def describe_log_dirs(ctx: RequestContext, req: Any) -> Any:
        resp_t = codecs.codec(DESCRIBE_LOG_DIRS, ctx.api_version).response_type
        result_t = nested(resp_t, "DescribeLogDirsResult")
        topic_t = nested(resp_t, "DescribeLogDirsTopic")
        part_t = nested(resp_t, "DescribeLogDirsPartition")
        if req.topics is None:
            wanted = [(t.name, list(range(t.partitions))) for t in broker.topics]
        else:
            wanted = []
            for t in req.topics:
                info = broker.topics.get(t.topic)
                if info is None:
                    continue  # Kafka leaves out partitions it does not host
                wanted.append((t.topic, [int(p) for p in t.partitions if 0 <= p < info.partitions]))
        topics = tuple(
            build(topic_t, name=name, partitions=tuple(
                build(part_t, partition_index=p, partition_size=partition_size(broker, name, p),
                      offset_lag=0, is_future_key=False)
                for p in parts
            ))
            for name, parts in wanted if parts
        )
        log_dir = Path(broker.data_dir).resolve()
        try:
            usage = shutil.disk_usage(log_dir)
            total, usable = usage.total, usage.free
        except OSError:
            total = usable = -1
        result = build(result_t, error_code=ErrorCode.none, log_dir=str(log_dir), topics=topics,
                       total_bytes=total, usable_bytes=usable, is_cordoned=False)
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
                     results=(result,))

    def elect_leaders(ctx: RequestContext, req: Any) -> Any:
        resp_t = codecs.codec(ELECT_LEADERS, ctx.api_version).response_type
        topic_t = nested(resp_t, "ReplicaElectionResult")
        part_t = nested(resp_t, "PartitionResult")
        results = []
        # With no partitions named, Kafka reports only partitions it elected: none here.
        for tp in req.topic_partitions or ():
            info = broker.topics.get(tp.topic)
            parts = []
            for p in tp.partitions:
                if info is None or not 0 <= p < info.partitions:
                    parts.append(build(part_t, partition_id=p,
                                       error_code=ErrorCode.unknown_topic_or_partition,
                                       error_message="The partition does not exist."))
                else:
                    parts.append(build(part_t, partition_id=p,
                                       error_code=ErrorCode.election_not_needed,
                                       error_message="Leader election not needed for topic "
                                       "partition."))
            results.append(build(topic_t, topic=tp.topic, partition_result=tuple(parts)))
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
                     replica_election_results=tuple(results))

    def list_reassignments(ctx: RequestContext, req: Any) -> Any:
        resp_t = codecs.codec(LIST_PARTITION_REASSIGNMENTS, ctx.api_version).response_type
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
                     error_message=None, topics=())

    def alter_reassignments(ctx: RequestContext, req: Any) -> Any:
        resp_t = codecs.codec(ALTER_PARTITION_REASSIGNMENTS, ctx.api_version).response_type
        topic_t = nested(resp_t, "ReassignableTopicResponse")
        part_t = nested(resp_t, "ReassignablePartitionResponse")
        me = broker.node_id
        out = []
        for t in req.topics:
            info = broker.topics.get(t.name)
            parts = []
            for p in t.partitions:
                err, msg = ErrorCode.none, None
                if info is None or not 0 <= p.partition_index < info.partitions:
                    err, msg = ErrorCode.unknown_topic_or_partition, \
                        "The partition does not exist."
                elif p.replicas is None:
                    err, msg = ErrorCode.no_reassignment_in_progress, \
                        "No ongoing reassignment for this partition."
                elif not p.replicas:
                    err, msg = ErrorCode.invalid_replica_assignment, \
                        "The manual partition assignment includes an empty replica list."
                else:
                    others = [int(r) for r in p.replicas if int(r) != me]
                    if others:
                        err, msg = ErrorCode.invalid_replica_assignment, \
                            f"The manual partition assignment includes broker {others[0]}, " \
                            "but no such broker is registered."
                    elif len(p.replicas) != 1:
                        err, msg = ErrorCode.invalid_replica_assignment, \
                            "The manual partition assignment includes duplicate replicas."
                parts.append(build(part_t, partition_index=p.partition_index, error_code=err,
                                   error_message=msg))
            out.append(build(topic_t, name=t.name, partitions=tuple(parts)))
        return build(resp_t, throttle_time=NO_THROTTLE, allow_replication_factor_change=True,
                     error_code=ErrorCode.none, error_message=None, responses=tuple(out))

    apis.register(DESCRIBE_LOG_DIRS, describe_log_dirs, min_version=1, max_version=4,
                  acl=lambda _r: cluster)
    apis.register(ELECT_LEADERS, elect_leaders, min_version=0, max_version=2,
                  acl=lambda _r: cluster_alter)
    apis.register(LIST_PARTITION_REASSIGNMENTS, list_reassignments, min_version=0,
                  max_version=0, acl=lambda _r: cluster)
    apis.register(ALTER_PARTITION_REASSIGNMENTS, alter_reassignments, min_version=0,
                  max_version=0, acl=lambda _r: cluster_alter)
