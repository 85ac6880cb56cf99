"""A small HTTP/1.1 server on the broker's event loop, enough for a REST API of JSON
bodies: keep-alive and pipelined requests, ``Content-Length`` and chunked bodies,
``Expect: 100-continue``, path parameters. It costs the broker nothing to load (asyncio
is there already), where an HTTP framework would add several MB to a broker's memory.

Bad requests are answered 400 (a malformed request line, header or length) or 413 (a
body over the limit) and the connection is closed; a handler's own refusals are its
responses."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import parse_qsl, unquote

import structlog

log = structlog.get_logger("kafkalite.schema_registry")

MAX_HEAD = 16 * 1024
MAX_HEADERS = 100
IDLE_TIMEOUT_S = 75.0
REASONS = {200: "OK", 100: "Continue", 400: "Bad Request", 401: "Unauthorized",
           404: "Not Found", 405: "Method Not Allowed", 409: "Conflict",
           413: "Payload Too Large", 422: "Unprocessable Entity",
           500: "Internal Server Error"}


@dataclass(slots=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names in lower case
    body: bytes
    match_info: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Response:
    status: int
    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Response]


class Routes:
    """Path patterns (``/subjects/{subject}/versions``) to handlers by method; a
    parameter is one path segment, percent-decoded."""

    def __init__(self) -> None:
        self._routes: list[tuple[re.Pattern[str], dict[str, Handler]]] = []
        self._by_pattern: dict[str, dict[str, Handler]] = {}

    def add(self, method: str, pattern: str, handler: Handler) -> None:
        methods = self._by_pattern.get(pattern)
        if methods is None:
            regex = re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern) + "/?$")
            methods = self._by_pattern[pattern] = {}
            self._routes.append((regex, methods))
        methods[method] = handler

    def find(self, method: str, path: str) -> tuple[Handler | None, dict[str, str], bool]:
        """(handler, parameters, whether the path exists under another method)."""
        for regex, methods in self._routes:
            m = regex.match(path)
            if m is None:
                continue
            handler = methods.get(method)
            params = {k: unquote(v) for k, v in m.groupdict().items()}
            return handler, params, handler is None
        return None, {}, False


class _BadRequest(Exception):
    def __init__(self, status: int, message: str, unread: int = 0) -> None:
        super().__init__(message)
        self.status = status
        #: Body bytes the client is still sending: read and dropped before closing, so
        #: that it sees the answer rather than a reset connection.
        self.unread = unread


class HttpProtocol(asyncio.Protocol):
    """One connection: requests parsed from the bytes as they come, answered in order."""

    def __init__(self, app: Callable[[Request], Response],
                 reject: Callable[[int, str], Response], max_body: int) -> None:
        self.app = app
        self.reject = reject
        self.max_body = max_body
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self._continued = False
        self._idle: asyncio.TimerHandle | None = None
        self._draining = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not derive from asyncio's classes.
        self.transport = cast(asyncio.Transport, transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self.transport = None

    def _arm(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        loop = asyncio.get_running_loop()
        self._idle = loop.call_later(IDLE_TIMEOUT_S, self._close)

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        self._arm()
        if self._draining:
            self._draining -= len(data)
            if self._draining <= 0:
                self._close()
            return
        self.buffer += data
        while self.transport is not None and not self.transport.is_closing():
            try:
                parsed = self._next()
            except _BadRequest as e:
                self._draining = e.unread
                self._send(self.reject(e.status, str(e)), close=not e.unread)
                self.buffer.clear()
                return
            if parsed is None:
                return
            request, keep_alive = parsed
            try:
                response = self.app(request)
            except Exception:
                log.exception("schema_registry.request_failed", path=request.path,
                              method=request.method)
                response = self.reject(500, "internal error")
            self._send(response, close=not keep_alive)

    def _next(self) -> tuple[Request, bool] | None:
        """The next whole request taken off the buffer, or None until it has arrived."""
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEAD:
                raise _BadRequest(400, "request head too large")
            return None
        if end > MAX_HEAD:
            raise _BadRequest(400, "request head too large")
        try:
            head = bytes(self.buffer[:end]).decode("latin-1")
        except UnicodeDecodeError:  # latin-1 decodes every byte; kept for clarity
            raise _BadRequest(400, "bad request head") from None
        lines = head.split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[0].isalpha():
            raise _BadRequest(400, "bad request line")
        method, target, version = parts
        if len(lines) - 1 > MAX_HEADERS:
            raise _BadRequest(400, "too many headers")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise _BadRequest(400, "bad header line")
            headers[name.lower()] = value.strip()
        start = end + 4
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if chunked:
            body_end = self._chunked(start)
            if body_end is None:
                return None
            body, taken = body_end
        else:
            raw = headers.get("content-length", "0")
            if not raw.isdigit():
                raise _BadRequest(400, "bad Content-Length")
            length = int(raw)
            if length > self.max_body:
                raise _BadRequest(413, f"body larger than {self.max_body} bytes",
                                  max(length - (len(self.buffer) - start), 0))
            if len(self.buffer) - start < length:
                self._maybe_continue(headers)
                return None
            body = bytes(self.buffer[start:start + length])
            taken = start + length
        del self.buffer[:taken]
        self._continued = False
        path, _, query = target.partition("?")
        conn = headers.get("connection", "").lower()
        keep_alive = conn != "close" if version == "HTTP/1.1" else conn == "keep-alive"
        return Request(method.upper(), path, dict(parse_qsl(query)), headers, body), keep_alive

    def _maybe_continue(self, headers: dict[str, str]) -> None:
        if (not self._continued and headers.get("expect", "").lower() == "100-continue"
                and self.transport is not None):
            self._continued = True
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _chunked(self, pos: int) -> tuple[bytes, int] | None:
        body = bytearray()
        buf = self.buffer
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size_text = bytes(buf[pos:eol]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise _BadRequest(400, "bad chunk size") from None
            if size < 0 or len(body) + size > self.max_body:
                raise _BadRequest(413, f"body larger than {self.max_body} bytes")
            start = eol + 2
            if size == 0:
                # Trailers, if any, end with an empty line.
                end = buf.find(b"\r\n\r\n", eol)
                if end < 0:
                    return None
                return bytes(body), end + 4
            if len(buf) < start + size + 2:
                return None
            body += buf[start:start + size]
            pos = start + size + 2

    def _send(self, response: Response, close: bool) -> None:
        if self.transport is None:
            return
        reason = REASONS.get(response.status, "Unknown")
        head = [f"HTTP/1.1 {response.status} {reason}",
                f"Content-Type: {response.content_type}",
                f"Content-Length: {len(response.body)}"]
        head += [f"{k}: {v}" for k, v in response.headers.items()]
        if close or self._draining:
            head.append("Connection: close")
        self.transport.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + response.body)
        if close:
            self.transport.close()
