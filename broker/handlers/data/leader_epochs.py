"""OffsetForLeaderEpoch v2-v4 (KIP-101, KIP-320): where a leader epoch ended, from the
partition's leader epoch cache; and the current-leader-epoch check that Fetch, ListOffsets
and this API apply to the epoch a client believes current (Kafka's
``Partition.checkCurrentLeaderEpoch``).

Consumers validate their position with it after a leader change or a seek to a position
that carries an epoch: the end offset of the epoch they last fetched in tells them
whether the log was truncated below their position.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE
from kafkalite.storage.log import PartitionLog

from ...auth import CLUSTER_NAME, Access, Operation, ResourceType
from ...context import RequestContext
from ...topic_store import Storage

OFFSET_FOR_LEADER_EPOCH = ApiKey.OFFSET_FOR_LEADER_EPOCH

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    OFFSET_FOR_LEADER_EPOCH: (2, 4),
}
#: The "no epoch known" value of current_leader_epoch fields.
NO_EPOCH = -1


def epoch_error(plog: PartitionLog, current_leader_epoch: int) -> ErrorCode:
    """NONE when the client's idea of the leader epoch is current (or absent);
    FENCED_LEADER_EPOCH when it is older, UNKNOWN_LEADER_EPOCH when newer."""
    if current_leader_epoch == NO_EPOCH:
        return NO_ERROR
    if plog.leader_epoch > current_leader_epoch:
        return ErrorCode.fenced_leader_epoch
    if plog.leader_epoch < current_leader_epoch:
        return ErrorCode.unknown_leader_epoch
    return NO_ERROR


def offset_for_leader_epoch(storage: Storage, access: Access, ctx: RequestContext,
                            req: Any) -> Any:
    resp_t = codecs.codec(OFFSET_FOR_LEADER_EPOCH, ctx.api_version).response_type
    topic_t = nested(resp_t, "OffsetForLeaderTopicResult")
    part_t = nested(resp_t, "EpochEndOffset")
    # Brokers ask with ClusterAction; consumers (KIP-320) need Describe on the topic.
    cluster_action = access.permits(ctx, Operation.CLUSTER_ACTION, ResourceType.CLUSTER,
                                    CLUSTER_NAME)
    topics = []
    for t in req.topics:
        allowed = cluster_action or access.permits(ctx, Operation.DESCRIBE,
                                                   ResourceType.TOPIC, t.topic)
        parts = []
        for p in t.partitions:
            plog = storage.logs.get(t.topic, p.partition) if allowed else None
            if plog is None:
                err = ErrorCode.unknown_topic_or_partition if allowed \
                    else ErrorCode.topic_authorization_failed
                parts.append(build(part_t, error_code=err, partition=p.partition,
                                   leader_epoch=-1, end_offset=-1))
                continue
            err = epoch_error(plog, int(p.current_leader_epoch))
            epoch, end = (-1, -1) if err is not NO_ERROR else \
                plog.epochs.end_offset_for(int(p.leader_epoch), plog.log_end_offset)
            parts.append(build(part_t, error_code=err, partition=p.partition,
                               leader_epoch=epoch, end_offset=end))
        topics.append(build(topic_t, topic=t.topic, partitions=tuple(parts)))
    return build(resp_t, throttle_time=NO_THROTTLE, topics=tuple(topics))
