"""FindCoordinator v0-v6: this broker coordinates every group and every transactional id;
a group's key creates ``__consumer_offsets`` on first use and a transactional id's
``__transaction_state``, as Kafka does."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import (
    NO_THROTTLE,
    SHARE_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
    CoordinatorType,
)

from ...auth import CLUSTER_NAME, DENIED_ERROR, Access, Operation, ResourceType
from ...cluster import BoundListener, Cluster
from ...context import RequestContext

FIND_COORDINATOR = ApiKey.FIND_COORDINATOR

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    FIND_COORDINATOR: (0, 6),
}



def _share_key_valid(key: str) -> bool:
    """Kafka's ``SharePartitionKey.validate``: ``group:topic id:partition``."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        return False
    try:
        raw = base64.urlsafe_b64decode(parts[1] + "==")
        return len(raw) == 16 and int(parts[2]) >= 0
    except (ValueError, binascii.Error):
        return False


def _answer(runtime: CoordinatorRuntime, key_type: int, key: str
            ) -> tuple[ErrorCode, str | None]:
    if key_type == CoordinatorType.TRANSACTION:
        runtime.ensure_topic(TRANSACTION_STATE_TOPIC)
        return NO_ERROR, None
    if key_type == CoordinatorType.SHARE:
        # The share coordinator (KIP-932): ``group:topic id:partition`` keys.
        if not _share_key_valid(key):
            return ErrorCode.invalid_request, f"invalid share coordinator key {key}"
        runtime.ensure_topic(SHARE_STATE_TOPIC)
        return NO_ERROR, None
    if key_type != CoordinatorType.GROUP:
        return ErrorCode.invalid_request, f"unsupported coordinator key type {key_type}"
    if key:
        runtime.ensure_topic()
    err = runtime.groups.query(lambda g: g.group_status(key))
    if err is ErrorCode.coordinator_load_in_progress:
        return ErrorCode.coordinator_load_in_progress, None
    if err is ErrorCode.invalid_group_id:
        return ErrorCode.invalid_request, "empty group id"
    if err is not NO_ERROR:
        return ErrorCode.coordinator_not_available, None
    return NO_ERROR, None


def find_coordinator(cluster: Cluster, runtime: CoordinatorRuntime, access: Access,
                     ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(FIND_COORDINATOR, ctx.api_version).response_type
    key_type: int = getattr(req, "key_type", CoordinatorType.GROUP)
    rtypes: dict[int, ResourceType] = {CoordinatorType.GROUP: ResourceType.GROUP,
                                       CoordinatorType.TRANSACTION: ResourceType.TRANSACTIONAL_ID}
    rtype = rtypes.get(key_type)

    def answer(key: str) -> tuple[ErrorCode, str | None]:
        if key_type == CoordinatorType.SHARE:
            # Only brokers look share coordinators up: ClusterAction, as KafkaApis asks.
            if ctx.api_version < 6:
                return ErrorCode.invalid_request, "share keys need FindCoordinator v6"
            if not access.permits(ctx, Operation.CLUSTER_ACTION, ResourceType.CLUSTER,
                                  CLUSTER_NAME):
                return ErrorCode.cluster_authorization_failed, None
        # Describe on the group (or transactional id), per key, as KafkaApis.
        if rtype is not None and not access.permits(ctx, Operation.DESCRIBE, rtype, key):
            return DENIED_ERROR[rtype], None
        return _answer(runtime, key_type, key)

    if ctx.api_version >= 4:
        coord_t = nested(resp_t, "Coordinator")
        out = []
        for key in req.coordinator_keys:
            err, msg = answer(key)
            node, listener = _coordinator(cluster, key_type, key, ctx.listener)
            if node < 0 and err is NO_ERROR:
                err = ErrorCode.coordinator_not_available  # its state partition is leaderless
            ok = err is NO_ERROR
            out.append(build(coord_t, key=key, node_id=node if ok else -1,
                             host=listener.advertised_host if ok else "",
                             port=listener.advertised_port if ok else -1,
                             error_code=err, error_message=msg))
        return build(resp_t, throttle_time=NO_THROTTLE, coordinators=tuple(out))
    err, msg = answer(req.key)
    node, listener = _coordinator(cluster, key_type, req.key, ctx.listener)
    if node < 0 and err is NO_ERROR:
        err = ErrorCode.coordinator_not_available
    ok = err is NO_ERROR
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=err, error_message=msg,
                 node_id=node if ok else -1,
                 host=listener.advertised_host if ok else "",
                 port=listener.advertised_port if ok else -1)



def _coordinator(cluster: Cluster, key_type: int, key: str, listener: str
                 ) -> tuple[int, BoundListener]:
    """The coordinator's node id and its endpoint on the client's listener."""
    if cluster.view is None:
        return cluster.node_id, cluster.endpoint(listener)
    node = cluster.coordinator(
        key_type if key_type == CoordinatorType.TRANSACTION else CoordinatorType.GROUP, key)
    member = cluster.member(node) or cluster
    return node, member.endpoint(listener)
