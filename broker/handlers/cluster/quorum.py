"""DescribeQuorum v0-v2 (KIP-595, KIP-836, KIP-853): the KRaft quorum of a one-node
cluster. This node is the only voter and the leader of ``__cluster_metadata``-0, with no
observers, as a combined broker and controller that was formatted with a static quorum
(``kraft.version`` 0, so no voter directory ids).

kafkalite keeps its metadata in files rather than a Raft log, so the quorum's epoch and
offsets are those of a quorum that elected its first leader and has the one record that
election writes (docs/compatibility.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import ZERO_UUID

from ...cluster import Cluster
from ...context import RequestContext

DESCRIBE_QUORUM = ApiKey.DESCRIBE_QUORUM

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    DESCRIBE_QUORUM: (0, 2),
}
METADATA_TOPIC = "__cluster_metadata"
#: The epoch of the quorum's first election, and the offset after its leader-change record.
QUORUM_EPOCH = 1
HIGH_WATERMARK = 1
_UNKNOWN_PARTITION_MESSAGE = "This server does not host this topic-partition."


def describe_quorum(cluster: Cluster, now_ms: Callable[[], int], ctx: RequestContext,
                    req: Any) -> Any:
    resp_t = codecs.codec(DESCRIBE_QUORUM, ctx.api_version).response_type
    topic_t = nested(resp_t, "TopicData")
    part_t = nested(resp_t, "PartitionData")
    replica_t = nested(resp_t, "ReplicaState")
    # Kafka answers only a request for exactly the metadata partition.
    asked = [(t.topic_name, p.partition_index) for t in req.topics for p in t.partitions]
    if len(req.topics) != 1 or asked != [(METADATA_TOPIC, 0)]:
        return build(resp_t, error_code=NO_ERROR, error_message=None, nodes=(),
                     topics=tuple(build(topic_t, topic_name=t.topic_name, partitions=tuple(
                         build(part_t, partition_index=p.partition_index,
                               error_code=ErrorCode.unknown_topic_or_partition,
                               error_message=_UNKNOWN_PARTITION_MESSAGE, leader_id=-1,
                               leader_epoch=-1, high_watermark=-1, current_voters=(),
                               observers=())
                         for p in t.partitions)) for t in req.topics))
    now = now_ms()
    me = cluster.node_id
    voter = build(replica_t, replica_id=me, replica_directory_id=ZERO_UUID,
                  log_end_offset=HIGH_WATERMARK, last_fetch_timestamp=now,
                  last_caught_up_timestamp=now)
    partition = build(part_t, partition_index=0, error_code=NO_ERROR,
                      error_message=None, leader_id=me, leader_epoch=QUORUM_EPOCH,
                      high_watermark=HIGH_WATERMARK, current_voters=(voter,), observers=())
    nodes: tuple[Any, ...] = ()
    if ctx.api_version >= 2:
        node_t = nested(resp_t, "Node")
        listener_t = nested(resp_t, "Listener")
        nodes = (build(node_t, node_id=me, listeners=tuple(
            build(listener_t, name=b.name, host=b.advertised_host, port=b.advertised_port)
            for b in cluster.listeners)),)
    return build(resp_t, error_code=NO_ERROR, error_message=None, nodes=nodes,
                 topics=(build(topic_t, topic_name=METADATA_TOPIC, partitions=(partition,)),))
