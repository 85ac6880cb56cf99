"""Backpressure and connection limits, each over real sockets: a client that never reads
its responses, ``queued.max.requests``, ``max.connections``, ``max.connections.per.ip``
(+ overrides), ``connections.max.idle.ms`` and a sender that never completes a frame."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class

Factory = Callable[..., BrokerThread]


def api_versions_frame(corr: int, client_id: str | None = None) -> bytes:
    cid = b"\xff\xff" if client_id is None else struct.pack(">h", len(client_id)) + \
        client_id.encode()
    body = struct.pack(">hhi", 18, 0, corr) + cid
    return struct.pack(">i", len(body)) + body


def connect(b: BrokerThread, source: str = "127.0.0.1") -> socket.socket:
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", b.port))
    return s


def served(s: socket.socket, corr: int = 1) -> bool:
    """True when an ApiVersions request on ``s`` is answered; False when closed."""
    try:
        s.sendall(api_versions_frame(corr))
        head = _recv_exact(s, 4)
        frame = _recv_exact(s, struct.unpack(">i", head)[0])
    except (OSError, ConnectionError):
        return False
    return struct.unpack(">i", frame[:4])[0] == corr


def _recv_exact(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def closed_within(s: socket.socket, seconds: float) -> bool:
    s.settimeout(seconds)
    try:
        return s.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:
        return True


def connections(b: BrokerThread) -> list[Any]:
    assert b.broker is not None
    return b.call(lambda: list(b.broker._connections))  # type: ignore[union-attr]


def held_bytes(b: BrokerThread, conn: Any) -> int:
    """What the broker holds for a connection in its own memory: answers not yet sent,
    frames read and not yet served, a partial frame."""
    return int(b.call(lambda: conn.transport.get_write_buffer_size()
                      + sum(len(f) for f in conn._backlog or ()) + conn.decoder.buffered))


def test_client_that_never_reads_is_paused_and_others_are_served(make_broker: Factory) -> None:
    b = make_broker({"connections.max.buffered.response.bytes": "65536"})
    hog = connect(b)
    hog.setblocking(False)
    count = 100_000
    # 12 MB of ApiVersions requests (a 100-byte client id each) and 45 MB of answers: more
    # than the kernel's socket buffers on both sides hold.
    frames = b"".join(api_versions_frame(i, "c" * 100) for i in range(1, count + 1))
    sent = 0
    stuck_since = time.monotonic()
    while sent < len(frames) and time.monotonic() - stuck_since < 2:
        try:
            sent += hog.send(frames[sent : sent + 65536])
            stuck_since = time.monotonic()
        except BlockingIOError:
            time.sleep(0.01)
    time.sleep(0.5)
    (conn,) = connections(b)
    # Reading on, the broker would hold the requests it read and could not answer yet.
    held = held_bytes(b, conn)
    assert held < 1 << 20, held
    assert b.call(lambda: conn._reading_paused)
    # Another client is served all the while.
    other = RawConnection(b.bootstrap)
    for _ in range(20):
        other.call(request(3, 12, topics=None, allow_auto_topic_creation=False,
                           include_topic_authorized_operations=False))
    other.close()
    # Once the hog reads, it gets every answer, in order.
    hog.setblocking(True)
    hog.settimeout(10)
    expected = 1
    buf = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if sent < len(frames):
            hog.setblocking(False)
            try:
                sent += hog.send(frames[sent : sent + 65536])
            except BlockingIOError:
                pass
            hog.setblocking(True)
        try:
            chunk = hog.recv(1 << 20)
        except TimeoutError:
            break
        buf += chunk
        pos = 0
        while len(buf) - pos >= 8:
            (size,) = struct.unpack_from(">i", buf, pos)
            if len(buf) - pos - 4 < size:
                break
            assert struct.unpack_from(">i", buf, pos + 4)[0] == expected
            expected += 1
            pos += 4 + size
        buf = buf[pos:]
        if expected > count:
            break
    assert expected == count + 1
    hog.close()


def test_queued_max_requests_bounds_requests_in_flight(make_broker: Factory) -> None:
    b = make_broker({"queued.max.requests": "2"})
    conn = RawConnection(b.bootstrap)
    topic_t = request_class(3, 12, "MetadataRequestTopic")
    conn.call(request(3, 12, topics=(topic_t(name="q", topic_id=None),),
                      allow_auto_topic_creation=True, include_topic_authorized_operations=False))
    ftopic = request_class(1, 12, "FetchTopic")
    fpart = request_class(1, 12, "FetchPartition")
    fetch = request(1, 12, replica_id=-1, max_wait=timedelta(seconds=3),
                    min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                    session_epoch=-1, rack_id="", topics=(ftopic(topic="q", partitions=(fpart(
                        partition=0, current_leader_epoch=-1, fetch_offset=0,
                        last_fetched_epoch=-1, log_start_offset=-1,
                        partition_max_bytes=1 << 20),)),), forgotten_topics_data=())
    # Five parked Fetch requests (empty, min_bytes=1: each waits out its 3 s) and a probe.
    conn.sock.sendall(b"".join(conn.frames(fetch, 5)) + api_versions_frame(999))
    time.sleep(0.5)
    (c,) = connections(b)
    in_flight, backlog = b.call(lambda: (len(c._pending), len(c._backlog)))
    assert in_flight == 2 and backlog == 4
    assert b.call(lambda: c._reading_paused)
    conn.close()


def test_queues_are_made_when_needed_and_dropped_when_idle(make_broker: Factory) -> None:
    """A connection's request queues exist only while requests wait: served in order
    through a parked Fetch, a backlog and a frame sent in pieces, then none is held."""
    b = make_broker({"queued.max.requests": "1"})
    conn = RawConnection(b.bootstrap)
    assert served(conn.sock, 1)
    (c,) = connections(b)
    assert b.call(lambda: (c._pending, c._backlog)) == (None, None)
    ftopic = request_class(1, 12, "FetchTopic")
    fpart = request_class(1, 12, "FetchPartition")
    conn.call(request(19, 7, topics=(request_class(19, 7, "CreatableTopic")(
        name="idle", num_partitions=1, replication_factor=1, assignments=(), configs=()),),
        timeout=timedelta(seconds=10), validate_only=False))
    fetch = request(1, 12, replica_id=-1, max_wait=timedelta(seconds=2),
                    min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                    session_epoch=-1, rack_id="", topics=(ftopic(topic="idle", partitions=(
                        fpart(partition=0, current_leader_epoch=-1, fetch_offset=0,
                              last_fetched_epoch=-1, log_start_offset=-1,
                              partition_max_bytes=1 << 20),)),), forgotten_topics_data=())
    data = b"".join(conn.frames(fetch, 1)) + api_versions_frame(7) + api_versions_frame(8)
    conn.sock.sendall(data[:-5])
    time.sleep(0.1)
    assert b.call(lambda: (c._pending is not None, c._backlog is not None,
                           c.decoder.buffered)) == (True, True, len(api_versions_frame(8)) - 5)
    conn.sock.sendall(data[-5:])
    answers = []
    for _ in range(3):
        head = _recv_exact(conn.sock, 4)
        answers.append(struct.unpack(">i", _recv_exact(conn.sock, struct.unpack(
            ">i", head)[0])[:4])[0])
    assert answers[1:] == [7, 8]
    assert b.call(lambda: (c._pending, c._backlog, c.decoder.buffered)) == (None, None, 0)
    assert served(conn.sock, 9)
    conn.close()


def test_max_connections(make_broker: Factory) -> None:
    b = make_broker({"max.connections": "3"})
    socks = [connect(b) for _ in range(3)]
    assert all(served(s, i + 1) for i, s in enumerate(socks))
    extra = connect(b)
    assert closed_within(extra, 5)
    socks.pop().close()
    time.sleep(0.2)
    again = connect(b)
    assert served(again)
    for s in [*socks, again, extra]:
        s.close()


def test_max_connections_per_ip_and_overrides(make_broker: Factory) -> None:
    b = make_broker({"max.connections.per.ip": "1",
                     "max.connections.per.ip.overrides": "127.0.0.2:2"})
    first = connect(b)
    assert served(first)
    second = connect(b)
    assert closed_within(second, 5)
    # 127.0.0.2 (the same loopback, another address) has an override of 2.
    a = connect(b, "127.0.0.2")
    c = connect(b, "127.0.0.2")
    assert served(a) and served(c)
    d = connect(b, "127.0.0.2")
    assert closed_within(d, 5)
    assert served(first, 7)
    for s in (first, second, a, c, d):
        s.close()


def test_idle_connection_is_closed(make_broker: Factory) -> None:
    b = make_broker({"connections.max.idle.ms": "300"})
    idle = connect(b)
    busy = connect(b)
    assert served(idle) and served(busy)
    deadline = time.monotonic() + 1.5
    i = 2
    while time.monotonic() < deadline:
        assert served(busy, i)
        i += 1
        time.sleep(0.1)
    assert closed_within(idle, 5)
    assert served(busy, i)
    idle.close()
    busy.close()


def test_partial_frame_sender_is_closed(make_broker: Factory) -> None:
    b = make_broker({"connections.max.partial.request.ms": "400"})
    slow = connect(b)
    healthy = connect(b)
    frame = api_versions_frame(1)
    slow.sendall(frame[:4])  # the size, then a byte at a time: never idle, never complete
    closed = False
    deadline = time.monotonic() + 5
    sent = 4
    while time.monotonic() < deadline and sent < len(frame) - 1:
        try:
            slow.sendall(frame[sent : sent + 1])
        except OSError:
            closed = True
            break
        sent += 1
        if closed_within(slow, 0.15):
            closed = True
            break
    assert closed, "a frame dribbled over seconds kept its connection"
    assert served(healthy)
    slow.close()
    healthy.close()
