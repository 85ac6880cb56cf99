"""Requests served under client quotas (KafkaApis with its quota managers, KIP-219).

Once any client quota is set, ``KafkaApis`` hands each request here: the request quota
records the handler's time, Produce records its request size and Fetch its response size
(capped beforehand to what one quota window allows), and a controller mutation quota
(``ctx.throttle_ms``, set by the topic handlers) joins them. The largest throttle time goes
into the response's ``throttle_time_ms``, the response is sent at once, and the connection
reads no further request until that time has passed on the broker's clock (Kafka mutes
the channel). A throttled Fetch answers with no records, as Kafka's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import struct
from collections.abc import Callable, Hashable
from time import perf_counter_ns
from typing import Any, Protocol

import structlog

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.defaults import error_response
from kafkalite.protocol.errors import ErrorCode, ProtocolError
from kafkalite.timekeeping.scheduler import Scheduler

from ..context import RequestContext
from ..handlers.data.fetch import encode_response as encode_fetch
from ..handlers.data.fetch_session import replica_id
from .accept_rate import AcceptRates, Waiting
from .managers import ClientQuotaManager, QuotaManagers, user_of

log = structlog.get_logger("kafkalite.throttling")

_PRODUCE = int(ApiKey.PRODUCE)
_FETCH = int(ApiKey.FETCH)
_OFFSET_DELETE = int(ApiKey.OFFSET_DELETE)
#: Inter-broker requests Kafka exempts from the request quota (sendResponseExemptThrottle).
_EXEMPT = frozenset({int(ApiKey.WRITE_TXN_MARKERS)})
#: Request thread time as a percentage of one second (ClientRequestQuotaManager).
_NANOS_TO_PERCENT = 100.0 / 1e9
_I32 = struct.Struct(">i")
_SESSION = struct.Struct(">hi")
_MUTE, _HOLD = "client-throttle", "connection-throttle"


class Mutable(Protocol):
    """What throttling needs of a connection."""

    connection_id: int
    closed: bool

    def mute(self) -> None: ...

    def unmute(self) -> None: ...

    def abort_throttled(self) -> None: ...


class Throttling:
    def __init__(self, managers: QuotaManagers, scheduler: Scheduler,
                 accepts: AcceptRates | None = None) -> None:
        self.managers = managers
        self.scheduler = scheduler
        #: ``max.connection.creation.rate``, broker-wide and per listener.
        self.accepts = accepts
        self._muted: dict[int, Mutable] = {}
        self._held: dict[int, Mutable] = {}
        scheduler.handle(_MUTE, self._unmute)
        scheduler.handle(_HOLD, self._close_held)

    def now(self) -> int:
        return self.scheduler.now()

    # --- connections ------------------------------------------------------------------

    def mute(self, conn: Mutable, ms: int) -> None:
        """Read nothing more from ``conn`` for ``ms`` (its response is already out)."""
        self._muted[conn.connection_id] = conn
        conn.mute()
        self.scheduler.timers.schedule((_MUTE, conn.connection_id), self.now() + ms)
        self.scheduler.rearm()

    def _unmute(self, key: tuple[Hashable, ...], _deadline: int, _now: int) -> None:
        conn = self._muted.pop(int(key[1]), None)  # type: ignore[call-overload]
        if conn is not None and not conn.closed:
            conn.unmute()

    def arrive(self, conn: Waiting, node: int, listener: str) -> bool:
        """A connection its listener accepted: True to take it now, False when the
        listener's acceptor waits under ``max.connection.creation.rate`` first
        (``conn.accept_now()`` follows)."""
        return self.accepts is None or self.accepts.arrive(conn, node, listener)

    def admit(self, conn: Mutable, host: str, node: int = 0, listener: str = "") -> bool:
        """A new connection under ``connection_creation_rate``: False when its IP is over
        the rate; the connection is then held, unread, and closed when the throttle
        time has passed (Kafka's acceptor closes it then)."""
        rates = self.managers.connections
        if not rates.enabled:
            return True
        ms = rates.admit(host, self.now())
        if ms <= 0:
            return True
        if self.accepts is not None:
            self.accepts.unrecord(node, listener)
        log.info("connection.throttled", host=host, throttle_ms=ms)
        self._held[conn.connection_id] = conn
        self.scheduler.timers.schedule((_HOLD, conn.connection_id), self.now() + ms)
        self.scheduler.rearm()
        return False

    def _close_held(self, key: tuple[Hashable, ...], _deadline: int, _now: int) -> None:
        conn = self._held.pop(int(key[1]), None)  # type: ignore[call-overload]
        if conn is not None:
            conn.abort_throttled()

    # --- requests ---------------------------------------------------------------------

    def serve(self, conn: Any, c: codecs.ApiCodec, handler: Callable[[RequestContext, Any],
              Any], ctx: RequestContext, request: Any, size: int,
              finish: Callable[[Any], Any], settle_first: bool = False) -> Any:
        """Run ``handler`` under the quotas; ``finish`` makes the response frame.
        ``settle_first``: the route's (``Route.settle_first``)."""
        m = self.managers
        api = c.api_key
        user, client_id = user_of(ctx.principal), ctx.client_id
        follower = api == _FETCH and replica_id(request) >= 0
        if api == _FETCH and not follower and m.fetch.enabled:
            cap = m.fetch.max_window_value(user, client_id)
            if cap < request.max_bytes:
                request = dataclasses.replace(request, max_bytes=max(int(cap), 0))
        started = perf_counter_ns()
        try:
            result = handler(ctx, request)
        except ProtocolError:
            raise
        except Exception:
            log.exception("handler.failed", api=codecs.API_NAMES.get(api))
            result = error_response(c.response_type, ErrorCode.unknown_server_error)
        spent = perf_counter_ns() - started
        if follower or api in _EXEMPT:
            return finish(result)
        if settle_first and asyncio.iscoroutine(result):
            # The handler sets ctx.throttle_ms as it runs: the quotas are applied once it
            # has finished, on its answer.
            done = asyncio.ensure_future(result)

            async def settled() -> Any:
                return self._settle(conn, c, ctx, user, client_id, api, request, size,
                                    spent, await done, _as_is)

            return finish(asyncio.ensure_future(settled()))
        return self._settle(conn, c, ctx, user, client_id, api, request, size, spent,
                            result, finish)

    def _settle(self, conn: Any, c: codecs.ApiCodec, ctx: RequestContext, user: str,
                client_id: str, api: int, request: Any, size: int, spent: int, result: Any,
                finish: Callable[[Any], Any]) -> Any:
        m = self.managers
        now = self.now()
        # The controller mutation quota's (set by the topic handlers), else Produce's.
        other: ClientQuotaManager = m.mutation
        other_ms = ctx.throttle_ms
        if api == _PRODUCE:
            other, other_ms = m.produce, m.produce.record(user, client_id, size, now)
            if request.acks == 0:
                throttle = max(ctx.throttle_ms, other_ms)
                if other_ms > 0:
                    m.produce.throttled(user, client_id, other_ms, now)
                if throttle > 0:
                    self.mute(conn, throttle)
                return finish(result)
        request_ms = m.request.record(user, client_id, spent * _NANOS_TO_PERCENT, now)
        throttle = max(ctx.throttle_ms, other_ms, request_ms)
        if api == _FETCH and (throttle > 0 or m.fetch.enabled):
            return self._fetch(conn, c, user, client_id, result, request_ms, finish)
        if throttle > 0:
            self._count(user, client_id, now, request_ms, other, other_ms)
            self.mute(conn, throttle)
            result = _with_throttle(c, result, throttle)
        return finish(result)

    def _count(self, user: str, client_id: str, now: int, request_ms: int,
               other: ClientQuotaManager, other_ms: int) -> None:
        """The throttle time goes to the metrics of the quota that gave the longer one,
        the request quota's on a tie (KafkaApis)."""
        if other_ms > request_ms:
            other.throttled(user, client_id, other_ms, now)
        elif request_ms > 0:
            self.managers.request.throttled(user, client_id, request_ms, now)

    def _fetch(self, conn: Mutable, c: codecs.ApiCodec, user: str, client_id: str,
               result: Any, throttle: int, finish: Callable[[Any], Any]) -> Any:
        """Fetch's bytes are counted when its response is ready (a parked fetch later)."""

        def sized(body: Any) -> Any:
            if type(body) is not bytes:
                return body
            now = self.now()
            fetch = self.managers.fetch
            # Kafka counts the response with its correlation id (FetchResponse.sizeOf).
            size = len(body) + 4
            fetch_ms = fetch.record(user, client_id, size, now) if fetch.enabled else 0
            ms = max(throttle, fetch_ms)
            if ms <= 0:
                return body
            self._count(user, client_id, now, throttle, fetch, fetch_ms)
            self.mute(conn, ms)
            # Throttled: the records stay unsent (and uncounted), as Kafka's answer.
            if fetch.enabled:
                fetch.unrecord(user, client_id, size, now)
            version = c.api_version
            session = 0
            if version >= 7 and len(body) >= 10:
                _err, session = _SESSION.unpack_from(body, 4)
            return _patch(encode_fetch(version, [], session_id=session), 0, ms)

        later = _then(result, sized)
        return finish(later if later is not None else sized(result))


def throttle_offset(c: codecs.ApiCodec) -> int | None:
    """Where ``throttle_time_ms`` sits in an encoded response body (None: not at a fixed
    place, or absent)."""
    fields = [f.name for f in dataclasses.fields(c.response_type)]
    if "throttle_time" not in fields or c.api_key == _PRODUCE:
        return None
    if fields[0] == "throttle_time":
        return 0
    if c.api_key == _OFFSET_DELETE:
        return 2  # after the top-level error code
    return None


def _then(result: Any, fn: Callable[[Any], Any]) -> asyncio.Future[Any] | None:
    """Where ``result`` is still to come (a coroutine or future), a future of ``fn`` of it;
    None where it is already here."""
    if asyncio.iscoroutine(result):
        result = asyncio.ensure_future(result)
    if not isinstance(result, asyncio.Future):
        return None
    out: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def done(fut: asyncio.Future[Any]) -> None:
        if out.done():
            return
        if fut.cancelled():
            out.cancel()
        elif fut.exception() is not None:
            out.set_exception(fut.exception())  # type: ignore[arg-type]
        else:
            out.set_result(fn(fut.result()))

    result.add_done_callback(done)
    return out


def _patch(body: bytes, offset: int, ms: int) -> bytes:
    return body[:offset] + _I32.pack(ms) + body[offset + 4:]


def _as_is(result: Any) -> Any:
    return result


def _with_throttle(c: codecs.ApiCodec, result: Any, ms: int) -> Any:
    """``result`` (an entity, encoded bytes or a future of either) with ``ms`` in its
    ``throttle_time_ms``, or as it is where the response has none."""
    later = _then(result, lambda r: _with_throttle(c, r, ms))
    if later is not None:
        return later
    if isinstance(result, bytes | bytearray):
        offset = throttle_offset(c)
        return bytes(result) if offset is None else _patch(bytes(result), offset, ms)
    if dataclasses.is_dataclass(result) and hasattr(result, "throttle_time"):
        # Kafka keeps the larger of the handler's and the quotas' throttle times.
        have = result.throttle_time
        if isinstance(have, datetime.timedelta) and have.total_seconds() * 1000 >= ms:
            return result
        return dataclasses.replace(result,  # type: ignore[type-var]
                                   throttle_time=datetime.timedelta(milliseconds=ms))
    return result
