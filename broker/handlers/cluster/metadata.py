"""Metadata v0-v12: brokers, cluster id, controller, topics and partitions (leader = us).

Semantics by version, as Kafka's: v0 with an empty topic list and v1+ with a null list
mean every topic; v4+ carries ``allow_auto_topic_creation`` (earlier versions always
allow it); v8-v10 may ask for authorized operations; v10+ carry topic ids and v12 may
name a topic by id alone. The broker list holds the endpoint of the listener the client
connected through, so clients on different networks each get an address they can reach.
"""

from __future__ import annotations

import uuid
from typing import Any

import structlog

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE, OPS_OMITTED, ZERO_UUID
from kafkalite.storage.catalog import InvalidTopicName, TopicInfo, validate_topic_name

from ...auth import CLUSTER_NAME, Access, Operation, ResourceType
from ...cluster import Cluster
from ...context import RequestContext
from ...metadata_cache import Partition, encode_topic_entry, splice_topics
from ...topic_store import Storage

log = structlog.get_logger("kafkalite.metadata")

METADATA = ApiKey.METADATA

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    METADATA: (0, 13),
}


def leader_epoch(storage: Storage, topic: str, partition: int) -> int:
    """The partition's current leader epoch, without opening a log not yet opened."""
    return storage.logs.leader_epoch(topic, partition)


def partition_fields(cluster: Cluster, info: TopicInfo, storage: Storage) -> list[Partition]:
    """Each partition's fields of a topic entry, in ``Partition`` order."""
    out: list[Partition] = []
    for p in range(info.partitions):
        leader, replicas, isr = cluster.replicas(info.name, p)
        out.append((NO_ERROR if leader >= 0 else ErrorCode.leader_not_available, p, leader,
                    leader_epoch(storage, info.name, p), replicas, isr,
                    cluster.offline(replicas)))
    return out


def broker_entries(cluster: Cluster, broker_t: type[Any], listener: str,
                   id_field: str = "node_id", fenced: bool | None = None) -> tuple[Any, ...]:
    """The endpoint on the listener the client connected through of every registered
    node that is not fenced, as Kafka's alive brokers; with ``fenced`` (DescribeCluster
    v2's field: True includes fenced ones, False not) each entry carries ``is_fenced``."""
    out: list[Any] = []
    for m in cluster.members():
        if not cluster.registered(m.node_id):
            continue
        is_fenced = cluster.fenced(m.node_id)
        if is_fenced and not fenced:
            continue
        extra = {} if fenced is None else {"is_fenced": is_fenced}
        out.extend(build(broker_t, **{id_field: m.node_id}, host=b.advertised_host,
                         port=b.advertised_port, rack=m.rack, **extra)
                   for b in m.listeners if b.name == listener)
    return tuple(out)


def metadata(cluster: Cluster, storage: Storage, access: Access, ctx: RequestContext,
             req: Any) -> bytes:
    """The answer, encoded: each topic's entry comes from ``storage.metadata_entries``
    when kept there, so an unchanged topic costs no per-partition work."""
    version = ctx.api_version
    c_resp = codecs.codec(METADATA, version).response_type
    broker_t = nested(c_resp, "MetadataResponseBroker")
    topic_t = nested(c_resp, "MetadataResponseTopic")
    catalog = storage.catalog
    brokers = broker_entries(cluster, broker_t, ctx.listener)
    allow_create = bool(getattr(req, "allow_auto_topic_creation", True)) and (
        storage.config.bool("auto.create.topics.enable")
    )

    def allowed(op: Operation, rtype: ResourceType, name: str) -> bool:
        return access.permits(ctx, op, rtype, name)

    want_ops = bool(getattr(req, "include_topic_authorized_operations", False))

    def topic_ops(name: str) -> int:
        if not want_ops:
            return OPS_OMITTED
        return access.operations_for(ctx, ResourceType.TOPIC, name)

    encoded = storage.metadata_entries
    encoded.follow(cluster.liveness())
    kept = encoded.table(version) if not want_ops else None

    def errored(err: ErrorCode, name: str | None, tid: uuid.UUID | None,
                ops: int = OPS_OMITTED) -> bytes:
        return encoded.encode(build(topic_t, error_code=err, name=name,
                                    topic_id=tid or ZERO_UUID, is_internal=False,
                                    partitions=(), topic_authorized_operations=ops))

    topics_out: list[bytes] = []
    named: list[str] = []
    listing_all = req.topics is None or (version == 0 and not req.topics)
    if listing_all:
        named = catalog.names()
    else:
        for t in req.topics:
            name = getattr(t, "name", None)
            tid = getattr(t, "topic_id", None)
            if name is None:
                info = catalog.by_id(tid) if tid not in (None, ZERO_UUID) else None
                if info is None:
                    topics_out.append(errored(ErrorCode.unknown_topic_id, None, tid))
                    continue
                name = info.name
            named.append(name)
    open_access = access.open
    for name in named:
        if kept is not None:
            found = kept.get(name)
            if found is not None and (open_access or allowed(
                    Operation.DESCRIBE, ResourceType.TOPIC, name)):
                topics_out.append(found)
                continue
        if not open_access and not allowed(Operation.DESCRIBE, ResourceType.TOPIC, name):
            # A full listing leaves out what the principal may not see.
            if not listing_all:
                topics_out.append(errored(ErrorCode.topic_authorization_failed, name, None))
            continue
        info = catalog.get(name)
        if info is None:
            try:
                validate_topic_name(name)
                if storage.name_collision(name) is not None:
                    raise InvalidTopicName(name)
            except InvalidTopicName:
                topics_out.append(errored(ErrorCode.invalid_topic_exception, name, None,
                                          topic_ops(name)))
                continue
            if not allow_create:
                # Kafka computes the operations of every topic the principal may describe.
                topics_out.append(errored(ErrorCode.unknown_topic_or_partition, name, None,
                                          topic_ops(name)))
                continue
            if not (allowed(Operation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
                    or allowed(Operation.CREATE, ResourceType.TOPIC, name)):
                topics_out.append(errored(ErrorCode.topic_authorization_failed, name, None))
                continue
            # Creation here is immediate, so the partitions are answered at once rather
            # than LEADER_NOT_AVAILABLE first (see docs/compatibility.md).
            info = storage.auto_create(name)
        entry = encode_topic_entry(version, info.name, info.topic_id, info.internal,
                                   partition_fields(cluster, info, storage),
                                   topic_ops(info.name))
        if kept is not None:
            kept[info.name] = entry
        topics_out.append(entry)
    cluster_ops = OPS_OMITTED
    if getattr(req, "include_cluster_authorized_operations", False):
        cluster_ops = access.cluster_operations_for(ctx)
    empty = codecs.codec(METADATA, version).encode_response(build(
        c_resp,
        throttle_time=NO_THROTTLE,
        brokers=brokers,
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        topics=(),
        cluster_authorized_operations=cluster_ops,
        error_code=NO_ERROR,  # v13: a top-level error (REBOOTSTRAP_REQUIRED) never set
    ))
    return splice_topics(version, empty, topics_out)
