"""GetTelemetrySubscriptions (71) and PushTelemetry (72), KIP-714: served by the built-in
client-metrics receiver (``broker/telemetry``). No authorization, as in Kafka: every
client may ask for its subscription and push."""

from __future__ import annotations

import datetime
from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build
from kafkalite.protocol.names import NO_THROTTLE

from ...context import RequestContext
from ...telemetry.clients import ClientRegistry
from ...telemetry.otlp import ACCEPTED_COMPRESSION

GET_TELEMETRY_SUBSCRIPTIONS = ApiKey.GET_TELEMETRY_SUBSCRIPTIONS
PUSH_TELEMETRY = ApiKey.PUSH_TELEMETRY

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    GET_TELEMETRY_SUBSCRIPTIONS: (0, 0),
    PUSH_TELEMETRY: (0, 0),
}


def get_telemetry_subscriptions(clients: ClientRegistry, max_bytes: Any,
                                ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(GET_TELEMETRY_SUBSCRIPTIONS, ctx.api_version).response_type
    sub = clients.instances.get_subscriptions(
        req.client_instance_id,
        clients.attributes(ctx.connection_id, ctx.header.client_id, ctx.client_host,
                           ctx.client_port),
        ctx.connection_id)
    ok = sub.instance_id is not None
    return build(
        resp_t, throttle_time=NO_THROTTLE, error_code=sub.error,
        client_instance_id=sub.instance_id,
        subscription_id=sub.subscription_id,
        accepted_compression_types=ACCEPTED_COMPRESSION if ok else (),
        push_interval=datetime.timedelta(milliseconds=sub.interval_ms),
        telemetry_max_bytes=max_bytes() if ok else 0,
        delta_temporality=ok,
        requested_metrics=sub.metrics)


def push_telemetry(clients: ClientRegistry, ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(PUSH_TELEMETRY, ctx.api_version).response_type
    error = clients.instances.push(
        req.client_instance_id, int(req.subscription_id), bool(req.terminating),
        int(req.compression_type), req.metrics,
        clients.attributes(ctx.connection_id, ctx.header.client_id, ctx.client_host,
                           ctx.client_port),
        ctx.connection_id)
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=error)
