"""Bad input on secured listeners, each over a real socket: Kafka's answer or a closed
connection, and the broker keeps serving, both a new client and a connection that was
authenticated before the bad input arrived."""

from __future__ import annotations

import socket
import ssl
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from scramp import ScramClient
from structlog.testing import capture_logs

from kafkalite.broker.security.fixture import SecuritySetup
from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol.apis import codec, decode_response, encode_request
from kafkalite.protocol.build import build
from kafkalite.protocol.headers import encode_request_header, parse_response_header

_LEN = struct.Struct(">i")
SASL_FAILED = 58
GENERIC_SCRAM = ("Authentication failed during authentication due to invalid credentials "
                 "with SASL mechanism SCRAM-SHA-256")


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


def tls_context(b: BrokerThread) -> ssl.SSLContext:
    ca = b.client().ca_file
    assert ca is not None
    return ssl.create_default_context(cafile=ca)


def handshake(s: socket.socket, mech: str, version: int = 1) -> None:
    s.sendall(frame(17, version, mechanism=mech))
    assert answer(s, 17, version).error_code == 0


def metadata_ok(s: socket.socket) -> bool:
    s.sendall(frame(3, 1, topics=None))
    return [b.node_id for b in answer(s, 3, 1).brokers] == [1]


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


@pytest.fixture(scope="module")
def witnesses(brokers: dict[str, BrokerThread]) -> Iterator[dict[str, socket.socket]]:
    """One connection per broker, authenticated before any bad input and kept open."""
    sasl = connect(brokers["sasl"])
    handshake(sasl, "PLAIN")
    sasl.sendall(frame(36, 2, auth_bytes=b"\x00admin\x00admin-secret"))
    assert answer(sasl, 36, 2).error_code == 0
    tls = tls_context(brokers["tls"]).wrap_socket(connect(brokers["tls"]),
                                                  server_hostname="localhost")
    yield {"sasl": sasl, "tls": tls}
    sasl.close()
    tls.close()


@pytest.fixture
def still_serving(brokers: dict[str, BrokerThread], witnesses: dict[str, socket.socket]
                  ) -> Iterator[None]:
    yield
    for name, b in brokers.items():
        md = AdminClient(b.client().librdkafka()).list_topics(timeout=10)
        assert list(md.brokers) == [1]
        assert metadata_ok(witnesses[name]), name


pytestmark = pytest.mark.usefixtures("still_serving")


def test_request_before_authentication_closes(brokers: dict[str, BrokerThread]) -> None:
    with connect(brokers["sasl"]) as s:
        s.sendall(frame(3, 1, topics=None))
        assert closed(s)


def test_wrong_password_is_answered_logged_and_closed(brokers: dict[str, BrokerThread]) -> None:
    b = brokers["sasl"]
    with capture_logs() as logs, connect(b) as s:
        port = s.getsockname()[1]
        handshake(s, "PLAIN")
        s.sendall(frame(36, 2, auth_bytes=b"\x00admin\x00wrong-pw-123"))
        resp = answer(s, 36, 2)
        assert resp.error_code == SASL_FAILED
        assert resp.error_message == "Authentication failed: Invalid username or password"
        assert closed(s)
    failed = [e for e in logs if e["event"] == "sasl.authentication_failed"]
    assert len(failed) == 1
    assert (failed[0]["principal"], failed[0]["peer"], failed[0]["mechanism"]) == \
        ("User:admin", f"127.0.0.1:{port}", "PLAIN")
    assert "wrong-pw-123" not in repr(logs)  # never the password, in any line


