"""Metadata v0-v12: brokers, cluster id, controller, topics and partitions (leader = us)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol import apis as codecs
from protocol.build import build, nested
from protocol.errors import ErrorCode
from storage.catalog import InvalidTopicName, TopicInfo, validate_topic_name

from ..auth import Action, Operation, ResourceType
from ..context import RequestContext

if TYPE_CHECKING:
    from ..server import Broker

METADATA = 3


def partition_entries(broker: Broker, resp_t: type[Any], info: TopicInfo) -> tuple[Any, ...]:
    part_t = nested(resp_t, "MetadataResponsePartition")
    me = broker.node_id
    return tuple(
        build(
            part_t,
            error_code=ErrorCode.none,
            partition_index=p,
            leader_id=me,
            leader_epoch=0,
            replica_nodes=(me,),
            isr_nodes=(me,),
            offline_replicas=(),
        )
        for p in range(info.partitions)
    )


def install(broker: Broker) -> None:
    def handle(ctx: RequestContext, req: Any) -> Any:
        c_resp = codecs.codec(METADATA, ctx.api_version).response_type
        broker_t = nested(c_resp, "MetadataResponseBroker")
        topic_t = nested(c_resp, "MetadataResponseTopic")
        catalog = broker.topics
        brokers = tuple(
            build(broker_t, node_id=broker.node_id, host=b.advertised_host, port=b.advertised_port,
                  rack=None)
            for b in broker.listeners
            if b.name == ctx.listener
        )
        allow_create = bool(getattr(req, "allow_auto_topic_creation", True)) and broker.config.bool(
            "auto.create.topics.enable"
        )
        topics_out: list[Any] = []
        if req.topics is None or (ctx.api_version == 0 and not req.topics):
            named = [(t.name, None) for t in catalog]
        else:
            named = []
            for t in req.topics:
                name = getattr(t, "name", None)
                tid = getattr(t, "topic_id", None)
                if name is None and tid is not None:
                    info = catalog.by_id(tid)
                    if info is None:
                        topics_out.append(build(topic_t, error_code=ErrorCode.unknown_topic_id,
                                                name=None, topic_id=tid, is_internal=False,
                                                partitions=(), topic_authorized_operations=-2147483648))
                        continue
                    name = info.name
                named.append((name or "", tid))
        for name, _tid in named:
            info = catalog.get(name)
            err = ErrorCode.none
            if info is None:
                try:
                    validate_topic_name(name)
                except InvalidTopicName:
                    err = ErrorCode.invalid_topic_exception
                else:
                    if allow_create:
                        info = broker.create_topic(name)
                        err = ErrorCode.leader_not_available
                    else:
                        err = ErrorCode.unknown_topic_or_partition
            if info is None:
                topics_out.append(build(topic_t, error_code=err, name=name, topic_id=None,
                                        is_internal=False, partitions=(),
                                        topic_authorized_operations=-2147483648))
                continue
            topics_out.append(
                build(
                    topic_t,
                    error_code=err,
                    name=info.name,
                    topic_id=info.topic_id,
                    is_internal=info.internal,
                    partitions=partition_entries(broker, c_resp, info) if err == ErrorCode.none else (),
                    topic_authorized_operations=-2147483648,
                )
            )
        import datetime

        return build(
            c_resp,
            throttle_time=datetime.timedelta(0),
            brokers=brokers,
            cluster_id=broker.cluster_id,
            controller_id=broker.node_id,
            topics=tuple(topics_out),
            cluster_authorized_operations=-2147483648,
        )

    def acl(req: Any) -> list[Action]:
        return [
            Action(Operation.DESCRIBE, ResourceType.TOPIC, t.name)
            for t in (req.topics or ())
            if getattr(t, "name", None)
        ]

    broker.apis.register(METADATA, handle, min_version=0, max_version=12, acl=acl)
