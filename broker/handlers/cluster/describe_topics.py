"""DescribeTopicPartitions v0 (KIP-966), what the Java Admin's ``describeTopics`` sends
since 3.8: topics in name order, at most ``response_partition_limit`` partitions per
response (capped by ``max.request.partition.size.limit``), and a cursor naming the first
partition left out. As Kafka's ``DescribeTopicPartitionsRequestHandler``: an empty topic
list means every topic the principal may describe; a named topic it may not describe is
answered TOPIC_AUTHORIZATION_FAILED without saying whether it exists.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import INTERNAL_TOPICS, NO_THROTTLE, ZERO_UUID
from kafkalite.protocol.varint import write_uvarint
from kafkalite.storage.catalog import InvalidTopicName, TopicInfo, validate_topic_name

from ...auth import Access, Operation, ResourceType
from ...cluster import Cluster
from ...context import RequestContext
from ...topic_store import Storage
from .metadata import leader_epoch

DESCRIBE_TOPIC_PARTITIONS = ApiKey.DESCRIBE_TOPIC_PARTITIONS

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    DESCRIBE_TOPIC_PARTITIONS: (0, 0),
}


def _error_response(resp_t: type[Any], req: Any, err: ErrorCode) -> Any:
    """Kafka's answer to a request it cannot serve: each named topic with the error."""
    topic_t = nested(resp_t, "DescribeTopicPartitionsResponseTopic")
    return build(resp_t, throttle_time=NO_THROTTLE, next_cursor=None, topics=tuple(
        build(topic_t, error_code=err, name=t.name, topic_id=ZERO_UUID, is_internal=False,
              partitions=()) for t in req.topics))


def describe_topic_partitions(cluster: Cluster, storage: Storage, access: Access,
                              partition_limit: int, ctx: RequestContext, req: Any) -> Any:
    """``partition_limit``: ``max.request.partition.size.limit``. A topic answered whole
    comes from ``storage.metadata_entries`` when kept there, encoded once per
    set of authorized operations; the answer is spliced from encoded entries."""
    resp_t = codecs.codec(DESCRIBE_TOPIC_PARTITIONS, ctx.api_version).response_type
    topic_t = nested(resp_t, "DescribeTopicPartitionsResponseTopic")
    part_t = nested(resp_t, "DescribeTopicPartitionsResponsePartition")
    cursor_t = nested(resp_t, "Cursor")
    catalog = storage.catalog
    cursor = req.cursor
    after = cursor.topic_name if cursor is not None else ""
    fetch_all = not req.topics
    names = {t.name for t in catalog} if fetch_all else {t.name for t in req.topics}
    names = {n for n in names if n >= after}
    if cursor is not None and (cursor.partition_index < 0
                               or (not fetch_all and cursor.topic_name not in names)):
        return _error_response(resp_t, req, ErrorCode.invalid_request)
    remaining = max(min(partition_limit, int(req.response_partition_limit)), 1)
    topics: list[bytes] = []
    denied: list[bytes] = []
    next_cursor = None
    encoded = storage.metadata_entries
    encoded.follow(cluster.liveness())
    for name in sorted(names):
        if not access.permits(ctx, Operation.DESCRIBE, ResourceType.TOPIC, name):
            if not fetch_all:
                denied.append(encoded.encode(build(
                    topic_t, error_code=ErrorCode.topic_authorization_failed, name=name,
                    topic_id=ZERO_UUID, is_internal=False, partitions=())))
            continue
        if remaining == 0:
            # Every partition of the topics before fitted: the next page starts here.
            next_cursor = build(cursor_t, topic_name=name, partition_index=0)
            break
        info = catalog.get(name)
        if info is None:
            if not fetch_all:
                # Kafka's handler fills every described topic's authorized operations,
                # an unknown one's too.
                topics.append(encoded.encode(build(
                    topic_t, error_code=_missing_error(name), name=name, topic_id=ZERO_UUID,
                    is_internal=name in INTERNAL_TOPICS, partitions=(),
                    topic_authorized_operations=access.operations_for(
                        ctx, ResourceType.TOPIC, name))))
            continue
        start = cursor.partition_index if cursor is not None and name == after else 0
        end = min(info.partitions, start + remaining)
        ops = access.operations_for(ctx, ResourceType.TOPIC, name)
        # Kept only whole and per set of operations, which most askers share.
        kept = (encoded.table((DESCRIBE_TOPIC_PARTITIONS, ctx.api_version, ops))
                if start == 0 and end == info.partitions else None)
        entry = kept.get(name) if kept is not None else None
        if entry is None:
            entry = encoded.encode(build(
                topic_t, error_code=NO_ERROR, name=name, topic_id=info.topic_id,
                is_internal=info.internal, partitions=_partitions(part_t, cluster, storage,
                                                                  info, start, end),
                topic_authorized_operations=ops))
            if kept is not None:
                kept[name] = entry
        topics.append(entry)
        if end < info.partitions:
            next_cursor = build(cursor_t, topic_name=name, partition_index=end)
            break
        remaining -= max(end - start, 0)
    empty = codecs.codec(DESCRIBE_TOPIC_PARTITIONS, ctx.api_version).encode_response(build(
        resp_t, throttle_time=NO_THROTTLE, topics=(), next_cursor=next_cursor))
    # The throttle time (4 bytes), then the topic array (empty: one byte), the cursor and
    # the tagged fields.
    return b"".join((empty[:4], write_uvarint(len(topics) + len(denied) + 1), *topics,
                     *denied, empty[5:]))


def _missing_error(name: str) -> ErrorCode:
    try:
        validate_topic_name(name)
    except InvalidTopicName:
        return ErrorCode.invalid_topic_exception
    return ErrorCode.unknown_topic_or_partition


def _partitions(part_t: type[Any], cluster: Cluster, storage: Storage, info: TopicInfo,
                start: int, end: int) -> tuple[Any, ...]:
    out = []
    for p in range(start, end):
        leader, replicas, isr = cluster.replicas(info.name, p)
        out.append(build(part_t, error_code=NO_ERROR, partition_index=p,
                         leader_id=leader, leader_epoch=leader_epoch(storage, info.name, p),
                         replica_nodes=replicas, isr_nodes=isr,
                         eligible_leader_replicas=(), last_known_elr=(),
                         offline_replicas=cluster.offline(replicas)))
    return tuple(out)
