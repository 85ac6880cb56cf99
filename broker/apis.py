"""KafkaApis: the one dispatch table from api key to handler.

The composition root (``compose.py``) fills it from one list of ``Route``s (``routes.py``).
A handler is ``handler(ctx, request)`` (a module-level function with its dependencies
bound by ``functools.partial``) returning one of:
- a kio response entity (encoded here),
- ``bytes``: an already encoded response body (for hand-written hot-path encoders),
- an ``asyncio.Future`` or coroutine resolving to either of the above (parked requests),
- ``NO_RESPONSE`` (Produce with acks=0).

Every request passes one authorization check, built from the registration's ``acl``
function, before its handler runs; then the fault rules (``faults.py``) may answer it
instead of the handler, or delay, drop or close around it. Each request is counted and
timed per API for ``/metrics``.
"""

from __future__ import annotations

import asyncio
import struct
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from time import monotonic
from typing import Any

import structlog

from kafkalite.protocol import apis as codecs
from kafkalite.protocol import releases
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.defaults import error_response
from kafkalite.protocol.error_responses import shaped_error_response
from kafkalite.protocol.errors import ErrorCode, ProtocolError, UnsupportedApi
from kafkalite.protocol.headers import (
    RequestHeader,
    parse_request_header,
    peek_api,
    skip_tagged_fields,
)
from kafkalite.protocol.releases import Release

from .auth import DENIED_ERROR, Access, Action, Authorizer
from .context import Peer, RequestContext
from .control.faults import FaultAction, FaultRule, FaultRules, api_display_name
from .metrics import BUCKETS_S, FIRST_BUCKET_S, ApiStats, BrokerMetrics
from .quotas.managers import QuotaManagers
from .quotas.throttling import Throttling

log = structlog.get_logger("kafkalite.apis")

#: A response's size and header: v0 (correlation id), v1 (and empty tagged fields).
_HEADER_V0 = struct.Struct(">ii")
_HEADER_V1 = struct.Struct(">iiB")
_PREFIX = struct.Struct(">hhih")


class _NoResponse:
    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE: Any = _NoResponse()

_PRODUCE = int(ApiKey.PRODUCE)


class FaultClose(Exception):
    """A fault rule closes the request's connection (raised out of ``handle``)."""

    def __init__(self, rule: FaultRule) -> None:
        super().__init__(f"fault rule {rule.id}: {rule.action.value}")
        self.rule = rule

Handler = Callable[[RequestContext, Any], Any]
AclFn = Callable[[Any], Iterable[Action]]


@dataclass(frozen=True, slots=True)
class Route:
    """One API: its handler, the versions served (default: all kio has) and the actions a
    request needs authorized before its handler runs (None: the handler authorizes)."""

    api_key: int
    handler: Handler
    min_version: int | None = None
    max_version: int | None = None
    acl: AclFn | None = None
    #: Listed in ApiVersions. False: served to a client that asks, but not offered, for an
    #: API whose companions are not served yet (a client that sees it would rely on them).
    advertised: bool = True
    #: The handler, a coroutine, sets ``ctx.throttle_ms`` as it runs (the controller
    #: mutation quota): the quotas are applied once it has finished, on its answer.
    settle_first: bool = False


@dataclass(slots=True)
class Registration:
    api_key: int
    min_version: int
    max_version: int
    handler: Handler
    acl: AclFn | None
    stats: ApiStats
    advertised: bool = True
    settle_first: bool = False


_Entry = tuple[codecs.ApiCodec, Registration]


