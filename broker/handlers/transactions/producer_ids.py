"""InitProducerId v0-v5 and DescribeProducers v0.

InitProducerId without a transactional id (an idempotent producer) gets a fresh producer id
at epoch 0 from storage's allocator; with one, the transaction coordinator's core answers
(epoch bumps, fencing, KIP-360 recovery; ``coordinator/txn/transactions.py``). DescribeProducers
lists a partition's active producers from its producer state, as Kafka's
``UnifiedLog.activeProducers``."""

from __future__ import annotations

from typing import Any

import structlog

from kafkalite.coordinator.txn.transactions import InitProducerIdResult, Transactions
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, millis, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE
from kafkalite.storage.catalog import InvalidTopicName, validate_topic_name

from ...auth import CLUSTER_NAME, Access, Operation, ResourceType
from ...context import RequestContext
from ...topic_store import Storage
from .transactions import ask

log = structlog.get_logger("kafkalite.producer_ids")

INIT_PRODUCER_ID = ApiKey.INIT_PRODUCER_ID
DESCRIBE_PRODUCERS = ApiKey.DESCRIBE_PRODUCERS

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    INIT_PRODUCER_ID: (0, 5),
    DESCRIBE_PRODUCERS: (0, 0),
}


def init_producer_id(storage: Storage, txn: Transactions, access: Access,
                     ctx: RequestContext, req: Any) -> Any:
    v = ctx.api_version
    resp_t = codecs.codec(INIT_PRODUCER_ID, v).response_type

    def respond(r: InitProducerIdResult) -> Any:
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=r.error,
                     producer_id=r.producer_id, producer_epoch=r.producer_epoch)

    tid = req.transactional_id
    if tid is not None:
        if not access.permits(ctx, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
            return respond(InitProducerIdResult(ErrorCode.transactional_id_authorization_failed))
        return ask(txn, lambda t, now, w: t.init_producer_id(
            now, w, transactional_id=tid,
            transaction_timeout_ms=millis(req.transaction_timeout),
            producer_id=getattr(req, "producer_id", -1),
            producer_epoch=getattr(req, "producer_epoch", -1), version=v), respond)
    # KIP-679: IdempotentWrite on the cluster, or Write on any topic, suffices.
    if not access.permits(ctx, Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME):
        any_write = getattr(access.authorizer, "authorize_any", None)
        if any_write is None or not any_write(ctx.principal, ctx.client_host, Operation.WRITE,
                                              ResourceType.TOPIC):
            return respond(InitProducerIdResult(ErrorCode.cluster_authorization_failed))
    pid = getattr(req, "producer_id", -1)
    if (pid == -1) != (getattr(req, "producer_epoch", -1) == -1):
        return respond(InitProducerIdResult(ErrorCode.invalid_request))
    # Without a transactional id Kafka always hands out a fresh id at epoch 0, also
    # when the producer names its current id and epoch (KIP-360 bumps are for
    # transactional producers).
    new_pid = storage.logs.producer_ids.allocate()
    log.info("producer_id.allocated", producer_id=new_pid, epoch=0, client_id=ctx.client_id)
    return respond(InitProducerIdResult(NO_ERROR, new_pid, 0))


def describe_producers(storage: Storage, access: Access, ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(DESCRIBE_PRODUCERS, ctx.api_version).response_type
    topic_t = nested(resp_t, "TopicResponse")
    part_t = nested(resp_t, "PartitionResponse")
    state_t = nested(resp_t, "ProducerState")
    topics = []
    for t in req.topics:
        error: ErrorCode | None = None
        message: str | None = None
        try:
            validate_topic_name(t.name)
        except InvalidTopicName as e:
            error, message = ErrorCode.invalid_topic_exception, str(e)
        if error is None:
            if not access.permits(ctx, Operation.READ, ResourceType.TOPIC, t.name):
                error = ErrorCode.topic_authorization_failed
            elif storage.catalog.get(t.name) is None:
                error = ErrorCode.unknown_topic_or_partition
        parts = []
        for p in t.partition_indexes:
            plog = None if error is not None else storage.logs.get(t.name, p)
            if plog is None:
                parts.append(build(part_t, partition_index=p, error_message=message,
                                   error_code=error or ErrorCode.unknown_topic_or_partition,
                                   active_producers=()))
                continue
            producers = plog.txn.producers.producers
            parts.append(build(
                part_t, partition_index=p, error_code=NO_ERROR, error_message=None,
                active_producers=tuple(
                    build(state_t, producer_id=pid, producer_epoch=e.epoch,
                          last_sequence=e.last_seq, last_timestamp=e.last_timestamp,
                          coordinator_epoch=e.coordinator_epoch,
                          current_txn_start_offset=e.txn_first_offset)
                    for pid, e in sorted(producers.items()))))
        topics.append(build(topic_t, name=t.name, partitions=tuple(parts)))
    return build(resp_t, throttle_time=NO_THROTTLE, topics=tuple(topics))
