"""Bad input on secured listeners, each over a real socket: Kafka's answer or a closed
connection, and the broker keeps serving a well-behaved client afterwards."""

from __future__ import annotations

import socket
import ssl
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from scramp import ScramClient

from kafkalite.broker.security.fixture import SecuritySetup
from kafkalite.broker.testing import BrokerThread
from kafkalite.protocol.apis import codec, decode_response, encode_request
from kafkalite.protocol.build import build
from kafkalite.protocol.headers import encode_request_header, parse_response_header

_LEN = struct.Struct(">i")


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, BrokerThread]]:
    base = tmp_path_factory.mktemp("bad")
    started = {
        "sasl": BrokerThread(base / "sasl", security=SecuritySetup(
            "SASL_PLAINTEXT", mechanisms=("PLAIN", "SCRAM-SHA-256"))).start(),
        "tls": BrokerThread(base / "tls", security=SecuritySetup("SSL")).start(),
    }
    yield started
    for b in started.values():
        b.stop()


def frame(api_key: int, version: int, **fields: Any) -> bytes:
    c = codec(api_key, version)
    body = encode_request_header(api_key, version, 1, "bad", c.request_flexible) + \
        encode_request(build(c.request_type, **fields))
    return _LEN.pack(len(body)) + body


def recv_frame(sock: socket.socket) -> bytes | None:
    buf = b""
    while len(buf) < 4:
        chunk = sock.recv(4 - len(buf))
        if not chunk:
            return None
        buf += chunk
    (n,) = _LEN.unpack(buf)
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            return None
        out += chunk
    return out


def answer(sock: socket.socket, api_key: int, version: int) -> Any:
    body = recv_frame(sock)
    assert body is not None, "connection closed instead of an answer"
    _c, off = parse_response_header(body, codec(api_key, version).response_header_flexible)
    return decode_response(api_key, version, body, off)


def closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, ssl.SSLError, OSError):
        return True


def connect(b: BrokerThread) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", b.port), 10)
    s.settimeout(10)
    return s


def still_serving(b: BrokerThread) -> None:
    md = AdminClient(b.client().librdkafka()).list_topics(timeout=10)
    assert list(md.brokers) == [1]


def handshake(s: socket.socket, mech: str) -> None:
    s.sendall(frame(17, 1, mechanism=mech))
    assert answer(s, 17, 1).error_code == 0


def test_request_before_authentication_closes(brokers: dict[str, BrokerThread]) -> None:
    b = brokers["sasl"]
    with connect(b) as s:
        s.sendall(frame(3, 1, topics=None))
        assert closed(s)
    still_serving(b)


def test_wrong_password(brokers: dict[str, BrokerThread]) -> None:
    b = brokers["sasl"]
    with connect(b) as s:
        handshake(s, "PLAIN")
        s.sendall(frame(36, 2, auth_bytes=b"\x00admin\x00wrong"))
        resp = answer(s, 36, 2)
        assert resp.error_code == 58
        assert resp.error_message == "Authentication failed: Invalid username or password"
        assert closed(s)
    still_serving(b)


@pytest.mark.parametrize("token", [b"\x00admin", b"x" * 600_000], ids=["truncated", "oversized"])
def test_truncated_and_oversized_tokens(brokers: dict[str, BrokerThread], token: bytes) -> None:
    b = brokers["sasl"]
    with connect(b) as s:
        handshake(s, "PLAIN")
        try:
            s.sendall(frame(36, 2, auth_bytes=token))
        except (BrokenPipeError, ConnectionResetError):
            pass
        if len(token) < 1000:
            assert answer(s, 36, 2).error_code == 58
        assert closed(s)  # an oversized frame before authentication is refused unread
    still_serving(b)


def test_scram_bad_proof(brokers: dict[str, BrokerThread]) -> None:
    b = brokers["sasl"]
    with connect(b) as s:
        handshake(s, "SCRAM-SHA-256")
        client = ScramClient(["SCRAM-SHA-256"], "admin", "not-the-password")
        s.sendall(frame(36, 2, auth_bytes=client.get_client_first().encode()))
        first = answer(s, 36, 2)
        assert first.error_code == 0
        client.set_server_first(first.auth_bytes.decode())
        s.sendall(frame(36, 2, auth_bytes=client.get_client_final().encode()))
        resp = answer(s, 36, 2)
        assert resp.error_code == 58
        assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in resp.error_message
        assert closed(s)
    still_serving(b)


def test_plaintext_client_on_tls_port(brokers: dict[str, BrokerThread]) -> None:
    b = brokers["tls"]
    with connect(b) as s:
        s.sendall(frame(18, 0))
        assert closed(s)
    still_serving(b)


def test_tls_client_sending_garbage_after_handshake(brokers: dict[str, BrokerThread]) -> None:
    b = brokers["tls"]
    settings = b.client()
    assert settings.ca_file is not None
    ctx = ssl.create_default_context(cafile=settings.ca_file)
    raw = connect(b)
    with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
        raw_sock = socket.socket(fileno=tls.fileno())
        try:
            raw_sock.sendall(b"\x17\x03\x03\x00\x10" + b"\x00" * 16)  # a record that fails
            assert closed(tls)
        finally:
            raw_sock.detach()
    still_serving(b)