class KafkaApis:
    def __init__(self, access: Access | None = None, faults: FaultRules | None = None,
                 metrics: BrokerMetrics | None = None, release: Release | None = None,
                 node_id: int | None = None) -> None:
        """``release``: the Kafka release to present as (``kafkalite.as.version``): an
        API it lacks is not served, and the others only at the versions it serves;
        ``node_id``: the node these handlers serve (fault rules may name it)."""
        self.node_id = node_id
        self.release = release or releases.release(releases.DEFAULT_RELEASE)
        self.access = access or Access()
        self.faults = faults if faults is not None else FaultRules()
        self.metrics = metrics if metrics is not None else BrokerMetrics()
        self._handlers: dict[int, Registration] = {}
        self._fast: dict[tuple[int, int], _Entry] = {}
        #: Told the id of every connection that closes (share sessions end with theirs).
        self.disconnect_listeners: list[Callable[[int], None]] = []
        #: Client quotas: requests go through ``throttling`` once any is set.
        self.quota_managers = QuotaManagers()
        self.throttling: Throttling | None = None
        #: Requests counted per node as well (``count_per_node``).
        self.per_node_stats = False

    @property
    def authorizer(self) -> Authorizer:
        return self.access.authorizer

    @authorizer.setter
    def authorizer(self, authorizer: Authorizer) -> None:
        self.access.authorizer = authorizer

    def register(self, route: Route) -> None:
        """Serve ``route``'s API, its versions clipped to those kio has codecs for."""
        kv = codecs.kio_versions(route.api_key)
        if kv is None:
            raise ValueError(f"no codecs for api key {route.api_key}")
        lo = kv[0] if route.min_version is None else max(route.min_version, kv[0])
        hi = kv[1] if route.max_version is None else min(route.max_version, kv[1])
        if route.api_key in self._handlers:
            raise ValueError(f"api key {route.api_key} registered twice")
        clipped = self.release.clip(route.api_key, lo, hi)
        if clipped is None:
            return
        lo, hi = clipped
        stats = (self.metrics.node_api(route.api_key, self.node_id)
                 if self.per_node_stats and self.node_id is not None
                 else self.metrics.api(route.api_key))
        self._handlers[route.api_key] = Registration(route.api_key, lo, hi, route.handler,
                                                     route.acl, stats, route.advertised,
                                                     route.settle_first)
        self._fast.clear()

    def count_per_node(self) -> None:
        """Count this node's requests apart too (a process of several nodes), the APIs
        registered already included."""
        if self.node_id is None:
            return
        self.per_node_stats = True
        for key, reg in self._handlers.items():
            reg.stats = self.metrics.node_api(key, self.node_id)
        self._fast.clear()

    def supported(self) -> list[tuple[int, int, int]]:
        """The APIs ApiVersions lists: (key, min, max)."""
        return sorted((r.api_key, r.min_version, r.max_version) for r in self._handlers.values()
                      if r.advertised)

    def registration(self, api_key: int) -> Registration | None:
        return self._handlers.get(api_key)

    # --- dispatch -----------------------------------------------------------------------

    def _lookup(self, api_key: int, api_version: int) -> _Entry | None:
        reg = self._handlers.get(api_key)
        if reg is None or not reg.min_version <= api_version <= reg.max_version:
            return None
        entry = (codecs.codec(api_key, api_version), reg)
        self._fast[(api_key, api_version)] = entry
        return entry

    def handle(self, conn: Peer, frame: bytes) -> Any:
        """Serve one request frame. Returns response frame bytes, a Future of them, or None.

        Raises ``ProtocolError`` for input that must close the connection, and
        ``FaultClose`` when a fault rule closes it.
        """
        # Request times run from the read that brought the frame: one clock call less.
        t0 = conn.received_at
        # The header is parsed inline: this runs for every frame (heartbeats included).
        if len(frame) < 10:
            peek_api(frame)  # raises the protocol error
        api_key, api_version, correlation_id, cid_len = _PREFIX.unpack_from(frame, 0)
        entry = self._fast.get((api_key, api_version)) or self._lookup(api_key, api_version)
        if entry is None:
            if api_key == codecs.API_VERSIONS_KEY:
                return self._api_versions_fallback(correlation_id)
            raise UnsupportedApi(api_key, api_version)
        c, reg = entry
        if cid_len >= 0 and len(frame) >= 10 + cid_len:
            pos = 10 + cid_len
            raw = frame[10:pos]
            if raw == conn.client_id_raw:
                client_id: str | None = conn.client_id
            else:
                header_full = parse_request_header(frame, c.request_flexible)
                client_id = header_full.client_id
                conn.client_id_raw, conn.client_id = raw, client_id
            if c.request_flexible:
                if pos < len(frame) and frame[pos] == 0:
                    pos += 1
                else:
                    pos = skip_tagged_fields(frame, pos)
            header = RequestHeader(api_key, api_version, correlation_id, client_id, pos)
        else:
            header = parse_request_header(frame, c.request_flexible)
        request = c.decode_request(frame, header.body_offset)
        ctx = RequestContext(
            header,
            conn.principal,
            conn.peer_host,
            conn.peer_port,
            conn.listener_name,
            conn.connection_id,
            0,
            conn,
        )
        if reg.acl is not None:
            authorizer = self.access.authorizer
            for action in reg.acl(request):
                if not authorizer.authorize(ctx.principal, action, ctx.client_host):
                    log.info(
                        "request.denied",
                        api=codecs.API_NAMES.get(api_key),
                        principal=ctx.principal,
                        operation=action.operation.value,
                        resource=action.resource_type.value,
                        name=action.name,
                    )
                    return self._observed(reg.stats, t0, self._frame(c, correlation_id,
                        error_response(c.response_type, DENIED_ERROR[action.resource_type])))
        # The fault check, inline: one dict lookup unless a rule names this API, a few
        # more unless one names this request's client, principal or group.
        fi = self.faults.index.get(api_key)
        if fi is not None and (fi.open or header.client_id in (names := fi.names)
                               or ctx.principal in names
                               or getattr(request, "group_id", None) in names):
            rule = self.faults.match(api_key, api_version, header.client_id, ctx.principal,
                                     request, self.node_id)
            if rule is not None:
                return self._observed(reg.stats, t0,
                                      self._fault(rule, c, reg, ctx, request))
        if self.quota_managers.enabled and self.throttling is not None:
            return self._observed(reg.stats, t0, self.throttling.serve(
                conn, c, reg.handler, ctx, request, len(frame),
                partial(self._finish, c, correlation_id, request=request), reg.settle_first))
        try:
            result = reg.handler(ctx, request)
        except ProtocolError:
            raise
        except Exception:
            log.exception("handler.failed", api=codecs.API_NAMES.get(api_key), version=api_version)
            result = shaped_error_response(c.response_type, request,
                                           ErrorCode.unknown_server_error)
        if type(result) is bytes:
            # The heartbeat path (a hand-encoded body): _finish and ApiStats.observe inlined.
            out = self._frame(c, correlation_id, result)
            elapsed = monotonic() - t0
            stats = reg.stats
            stats.sum_s += elapsed
            stats.buckets[0 if elapsed <= FIRST_BUCKET_S
                          else bisect_left(BUCKETS_S, elapsed)] += 1
            return out
        return self._observed(reg.stats, t0, self._finish(c, correlation_id, result, request))

    def _run(self, c: codecs.ApiCodec, reg: Registration, ctx: RequestContext,
             request: Any) -> Any:
        try:
            result = reg.handler(ctx, request)
        except ProtocolError:
            raise
        except Exception:
            log.exception("handler.failed", api=codecs.API_NAMES.get(c.api_key),
                          version=c.api_version)
            return self._frame(c, ctx.header.correlation_id, shaped_error_response(
                c.response_type, request, ErrorCode.unknown_server_error))
        return self._finish(c, ctx.header.correlation_id, result, request)

    @staticmethod
    def _observed(stats: ApiStats, t0: float, out: Any) -> Any:
        """Count the request and its time to a ready response (at once, or when a
        parked response resolves)."""
        if type(out) is bytes or out is None:
            stats.observe(monotonic() - t0)
        else:
            out.add_done_callback(partial(_observe_later, stats, t0))
        return out

    # --- faults ---------------------------------------------------------------------------

    def _fault(self, rule: FaultRule, c: codecs.ApiCodec, reg: Registration,
               ctx: RequestContext, request: Any) -> Any:
        action = rule.action
        log.info("fault.fired", rule=rule.id, api=api_display_name(c.api_key),
                 version=c.api_version, action=action.value,
                 error=rule.error.name.upper() if rule.error is not None else None,
                 client_id=ctx.client_id, connection=ctx.connection_id)
        if action is FaultAction.ERROR:
            assert rule.error is not None
            if c.api_key == _PRODUCE and request.acks == 0:
                return None  # acks=0 gets no answer, error or not
            return self._frame(c, ctx.header.correlation_id,
                               shaped_error_response(c.response_type, request, rule.error))
        if action is FaultAction.CLOSE_BEFORE:
            raise FaultClose(rule)
        out = self._run(c, reg, ctx, request)
        if action is FaultAction.CLOSE_AFTER:
            raise FaultClose(rule)
        loop = asyncio.get_running_loop()
        if action is FaultAction.DROP:
            # Never resolved: the responses behind it wait too, as on a dead path,
            # until the client gives up and closes the connection.
            return loop.create_future()
        delayed: asyncio.Future[Any] = loop.create_future()
        delay_s = rule.delay_ms / 1000

        def answer(value: Any) -> None:
            if not delayed.done():
                delayed.set_result(value)

        def later(fut: asyncio.Future[Any]) -> None:
            if fut.cancelled():
                delayed.cancel()
            else:
                loop.call_later(delay_s, answer, fut.result())

        if isinstance(out, asyncio.Future):
            out.add_done_callback(later)
        else:
            loop.call_later(delay_s, answer, out)
        return delayed

    def _finish(self, c: codecs.ApiCodec, correlation_id: int, result: Any,
                request: Any = None) -> Any:
        """``request``: to shape the error answer of a handler that fails later."""
        if type(result) is bytes:
            return self._frame(c, correlation_id, result)
        if result is NO_RESPONSE:
            return None
        if asyncio.iscoroutine(result):
            result = asyncio.ensure_future(result)
        if isinstance(result, asyncio.Future):
            out: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

            def done(fut: asyncio.Future[Any]) -> None:
                if out.cancelled():
                    return
                try:
                    value = fut.result()
                    out.set_result(self._finish(c, correlation_id, value, request))
                except asyncio.CancelledError:
                    out.cancel()
                except Exception:
                    log.exception("handler.failed", api=codecs.API_NAMES.get(c.api_key))
                    out.set_result(self._frame(c, correlation_id, shaped_error_response(
                        c.response_type, request, ErrorCode.unknown_server_error)))

            result.add_done_callback(done)
            return out
        return self._frame(c, correlation_id, result)

    @staticmethod
    def _frame(c: codecs.ApiCodec, correlation_id: int, response: Any) -> bytes:
        if type(response) is bytes:
            body = response
        elif isinstance(response, bytearray):
            body = bytes(response)  # the frame stays bytes
        else:
            body = c.encode_response(response)
        if c.response_header_flexible:  # size, correlation id, no tagged fields
            return _HEADER_V1.pack(len(body) + 5, correlation_id, 0) + body
        return _HEADER_V0.pack(len(body) + 4, correlation_id) + body

    def _api_versions_fallback(self, correlation_id: int) -> bytes:
        """Kafka answers an unknown ApiVersions version in v0 format with UNSUPPORTED_VERSION."""
        # Loaded by the first client that asks for a version this broker does not serve.
        from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
        from kio.schema.api_versions.v0.response import (
            ApiVersionsResponse as ApiVersionsResponseV0,
        )

        resp = ApiVersionsResponseV0(
            error_code=ErrorCode.unsupported_version,
            api_keys=tuple(
                ApiVersionV0(api_key=k, min_version=lo, max_version=hi)  # type: ignore[arg-type]
                for k, lo, hi in self.supported()
            ),
        )
        return self._frame(codecs.codec(codecs.API_VERSIONS_KEY, 0), correlation_id, resp)


def _observe_later(stats: ApiStats, t0: float, _fut: asyncio.Future[Any]) -> None:
    stats.observe(monotonic() - t0)
