"""One client connection: frames cut in ``data_received``, responses written in order.

Kafka clients pipeline requests and rely on responses arriving in request order, so
each request takes a slot in a FIFO; a parked request (JoinGroup, long-poll Fetch)
holds back the responses queued behind it until it resolves.

Flow control: the connection stops reading (``pause_reading``) while its write buffer is
past the high-water mark (a client that sends and never reads) or while
``queued.max.requests`` of its requests are unanswered; frames already read wait in a
backlog and are served as room frees up. Memory per connection is thus bounded by the
write buffer's high-water mark plus one read's worth of frames.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
from collections import deque
from typing import Any, cast

import structlog

from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.framing import FrameDecoder

from .apis import FaultClose, KafkaApis
from .busy_poll import BusyPoll
from .limits import ConnectionQuotas, Limits
from .security.authenticator import FORWARD, Close, SaslAuthenticator
from .security.setup import ListenerSecurity

log = structlog.get_logger("kafkalite.connection")

_ids = itertools.count(1)
_DEFAULT_LIMITS = Limits()
#: Ready responses are written once this many bytes are joined, so the write buffer's
#: high-water mark is noticed within one read's worth of requests.
_WRITE_CHUNK = 1 << 16


class KafkaConnection(asyncio.Protocol):
    # Slotted, and the queues made when first needed: an idle connection is mostly these
    # fields (thousands of idle clients each hold one).
    __slots__ = (
        "_backlog", "_busy_poll", "_counted", "_muted", "_pending", "_quotas",
        "_reading_paused", "_registry", "_unaccepted", "_write_paused", "apis", "client_id",
        "client_id_raw", "closed", "connected_at", "connection_id", "decoder",
        "last_active", "limits", "listener_name", "max_request_size", "partial_since",
        "peer_host", "peer_port", "principal", "received_at", "sasl", "security",
        "transport",
    )

    def __init__(
        self, apis: KafkaApis, max_request_size: int, listener_name: str,
        registry: set[KafkaConnection], limits: Limits | None = None,
        quotas: ConnectionQuotas | None = None, security: ListenerSecurity | None = None,
        busy_poll: BusyPoll | None = None,
    ) -> None:
        self.apis = apis
        self.max_request_size = max_request_size
        self.decoder = FrameDecoder(max_request_size)
        self.security = security
        #: The SASL authenticator on SASL listeners; None where there is nothing to check.
        self.sasl: SaslAuthenticator | None = None
        self.listener_name = listener_name
        self.connection_id = next(_ids)
        self.principal = "User:ANONYMOUS"
        #: The last client id seen, raw and decoded: clients send the same one every time.
        self.client_id_raw: bytes | None = None
        self.client_id: str | None = None
        self.peer_host = ""
        self.peer_port = 0
        self.transport: asyncio.Transport | None = None
        #: Responses not yet written: bytes, or a Future resolving to bytes/None (made
        #: with the first response that waits).
        self._pending: deque[Any] | None = None
        self._registry = registry
        self.closed = False
        self.limits = limits or _DEFAULT_LIMITS
        self._quotas = quotas
        self._busy_poll = busy_poll
        self._counted = False
        #: Frames read but not yet served (flow control holds them back); made when first
        #: needed.
        self._backlog: deque[bytes] | None = None
        self._write_paused = False
        #: Throttled by a client quota: nothing more is read until the broker clock says.
        self._muted = False
        self._reading_paused = False
        self.last_active = time.monotonic()
        #: When the read that brought the frames being served arrived (request times
        #: for /metrics run from here, as Kafka's from a request's arrival).
        self.received_at = self.last_active
        self.partial_since: float | None = None
        #: When the connection was accepted, ms on the broker's clock (set by the listener).
        self.connected_at = 0
        #: Bytes read while the listener's acceptor waits (max.connection.creation.rate);
        #: None once the connection is accepted.
        self._unaccepted: list[bytes] | None = None

    # --- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        if peer:
            # One string per client host, not one per connection.
            self.peer_host, self.peer_port = sys.intern(peer[0]), peer[1]
        throttling = self.apis.throttling
        if throttling is not None and not throttling.arrive(
                self, self.apis.node_id or 0, self.listener_name):
            # The listener's acceptor waits (max.connection.creation.rate): unread till then
            # (what arrives before the pause takes hold waits too).
            self._unaccepted = []
            self.transport.pause_reading()
            self._reading_paused = True
            return
        self._accept()

    def accept_now(self) -> None:
        """The listener's acceptor takes this connection after its wait."""
        held, self._unaccepted = self._unaccepted or [], None
        if self.transport is None or self.transport.is_closing():
            return  # the client gave up meanwhile
        self._accept()
        if self.closed:
            return
        for data in held:
            self.data_received(data)
        self._update_reading()

    def _accept(self) -> None:
        assert self.transport is not None
        transport = self.transport
        if self._quotas is not None:
            refused = self._quotas.admit(self.peer_host)
            if refused is not None:
                log.warning("connection.refused", peer=f"{self.peer_host}:{self.peer_port}",
                            reason=refused)
                self.closed = True
                self.transport.abort()
                return
            self._counted = True
        throttling = self.apis.throttling
        if throttling is not None and not throttling.admit(
                self, self.peer_host, self.apis.node_id or 0, self.listener_name):
            # Over its IP's connection_creation_rate: held unread, closed later, uncounted.
            if self._counted and self._quotas is not None:
                self._counted = False
                self._quotas.release(self.peer_host)
            self.closed = True
            self.transport.pause_reading()
            return
        high = self.limits.write_high_water
        self.transport.set_write_buffer_limits(high=high, low=high // 4)
        self._registry.add(self)
        sec = self.security
        if sec is None:
            return
        if sec.principal_mapper is not None:
            # Loaded by a TLS listener's first connection: a plaintext broker never needs it.
            from .security.principal_rules import NoMatchingRule
            from .security.tls import principal_for

            try:
                self.principal = principal_for(transport.get_extra_info("ssl_object"),
                                               sec.principal_mapper)
            except NoMatchingRule as e:
                self._abort(f"ssl.principal.mapping.rules: {e}")
                return
        if sec.mechanisms is not None:
            self.sasl = SaslAuthenticator(sec.mechanisms, sec.reauth_ms,
                                          f"{self.peer_host}:{self.peer_port}", sec.name)
            self.decoder.max_size = min(self.max_request_size, sec.max_receive_before_auth)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.decoder.buffered and not self.closed:
            log.warning(
                "connection.closed_mid_frame",
                peer=f"{self.peer_host}:{self.peer_port}",
                connection=self.connection_id,
                buffered=self.decoder.buffered,
            )
        self.closed = True
        self._registry.discard(self)
        for listener in self.apis.disconnect_listeners:
            listener(self.connection_id)
        if self._counted and self._quotas is not None:
            self._counted = False
            self._quotas.release(self.peer_host)
        self._backlog = None
        pending, self._pending = self._pending, None
        for item in pending or ():
            if isinstance(item, asyncio.Future) and not item.done():
                item.cancel()

    def data_received(self, data: bytes) -> None:
        if self._unaccepted is not None:
            self._unaccepted.append(data)
            if self.transport is not None:
                self.transport.pause_reading()
            return
        self.last_active = self.received_at = now = time.monotonic()
        try:
            frames = self.decoder.feed(data)
        except ProtocolError as e:
            self._abort(str(e))
            return
        if not self.decoder.buffered:
            self.partial_since = None
        elif self.partial_since is None or frames:
            self.partial_since = now
        if self._backlog:
            self._backlog.extend(frames)
            self._serve_backlog()
        elif frames:
            self._serve(frames)

    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._backlog:
            self._serve_backlog()
        else:
            self._update_reading()

    def _serve_backlog(self) -> None:
        frames = list(self._backlog or ())
        self._backlog = None
        self._serve(frames)

    def _serve(self, frames: list[bytes]) -> None:
        pending = self._pending
        transport = self.transport
        assert transport is not None
        limit = self.limits.queued_max_requests
        # Responses ready at once are joined into one write: a pipelining client sends
        # hundreds of frames per read, and a send per response would dominate the cost.
        out: list[bytes] = []
        out_bytes = 0
        sasl = self.sasl
        for i, frame in enumerate(frames):
            if self.closed:
                return
            if (self._write_paused or self._muted
                    or (pending is not None and len(pending) >= limit)):
                if self._backlog is None:
                    self._backlog = deque()
                self._backlog.extend(frames[i:])
                break
            try:
                if sasl is not None and not sasl.passes(frame):
                    result = self._authenticate(sasl, frame, out)
                    if self.closed:
                        return
                else:
                    result = self.apis.handle(self, frame)
            except ProtocolError as e:
                self._abort(str(e))
                return
            except FaultClose as e:
                self._fault_close(e, out)
                return
            except Exception as e:  # a decoding bug must cost one connection, not the server
                log.exception("connection.request_failed", connection=self.connection_id)
                self._abort(f"{type(e).__name__}: {e}")
                return
            if result is None:
                continue
            if not pending:
                if not isinstance(result, asyncio.Future):
                    out.append(result)
                    out_bytes += len(result)
                    if out_bytes >= _WRITE_CHUNK:
                        # May call pause_writing at once, which stops this loop.
                        self._write(b"".join(out))
                        out.clear()
                        out_bytes = 0
                    continue
                if out:
                    self._write(b"".join(out))
                    out.clear()
                    out_bytes = 0
            if pending is None:
                pending = self._pending = deque()
            pending.append(result)
            if isinstance(result, asyncio.Future):
                result.add_done_callback(self._on_resolved)
        if out:
            self._write(out[0] if len(out) == 1 else b"".join(out))
        if pending:
            self._flush()
        self._update_reading()

    def _authenticate(self, sasl: SaslAuthenticator, frame: bytes, out: list[bytes]) -> Any:
        """Serve a frame the SASL authenticator must see (KafkaApis gets what it forwards)."""
        try:
            step = sasl.handle(frame)
        except Close as c:
            log.info("connection.closed_sasl", peer=f"{self.peer_host}:{self.peer_port}",
                     connection=self.connection_id, reason=c.reason)
            self.closed = True
            transport = self.transport
            assert transport is not None
            # Kafka's error answer goes out last, behind the responses ready before it.
            if out:
                transport.write(b"".join(out))
                out.clear()
            for item in self._pending or ():
                if isinstance(item, bytes):
                    transport.write(item)
            if c.response is not None:
                transport.write(c.response)
            transport.close()
            return None
        if sasl.authenticated:
            self.principal = sasl.principal
            self.decoder.max_size = self.max_request_size
        if step is FORWARD:
            return self.apis.handle(self, frame)
        return step

    def _write(self, data: bytes) -> None:
        assert self.transport is not None
        self.last_active = time.monotonic()
        self.transport.write(data)
        if self._busy_poll is not None:
            self._busy_poll.answered(len(data))

    def _update_reading(self) -> None:
        """Read while there is room: the write buffer below its mark, no backlog."""
        transport = self.transport
        if transport is None or self.closed or transport.is_closing():
            return
        pause = self._write_paused or bool(self._backlog) or self._muted
        if pause == self._reading_paused:
            return
        self._reading_paused = pause
        if pause:
            transport.pause_reading()
            self.partial_since = None  # a frame held back by us is not the client's delay
        else:
            transport.resume_reading()
            if self.decoder.buffered:
                self.partial_since = time.monotonic()

    # --- ordering -----------------------------------------------------------------------

    def _on_resolved(self, _fut: asyncio.Future[Any]) -> None:
        if self.closed:
            return
        self._flush()
        if self._backlog and not self._write_paused:
            self._serve_backlog()

    def _flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        transport = self.transport
        assert transport is not None
        out: list[bytes] = []
        while pending:
            head = pending[0]
            if isinstance(head, asyncio.Future):
                if not head.done():
                    break
                pending.popleft()
                if head.cancelled():
                    continue
                value = head.result()
                if value is not None:
                    out.append(value)
            else:
                out.append(pending.popleft())
        if not pending:
            self._pending = None  # an idle connection holds no queue
        if out:
            self._write(b"".join(out))

    def _abort(self, reason: str) -> None:
        log.warning(
            "connection.closed_bad_input",
            peer=f"{self.peer_host}:{self.peer_port}",
            connection=self.connection_id,
            reason=reason,
        )
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _fault_close(self, e: FaultClose, out: list[bytes]) -> None:
        """A fault rule closes the connection: the answers ready before this request go
        out first, as they would have left a real broker already."""
        log.info("connection.closed_by_fault", peer=f"{self.peer_host}:{self.peer_port}",
                 connection=self.connection_id, rule=e.rule.id, action=e.rule.action.value)
        self.closed = True
        transport = self.transport
        assert transport is not None
        ready = [*out]
        for item in self._pending or ():
            if not isinstance(item, bytes):
                break
            ready.append(item)
        if ready:
            transport.write(b"".join(ready))
        transport.close()

    # --- client quotas (broker/quotas/throttling.py) --------------------------------------

    def mute(self) -> None:
        self._muted = True

    def unmute(self) -> None:
        self._muted = False
        if self._backlog and not self._write_paused:
            self._serve_backlog()
        else:
            self._update_reading()

    def abort_throttled(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def abort_idle(self, reason: str) -> None:
        """Close for a limit the client ran into (idle, a request never completed)."""
        if self.closed:
            return
        log.info("connection.closed_idle", peer=f"{self.peer_host}:{self.peer_port}",
                 connection=self.connection_id, reason=reason)
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.close()