@pytest.mark.parametrize(("mech", "token", "message"), [
    ("PLAIN", b"\x00admin", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
    ("SCRAM-SHA-256", b"n,,n=admin", GENERIC_SCRAM),  # client-first without its nonce
    ("PLAIN", b"x" * 600_000, None),
], ids=["truncated-plain", "truncated-scram", "oversized"])
def test_truncated_and_oversized_tokens(brokers: dict[str, BrokerThread], mech: str,
                                        token: bytes, message: str | None) -> None:
    with connect(brokers["sasl"]) as s:
        handshake(s, mech)
        try:
            s.sendall(frame(36, 2, auth_bytes=token))
        except (BrokenPipeError, ConnectionResetError):
            pass
        if message is not None:
            resp = answer(s, 36, 2)
            assert (resp.error_code, resp.error_message) == (SASL_FAILED, message)
        assert closed(s)  # an oversized frame before authentication is refused unread


def test_raw_token_framing(brokers: dict[str, BrokerThread]) -> None:
    """SaslHandshake v0: the tokens travel without a Kafka header (old clients)."""
    b = brokers["sasl"]
    with connect(b) as s:
        handshake(s, "PLAIN", version=0)
        token = b"\x00admin\x00admin-secret"
        s.sendall(_LEN.pack(len(token)) + token)
        assert recv_frame(s) == b""  # PLAIN's empty server token
        assert metadata_ok(s)
    with connect(b) as s:  # a truncated raw token: closed, with no answer to give
        handshake(s, "PLAIN", version=0)
        s.sendall(_LEN.pack(6) + b"\x00admin")
        assert closed(s)


def test_scram_bad_proof_and_unknown_user(brokers: dict[str, BrokerThread]) -> None:
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
        assert (resp.error_code, resp.error_message) == (SASL_FAILED, GENERIC_SCRAM)
        assert closed(s)
    with connect(b) as s:  # as Kafka, an unknown user fails at the client-first message
        handshake(s, "SCRAM-SHA-256")
        client = ScramClient(["SCRAM-SHA-256"], "nobody", "pw")
        s.sendall(frame(36, 2, auth_bytes=client.get_client_first().encode()))
        resp = answer(s, 36, 2)
        assert (resp.error_code, resp.error_message) == (SASL_FAILED, GENERIC_SCRAM)
        assert closed(s)


def test_plaintext_client_on_tls_port(brokers: dict[str, BrokerThread]) -> None:
    with capture_logs() as logs, connect(brokers["tls"]) as s:
        s.sendall(frame(18, 0))
        assert closed(s)
    assert [e["event"] for e in logs if e["event"].startswith("tls.")] == \
        ["tls.handshake_failed"]


def test_tls_client_on_plaintext_port(brokers: dict[str, BrokerThread]) -> None:
    # The ClientHello reads as a frame size past the pre-authentication limit.
    with capture_logs() as logs, pytest.raises((ssl.SSLError, OSError)):
        tls_context(brokers["tls"]).wrap_socket(connect(brokers["sasl"]),
                                                server_hostname="localhost")
    assert any(e["event"] == "connection.closed_bad_input" for e in logs)


def test_tls_client_that_sends_plaintext(brokers: dict[str, BrokerThread]) -> None:
    """After the handshake, a Kafka frame in the clear (not in a TLS record)."""
    b = brokers["tls"]
    raw = connect(b)
    with capture_logs() as logs, tls_context(b).wrap_socket(
            raw, server_hostname="localhost") as tls:
        clear = socket.socket(fileno=tls.fileno())
        try:
            clear.sendall(frame(18, 0))
            assert closed(tls)
        finally:
            clear.detach()
    assert any(e["event"] == "tls.bad_record" for e in logs)


def test_tls_client_sending_garbage_after_handshake(brokers: dict[str, BrokerThread]) -> None:
    b = brokers["tls"]
    with tls_context(b).wrap_socket(connect(b), server_hostname="localhost") as tls:
        raw_sock = socket.socket(fileno=tls.fileno())
        try:
            raw_sock.sendall(b"\x17\x03\x03\x00\x10" + b"\x00" * 16)  # a record that fails
            assert closed(tls)
        finally:
            raw_sock.detach()
