"""One client connection: frames cut in ``data_received``, responses written in order.

Kafka clients pipeline requests and rely on responses arriving in request order, so
each request takes a slot in a FIFO; a parked request (JoinGroup, long-poll Fetch)
holds back the responses queued behind it until it resolves.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from typing import TYPE_CHECKING, Any

import structlog

from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.framing import FrameDecoder

if TYPE_CHECKING:
    from .apis import KafkaApis

log = structlog.get_logger("kafkalite.connection")

_ids = itertools.count(1)


class KafkaConnection(asyncio.Protocol):
    def __init__(
        self, apis: KafkaApis, max_request_size: int, listener_name: str, registry: set[Any]
    ) -> None:
        self.apis = apis
        self.decoder = FrameDecoder(max_request_size)
        self.listener_name = listener_name
        self.connection_id = next(_ids)
        self.principal = "User:ANONYMOUS"
        #: The last client id seen, raw and decoded: clients send the same one every time.
        self.client_id_raw: bytes | None = None
        self.client_id: str | None = None
        self.peer_host = ""
        self.peer_port = 0
        self.transport: asyncio.Transport | None = None
        #: Responses not yet written: bytes, or a Future resolving to bytes/None.
        self._pending: deque[Any] = deque()
        self._registry = registry
        self.closed = False

    # --- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer_host, self.peer_port = peer[0], peer[1]
        self._registry.add(self)

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
        for item in self._pending:
            if isinstance(item, asyncio.Future) and not item.done():
                item.cancel()
        self._pending.clear()

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.decoder.feed(data)
        except ProtocolError as e:
            self._abort(str(e))
            return
        pending = self._pending
        transport = self.transport
        assert transport is not None
        # Responses ready at once are joined into one write: a pipelining client sends
        # hundreds of frames per read, and a send per response would dominate the cost.
        out: list[bytes] = []
        for frame in frames:
            if self.closed:
                return
            try:
                result = self.apis.handle(self, frame)
            except ProtocolError as e:
                self._abort(str(e))
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
                    continue
                if out:
                    transport.write(b"".join(out))
                    out.clear()
            pending.append(result)
            if isinstance(result, asyncio.Future):
                result.add_done_callback(self._on_resolved)
        if out:
            transport.write(out[0] if len(out) == 1 else b"".join(out))
        if pending:
            self._flush()

    # --- ordering -----------------------------------------------------------------------

    def _on_resolved(self, _fut: asyncio.Future[Any]) -> None:
        if not self.closed:
            self._flush()

    def _flush(self) -> None:
        pending = self._pending
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
        if out:
            transport.write(b"".join(out))

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

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.close()
