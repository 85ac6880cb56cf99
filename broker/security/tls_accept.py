"""TLS on an accepted connection, through ``ssl.MemoryBIO``, in front of its protocol.

Not ``create_server(ssl=...)``: asyncio and uvloop drop a failed handshake without a
word (an ``OSError`` is only logged in debug mode), while a garbage or plaintext client
on a TLS port must cost that connection only, with a log line saying who and why. The
connection's protocol sees a transport whose ``write`` encrypts and whose
``get_extra_info("ssl_object")`` is the TLS session (for the client certificate).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger("kafkalite.tls")

HANDSHAKE_TIMEOUT = 10.0
_READ = 256 * 1024


class TlsTransport(asyncio.Transport):
    """What the connection protocol writes to: plaintext in, TLS records out."""

    def __init__(self, shim: TlsAcceptor) -> None:
        super().__init__()
        self._shim = shim

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._shim.send(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        self._shim.send(b"".join(list_of_data))

    def close(self) -> None:
        self._shim.close()

    def abort(self) -> None:
        self._shim.abort()

    def is_closing(self) -> bool:
        t = self._shim.transport
        return t is None or t.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "ssl_object":
            return self._shim.sslobj
        if name == "cipher":
            return self._shim.sslobj.cipher()
        t = self._shim.transport
        return t.get_extra_info(name, default) if t is not None else default

    def pause_reading(self) -> None:
        if self._shim.transport is not None:
            self._shim.transport.pause_reading()

    def resume_reading(self) -> None:
        if self._shim.transport is not None:
            self._shim.transport.resume_reading()

    def is_reading(self) -> bool:
        t = self._shim.transport
        return t is not None and t.is_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        t = self._shim.transport
        if t is not None:
            t.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        t = self._shim.transport
        return t.get_write_buffer_size() if t is not None else 0


class TlsAcceptor(asyncio.Protocol):
    def __init__(self, context: ssl.SSLContext, make: Callable[[], asyncio.Protocol],
                 listener: str) -> None:
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.sslobj = context.wrap_bio(self.incoming, self.outgoing, server_side=True)
        self.make = make
        self.listener = listener
        self.transport: asyncio.Transport | None = None
        self.app: asyncio.Protocol | None = None
        self.peer = ""
        self._timer: asyncio.TimerHandle | None = None

    # --- the TCP side -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else ""
        self._timer = asyncio.get_running_loop().call_later(HANDSHAKE_TIMEOUT, self._timeout)

    def _timeout(self) -> None:
        if self.app is None:
            self._fail("handshake timed out")

    def _fail(self, reason: str) -> None:
        log.warning("tls.handshake_failed", peer=self.peer, listener=self.listener,
                    reason=reason)
        self._flush()
        self.abort()

    def data_received(self, data: bytes) -> None:
        self.incoming.write(data)
        app = self.app
        if app is None:
            try:
                self.sslobj.do_handshake()
            except ssl.SSLWantReadError:
                self._flush()
                return
            except (ssl.SSLError, ValueError) as e:
                self._fail(f"{type(e).__name__}: {e}")
                return
            if self._timer is not None:
                self._timer.cancel()
            self._flush()
            app = self.app = self.make()
            app.connection_made(TlsTransport(self))
            if self.transport is None:
                return
        chunks: list[bytes] = []
        while True:
            try:
                chunk = self.sslobj.read(_READ)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:  # the client's close_notify
                self.close()
                break
            except ssl.SSLError as e:
                log.warning("tls.bad_record", peer=self.peer, listener=self.listener,
                            reason=f"{type(e).__name__}: {e}")
                self.abort()
                return
            if not chunk:  # close_notify: answer with ours
                self.close()
                break
            chunks.append(chunk)
        if self.outgoing.pending:
            self._flush()
        if chunks:
            app.data_received(chunks[0] if len(chunks) == 1 else b"".join(chunks))

    def eof_received(self) -> bool | None:
        return None

    def pause_writing(self) -> None:
        if self.app is not None:
            self.app.pause_writing()

    def resume_writing(self) -> None:
        if self.app is not None:
            self.app.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.transport = None
        if self.app is not None:
            app, self.app = self.app, None
            app.connection_lost(exc)

    # --- the application side -----------------------------------------------------------

    def _flush(self) -> None:
        if self.outgoing.pending and self.transport is not None:
            self.transport.write(self.outgoing.read())

    def send(self, data: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            return  # closing (our close_notify may be out): nothing more to say
        try:
            self.sslobj.write(data)
        except ssl.SSLError as e:
            log.warning("tls.write_failed", peer=self.peer, reason=str(e))
            self.abort()
            return
        self._flush()

    def close(self) -> None:
        if self.transport is not None:
            # Our close_notify: clients (asyncio's among them) wait for it before they
            # consider the connection closed.
            try:
                self.sslobj.unwrap()
            except (ssl.SSLError, ValueError):
                pass
            self._flush()
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
