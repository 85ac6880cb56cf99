"""InitProducerId for idempotent producers. Transactions are not supported: a request
with a transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED, the error Kafka gives
a producer that may not use transactions, which clients treat as fatal (no retry loop)."""

from __future__ import annotations

from typing import Any

import structlog

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.names import NO_THROTTLE
from kafkalite.storage.manager import LogManager

from ..auth import CLUSTER_NAME, Access, Operation, ResourceType
from ..context import RequestContext

log = structlog.get_logger("kafkalite.producer_ids")

INIT_PRODUCER_ID = 22


def init_producer_id(logs: LogManager, access: Access, ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(INIT_PRODUCER_ID, ctx.api_version).response_type
    if req.transactional_id is not None:
        return build(resp_t, throttle_time=NO_THROTTLE,
                     error_code=ErrorCode.transactional_id_authorization_failed,
                     producer_id=-1, producer_epoch=-1)
    # KIP-679: IdempotentWrite on the cluster, or Write on any topic, suffices.
    if not access.permits(ctx, Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME):
        any_write = getattr(access.authorizer, "authorize_any", None)
        if any_write is None or not any_write(ctx.principal, ctx.client_host, Operation.WRITE,
                                              ResourceType.TOPIC):
            return build(resp_t, throttle_time=NO_THROTTLE,
                         error_code=ErrorCode.cluster_authorization_failed,
                         producer_id=-1, producer_epoch=-1)
    # Without a transactional id Kafka always hands out a fresh id at epoch 0, also
    # when the producer names its current id and epoch (KIP-360 bumps are for
    # transactional producers).
    new_pid, new_epoch = logs.producer_ids.allocate(), 0
    log.info("producer_id.allocated", producer_id=new_pid, epoch=new_epoch,
             client_id=ctx.client_id)
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
                 producer_id=new_pid, producer_epoch=new_epoch)
