"""UnregisterBroker (64) and UnregisterController (94): an operator drops a node's
registration (``kafka-cluster unregister``, ``Admin.unregisterBroker``).

Kafka forwards both to its active controller; a kafkalite node is its own controller.
UnregisterBroker drops a stopped or fenced node's registration, so Metadata and
DescribeCluster stop listing it until it starts again; a running node keeps its
registration (a live Kafka broker registers again with its next heartbeat). The
controller clients are told of (DescribeCluster's ``controller_id``) is the quorum's voter
and no other node has a controller registration, so UnregisterController refuses the
voter as Kafka does and answers the rest as not registered.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE

from ...cluster import Cluster
from ...context import RequestContext

UNREGISTER_BROKER = ApiKey.UNREGISTER_BROKER
UNREGISTER_CONTROLLER = ApiKey.UNREGISTER_CONTROLLER

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    UNREGISTER_BROKER: (0, 0),
    UNREGISTER_CONTROLLER: (0, 0),
}
#: CONTROLLER_ID_NOT_REGISTERED, newer than kio's error codes (the codec carries an int16).
CONTROLLER_ID_NOT_REGISTERED = 136


def unregister_broker(cluster: Cluster, ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(UNREGISTER_BROKER, ctx.api_version).response_type
    node = int(req.broker_id)
    if not cluster.unregister(node):
        return build(resp_t, throttle_time=NO_THROTTLE,
                     error_code=ErrorCode.broker_id_not_registered,
                     error_message=f"Broker ID {node} is not currently registered")
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=NO_ERROR, error_message=None)


def unregister_controller(cluster: Cluster, ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(UNREGISTER_CONTROLLER, ctx.api_version).response_type
    node = int(req.controller_id)
    if node == cluster.controller_id:
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=int(ErrorCode.invalid_request),
                     error_message=f"Controller {node} is a current voter and cannot be "
                     "unregistered")
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=CONTROLLER_ID_NOT_REGISTERED,
                 error_message=f"Controller ID {node} is not currently registered")
