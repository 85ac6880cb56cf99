"""The registry's HTTP layer over raw sockets: pipelined keep-alive requests, chunked
bodies, ``Expect: 100-continue``, and malformed requests answered 400 and closed."""

from __future__ import annotations

import json
import socket

from kafkalite.broker.testing import BrokerThread

SCHEMA = json.dumps({"schema": json.dumps({"type": "string"})}).encode()


def _connect(broker: BrokerThread) -> socket.socket:
    port = int(broker.schema_registry_url.rsplit(":", 1)[1])
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _read_responses(s: socket.socket, n: int) -> list[tuple[int, bytes]]:
    buf = b""
    out: list[tuple[int, bytes]] = []
    while len(out) < n:
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            assert chunk, "closed early"
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        status = int(lines[0].split(" ")[1])
        length = next(int(x.split(":")[1]) for x in lines if x.lower().startswith(
            "content-length"))
        while len(rest) < length:
            rest += s.recv(65536)
        if status != 100:
            out.append((status, rest[:length]))
        buf = rest[length:] if status != 100 else rest
    return out


def test_pipelined_requests_and_chunked_body(kafkalite_registry_broker: BrokerThread) -> None:
    s = _connect(kafkalite_registry_broker)
    post = (b"POST /subjects/a/versions HTTP/1.1\r\nHost: x\r\nContent-Length: "
            + str(len(SCHEMA)).encode() + b"\r\n\r\n" + SCHEMA)
    chunked = (b"POST /subjects/b/versions HTTP/1.1\r\nHost: x\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n"
               + f"{10:x}\r\n".encode() + SCHEMA[:10] + b"\r\n"
               + f"{len(SCHEMA) - 10:x}\r\n".encode() + SCHEMA[10:] + b"\r\n0\r\n\r\n")
    s.sendall(post + chunked + b"GET /subjects HTTP/1.1\r\nHost: x\r\n\r\n")
    got = _read_responses(s, 3)
    assert got == [(200, b'{"id": 1}'), (200, b'{"id": 1}'), (200, b'["a", "b"]')]
    s.close()


def test_expect_continue(kafkalite_registry_broker: BrokerThread) -> None:
    s = _connect(kafkalite_registry_broker)
    s.sendall(b"POST /subjects/c/versions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
              b"Content-Length: " + str(len(SCHEMA)).encode() + b"\r\n\r\n")
    assert s.recv(100).startswith(b"HTTP/1.1 100 Continue")
    s.sendall(SCHEMA)
    assert _read_responses(s, 1) == [(200, b'{"id": 1}')]
    s.close()


def test_malformed_requests(kafkalite_registry_broker: BrokerThread) -> None:
    for raw, status in [(b"NONSENSE\r\n\r\n", 400),
                        (b"GET / HTTP/1.1\r\nno colon here\r\n\r\n", 400),
                        (b"POST /subjects/x/versions HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
                         400),
                        (b"DELETE /schemas/types HTTP/1.1\r\n\r\n", 405),
                        (b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\n\r\n", 400)]:
        s = _connect(kafkalite_registry_broker)
        s.sendall(raw)
        [(got, body)] = _read_responses(s, 1)
        assert got == status, raw[:40]
        assert json.loads(body)["error_code"] == status
        s.close()
