"""A minimal blocking Kafka client over one TCP connection, for hand-made request streams
(tests and benchmarks).

Requests are kio entities encoded with ``protocol.headers.encode_request_header`` and
kio's writers; responses are decoded with kio's readers. ``frames`` pre-encodes the same
request body under consecutive correlation ids so a pipeline costs the client almost
nothing per request.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.apis import codec, decode_response, encode_request
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.headers import encode_request_header, parse_response_header

_LEN = struct.Struct(">i")
_HDR = struct.Struct(">hhi")
_I16 = struct.Struct(">h")

API_VERSIONS = ApiKey.API_VERSIONS


def _flexible_request(api_key: int, version: int) -> bool:
    return codec(api_key, version).request_flexible


class RawConnection:
    def __init__(self, bootstrap: str, client_id: str = "kafkalite-bench") -> None:
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), 10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(30)
        self.client_id = client_id
        self.corr = 0
        self._buf = bytearray()
        self.versions = self._api_versions()

    def close(self) -> None:
        self.sock.close()

    def _recv_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self._buf)))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def recv_frame(self) -> bytes:
        (size,) = _LEN.unpack(self._recv_exact(4))
        return self._recv_exact(size)

    def _api_versions(self) -> dict[int, tuple[int, int]]:
        # v0 by hand: it is the one request every broker answers.
        self.corr += 1
        body = encode_request_header(API_VERSIONS, 0, self.corr, self.client_id, False)
        self.sock.sendall(_LEN.pack(len(body)) + body)
        frame = self.recv_frame()
        pos = 4
        (err,) = _I16.unpack_from(frame, pos)
        pos += 2
        if err:
            raise RuntimeError(f"ApiVersions error {err}")
        (n,) = _LEN.unpack_from(frame, pos)
        pos += 4
        out = {}
        for _ in range(n):
            k, lo, hi = struct.unpack_from(">hhh", frame, pos)
            pos += 6
            out[k] = (lo, hi)
        return out

    def version(self, api_key: int, highest: int) -> int:
        """The highest version both this client (up to ``highest``) and the broker support."""
        lo, hi = self.versions.get(api_key, (-1, -1))
        v = min(hi, highest)
        if v < lo or v < 0:
            raise RuntimeError(f"broker does not support api {api_key} up to v{highest}")
        return v

    def frame(self, request: Any) -> bytes:
        self.corr += 1
        key, ver = int(request.__api_key__), int(request.__version__)
        body = encode_request_header(key, ver, self.corr, self.client_id,
                                     _flexible_request(key, ver)) + encode_request(request)
        return _LEN.pack(len(body)) + body

    def call(self, request: Any) -> Any:
        key, ver = int(request.__api_key__), int(request.__version__)
        self.sock.sendall(self.frame(request))
        frame = self.recv_frame()
        _corr, off = parse_response_header(frame, codec(key, ver).response_header_flexible)
        return decode_response(key, ver, frame, off)

    def frames(self, request: Any, count: int) -> list[bytes]:
        """``count`` frames of ``request`` with consecutive correlation ids."""
        key, ver = int(request.__api_key__), int(request.__version__)
        flexible = _flexible_request(key, ver)
        cid = self.client_id.encode()
        tail = _I16.pack(len(cid)) + cid + (b"\x00" if flexible else b"") + encode_request(
            request)
        size = _HDR.size + len(tail)
        out = []
        for _ in range(count):
            self.corr += 1
            out.append(_LEN.pack(size) + _HDR.pack(key, ver, self.corr) + tail)
        return out


def request(api_key: int, version: int, **fields: Any) -> Any:
    return build(codec(api_key, version).request_type, **fields)


def request_class(api_key: int, version: int, name: str) -> type[Any]:
    return nested(codec(api_key, version).request_type, name)


@dataclass
class Pipelined:
    count: int
    seconds: float
    errors: Counter[int]

    @property
    def per_second(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else float("nan")


def pipeline(conn: RawConnection, frames: list[bytes], error_offset: int, window: int,
             limit: float) -> Pipelined:
    """Send ``frames`` keeping up to ``window`` unanswered; count answers by error code.

    ``error_offset`` is where the int16 error code sits in each response frame.
    """
    sent = 0
    received = 0
    cond = threading.Condition()
    failure: list[BaseException] = []
    deadline = time.monotonic() + limit
    sock = conn.sock
    chunk = 64

    def sender() -> None:
        nonlocal sent
        try:
            i = 0
            while i < len(frames) and time.monotonic() < deadline:
                with cond:
                    while sent - received + chunk > window and not failure:
                        cond.wait(0.5)
                        if time.monotonic() > deadline:
                            return
                    if failure:
                        return
                batch = frames[i:i + chunk]
                sock.sendall(b"".join(batch))
                i += len(batch)
                with cond:
                    sent = i
        except BaseException as e:  # reported by the receiving side
            failure.append(e)

    errors: Counter[int] = Counter()
    t0 = time.perf_counter()
    th = threading.Thread(target=sender, daemon=True)
    th.start()
    buf = bytearray()
    pos = 0
    total = len(frames)
    try:
        while received < total:
            if failure:
                raise failure[0]
            if time.monotonic() > deadline + 5:
                break
            with cond:
                if received >= sent and not th.is_alive():
                    break
            data = sock.recv(1 << 20)
            if not data:
                raise ConnectionError("broker closed the connection")
            buf += data
            n = 0
            blen = len(buf)
            while blen - pos >= 4:
                (size,) = _LEN.unpack_from(buf, pos)
                if blen - pos - 4 < size:
                    break
                (code,) = _I16.unpack_from(buf, pos + 4 + error_offset)
                errors[code] += 1
                pos += 4 + size
                n += 1
            if pos > 1 << 20:
                del buf[:pos]
                pos = 0
            with cond:
                received += n
                cond.notify()
    finally:
        th.join(5)
    return Pipelined(received, time.perf_counter() - t0, errors)


def one_at_a_time(conn: RawConnection, frames: list[bytes], limit: float) -> list[float]:
    """Round-trip milliseconds for each frame sent alone."""
    out = []
    deadline = time.monotonic() + limit
    for f in frames:
        t0 = time.perf_counter()
        conn.sock.sendall(f)
        conn.recv_frame()
        out.append((time.perf_counter() - t0) * 1000)
        if time.monotonic() > deadline:
            break
    return out
