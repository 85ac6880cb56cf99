"""Security costs, in one run (``python -m benchmarks.security``):

1. Heartbeat CPU with the ACL authorizer holding 1,000 ACLs against no authorizer: a
   member joins over TCP, then the broker's own dispatch serves ``--heartbeats`` of its
   Heartbeat frames on the broker's loop, timed with the loop thread's CPU clock (the
   whole request path: header, decode, authorization, coordinator, encoding).
2. Heartbeats per second on one pipelined connection (window 64) over PLAINTEXT and
   SASL_SSL (PLAIN): the raw client wraps its socket in TLS and authenticates first.
3. Produce and consume throughput with confluent-kafka over PLAINTEXT, SSL and SASL_SSL
   (SCRAM-SHA-256): ``--records`` records of ``--size`` bytes produced, then consumed.

Every broker listens on 127.0.0.1 in this process's background thread; loops are bounded.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from confluent_kafka import Consumer, Producer  # noqa: E402

from benchmarks.groups import heartbeat_error_offset, join_member  # noqa: E402
from kafkalite.broker.auth import AllowAll  # noqa: E402
from kafkalite.broker.security.acl import (  # noqa: E402
    AclBinding,
    AclOperation,
    AclPermission,
    AclResourceType,
    PatternType,
)
from kafkalite.broker.security.fixture import SecuritySetup  # noqa: E402
from kafkalite.broker.testing.fixtures import BrokerThread  # noqa: E402
from kafkalite.client.kafka import RawConnection, pipeline, request  # noqa: E402

HEARTBEAT = 12


def heartbeat_cpu(base: Path, acls: int, count: int) -> tuple[float, float]:
    """CPU microseconds per Heartbeat served by dispatch: (no authorizer, the ACL
    authorizer with ``acls`` ACLs), measured alternately on one broker (minimum of five
    rounds each), so machine noise hits both alike."""
    overrides = {"authorizer.class.name":
                 "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    b = BrokerThread(base / "hb", overrides).start()
    try:
        inner = b.broker
        assert inner is not None
        store = inner.acls
        assert store is not None
        rows = [AclBinding(AclResourceType.GROUP, f"group-{i}", PatternType.LITERAL,
                           f"User:u{i}", "*", AclOperation.READ, AclPermission.ALLOW)
                for i in range(acls - 2)]
        rows += [AclBinding(rt, "*", PatternType.LITERAL, "User:ANONYMOUS", "*",
                            AclOperation.ALL, AclPermission.ALLOW)
                 for rt in (AclResourceType.GROUP, AclResourceType.TOPIC)]
        b.call(lambda: store.add(rows))
        b.call(lambda: inner.create_topic("hb", 1))
        conn = RawConnection(b.bootstrap)
        member, generation, hv = join_member(conn, "hb-group", "hb", 30000)
        frame = conn.frames(request(HEARTBEAT, hv, group_id="hb-group", generation_id=generation,
                                    member_id=member, group_instance_id=None), 1)[0][4:]
        peer = types.SimpleNamespace(principal="User:ANONYMOUS", peer_host="127.0.0.1",
                                     peer_port=1, listener_name="PLAINTEXT", connection_id=1,
                                     client_id_raw=None, client_id=None, received_at=0.0)
        acl_authorizer = inner.apis.authorizer

        def run(authorizer: object) -> float:
            inner.apis.authorizer = authorizer  # type: ignore[assignment]
            handle = inner.apis.handle
            for _ in range(1000):  # warm-up: caches, lookups
                peer.received_at = time.monotonic()
                handle(peer, frame)
            t0 = time.thread_time()
            for i in range(count):
                if not i & 63:  # as a connection does once per read of pipelined frames
                    peer.received_at = time.monotonic()
                handle(peer, frame)
            return (time.thread_time() - t0) / count * 1e6

        open_, closed = [], []
        for _ in range(5):
            open_.append(b.call(lambda: run(AllowAll())))
            closed.append(b.call(lambda: run(acl_authorizer)))
        conn.close()
        return min(open_), min(closed)
    finally:
        b.stop()


class SecureRawConnection(RawConnection):
    """The raw benchmark client over TLS, authenticated with SASL/PLAIN."""

    def __init__(self, bootstrap: str, ca_file: str, user: str, password: str) -> None:
        import socket
        import ssl

        host, _, port = bootstrap.rpartition(":")
        raw = socket.create_connection((host, int(port)), 10)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ctx = ssl.create_default_context(cafile=ca_file)
        self.sock = ctx.wrap_socket(raw, server_hostname="localhost")
        self.sock.settimeout(30)
        self.client_id = "kafkalite-bench"
        self.corr = 0
        self._buf = bytearray()
        self.versions = self._api_versions()
        hs = self.call(request(17, 1, mechanism="PLAIN"))
        assert int(hs.error_code) == 0, hs
        auth = self.call(request(36, 2, auth_bytes=f"\x00{user}\x00{password}".encode()))
        assert int(auth.error_code) == 0, auth


def heartbeats_per_second(base: Path, mode: str, count: int) -> float:
    setup = None if mode == "PLAINTEXT" else SecuritySetup(mode, mechanisms=("PLAIN",))
    b = BrokerThread(base / f"hbs-{mode}", security=setup).start()
    try:
        inner = b.broker
        assert inner is not None
        b.call(lambda: inner.create_topic("hb", 1))
        if setup is None:
            conn = RawConnection(b.bootstrap)
        else:
            s = b.client()
            assert s.ca_file and s.username and s.password
            conn = SecureRawConnection(b.bootstrap, s.ca_file, s.username, s.password)
        member, generation, hv = join_member(conn, "hbs", "hb", 30000)
        frames = conn.frames(request(HEARTBEAT, hv, group_id="hbs", generation_id=generation,
                                     member_id=member, group_instance_id=None), count)
        result = pipeline(conn, frames, heartbeat_error_offset(hv), 64, 60)
        conn.close()
        assert set(result.errors) <= {0}, result.errors
        return result.per_second
    finally:
        b.stop()


def throughput(base: Path, mode: str, records: int, size: int) -> tuple[float, float]:
    setup = None if mode == "PLAINTEXT" else SecuritySetup(mode, mechanisms=("SCRAM-SHA-256",))
    b = BrokerThread(base / f"tp-{mode}", security=setup).start()
    try:
        conf = b.client().librdkafka()
        value = b"x" * size
        p = Producer({**conf, "linger.ms": 5, "batch.num.messages": 10000})
        t0 = time.monotonic()
        for _ in range(records):
            while True:
                try:
                    p.produce("tp", value)
                    break
                except BufferError:
                    p.poll(0.01)
        p.flush(120)
        produce_s = time.monotonic() - t0
        c = Consumer({**conf, "group.id": "tp", "auto.offset.reset": "earliest",
                      "fetch.max.bytes": 52428800})
        c.subscribe(["tp"])
        seen, t0 = 0, time.monotonic()
        deadline = t0 + 120
        while seen < records and time.monotonic() < deadline:
            for m in c.consume(10000, 1.0):
                if m.error() is None:
                    seen += 1
        consume_s = time.monotonic() - t0
        c.close()
        return records / produce_s, seen / consume_s
    finally:
        b.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--heartbeats", type=int, default=50000)
    ap.add_argument("--acls", type=int, default=1000)
    ap.add_argument("--records", type=int, default=100000)
    ap.add_argument("--size", type=int, default=100)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        none, many = heartbeat_cpu(base, args.acls, args.heartbeats)
        print("Heartbeat dispatch CPU per request")
        print(f"  no authorizer           {none:7.2f} us")
        print(f"  StandardAuthorizer, {args.acls} ACLs {many:7.2f} us  "
              f"({(many / none - 1) * 100:+.1f}%)")
        print("Heartbeats per second, one pipelined connection")
        for mode in ("PLAINTEXT", "SASL_SSL"):
            print(f"  {mode:<10} {heartbeats_per_second(base, mode, args.heartbeats):10.0f}/s")
        print(f"Produce / consume, {args.records} records of {args.size} B (confluent-kafka)")
        for mode in ("PLAINTEXT", "SSL", "SASL_SSL"):
            prod, cons = throughput(base, mode, args.records, args.size)
            print(f"  {mode:<10} produce {prod:10.0f} rec/s   consume {cons:10.0f} rec/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
