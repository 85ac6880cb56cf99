"""Bad input on one connection closes only that connection, with a log line; a client
connected at the same time keeps being served."""

from __future__ import annotations

import random
import socket
import struct
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka.admin import AdminClient

from kafkalite.broker.testing.fixtures import BrokerThread

API_VERSIONS = 18
METADATA = 3


def request(api_key: int, version: int, corr: int, body: bytes = b"",
            client_id: bytes = b"t") -> bytes:
    header = struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id
    if (api_key == API_VERSIONS and version >= 3) or (api_key == METADATA and version >= 9):
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def recv_exact(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def recv_frame(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", recv_exact(sock, 4))
    return recv_exact(sock, size)


def connect(broker: BrokerThread) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def assert_closed_by_server(sock: socket.socket, timeout: float = 5) -> None:
    sock.settimeout(timeout)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return
    except (ConnectionResetError, BrokenPipeError):
        return
    except TimeoutError:
        pytest.fail("server kept the connection open")


class Witness:
    """A well-behaved client on its own connection that asks ApiVersions again and again."""

    def __init__(self, broker: BrokerThread) -> None:
        self.sock = connect(broker)
        self.corr = 0

    def served(self) -> None:
        self.corr += 1
        self.sock.sendall(request(API_VERSIONS, 0, self.corr))
        frame = recv_frame(self.sock)
        assert struct.unpack_from(">ih", frame) == (self.corr, 0)


@pytest.fixture
def witness(broker: BrokerThread) -> Iterator[Witness]:
    w = Witness(broker)
    w.served()
    yield w
    w.sock.close()


def _truncated_then_close(s: socket.socket) -> None:
    s.sendall(struct.pack(">i", 100) + b"\x00\x03\x00\x01")
    s.close()


CASES: dict[str, tuple[bytes, str]] = {
    "two_gib_frame": (struct.pack(">i", 2**31 - 1) + b"\x00" * 16, "exceeds limit"),
    "negative_size": (struct.pack(">i", -5) + b"\x00" * 16, "exceeds limit"),
    "unknown_api_key": (request(9999, 0, 1), "unsupported api key 9999"),
    "unsupported_version": (request(METADATA, 99, 1), "unsupported api key 3 version 99"),
    "short_header": (struct.pack(">i", 8) + struct.pack(">hhi", METADATA, 1, 1), ""),
    "bad_client_id_length": (struct.pack(">i", 10) + struct.pack(">hhih", METADATA, 1, 1, 500),
                             ""),
    # Metadata v1 declaring a billion topics and then nothing.
    "malformed_body": (request(METADATA, 1, 1, struct.pack(">i", 10**9)), "malformed"),
    # A count whose allocation would fail: kio's native reader would abort the process.
    "huge_array_count": (request(METADATA, 1, 1, struct.pack(">i", 2**31 - 1)), "elements in"),
    "huge_compact_count": (request(METADATA, 9, 1, b"\xff\xff\xff\xff\x0f"), "elements in"),
    "random_bytes": (bytes(random.Random(7).randrange(256) for _ in range(300)), ""),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_closes_only_that_connection(
    broker: BrokerThread, witness: Witness, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    payload, reason = CASES[case]
    s = connect(broker)
    s.sendall(payload)
    assert_closed_by_server(s)
    s.close()
    witness.served()
    logs = "".join(capsys.readouterr())
    assert "connection.closed_bad_input" in logs
    assert reason in logs


def test_framed_random_bodies_close_connections(broker: BrokerThread, witness: Witness) -> None:
    rng = random.Random(11)
    for _ in range(20):
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 80)))
        s = connect(broker)
        # An api key outside Kafka's range guarantees the request is not a valid one.
        s.sendall(struct.pack(">ih", len(body) + 2, 30000 + rng.randrange(2000)) + body)
        assert_closed_by_server(s)
        s.close()
    witness.served()


def test_truncated_frame_then_close(
    broker: BrokerThread, witness: Witness, capsys: pytest.CaptureFixture[str]
) -> None:
    _truncated_then_close(connect(broker))
    witness.served()
    deadline = time.monotonic() + 5
    logs = ""
    while time.monotonic() < deadline and "connection.closed_mid_frame" not in logs:
        logs += "".join(capsys.readouterr())
        time.sleep(0.02)
    assert "connection.closed_mid_frame" in logs


def test_api_versions_unsupported_version_answers_v0(broker: BrokerThread) -> None:
    s = connect(broker)
    s.sendall(request(API_VERSIONS, 99, 42))
    frame = recv_frame(s)
    corr, err, count = struct.unpack_from(">ihi", frame)
    assert (corr, err) == (42, 35)  # UNSUPPORTED_VERSION, v0 body after a v0 header
    keys = {struct.unpack_from(">hhh", frame, 10 + 6 * i)[0] for i in range(count)}
    assert API_VERSIONS in keys and METADATA in keys
    # The connection stays usable: the client retries with a version it knows.
    s.sendall(request(API_VERSIONS, 3, 43, b"\x02t\x021\x00"))
    frame = recv_frame(s)
    assert struct.unpack_from(">i", frame)[0] == 43
    s.close()


def test_request_over_max_bytes_refused_without_buffering(
    make_broker: Callable[..., BrokerThread], capsys: pytest.CaptureFixture[str]
) -> None:
    b = make_broker({"socket.request.max.bytes": "4096"})
    w = Witness(b)
    s = connect(b)
    # Only the size and a few bytes are sent: the server must refuse on the size alone.
    s.sendall(struct.pack(">i", 5000) + b"\x00\x03\x00\x01")
    assert_closed_by_server(s)
    w.served()
    assert "exceeds limit 4096" in "".join(capsys.readouterr())
    # A request under the limit is served.
    s2 = connect(b)
    s2.sendall(request(METADATA, 1, 5, struct.pack(">i", -1)))
    assert struct.unpack_from(">i", recv_frame(s2))[0] == 5
    s2.close()
    w.sock.close()


def test_admin_client_served_while_garbage_arrives(broker: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert admin.list_topics(timeout=10).cluster_id
    for payload, _ in CASES.values():
        s = connect(broker)
        s.sendall(payload)
        assert_closed_by_server(s)
        s.close()
        assert admin.list_topics(timeout=10).brokers
