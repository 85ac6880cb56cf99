"""The Schema Registry's costs (``--schema-registry``), against a ``kafkalite serve``
child process over HTTP on loopback.

    python -m benchmarks.schema_registry [--lookups 5000] [--versions 1000]

- a cached id lookup: ``GET /schemas/ids/{id}`` one at a time on one keep-alive
  connection, p50 and p99 (target: p50 under 1 ms);
- registering VERSIONS versions of one Avro record of FIELDS fields under BACKWARD, each
  version changing a field's default, so every registration is parsed and checked against
  the one before (target: 1,000 in under 5 s); ``--grow`` instead adds a field per version
  (version n has n fields: the cost grows with the schema);
- idle resident memory of a broker with the registry on against one with it off, after
  start-up and one registration (target: at most +10 MB), and the same with the admin
  listener on in both (which loads aiohttp already).

Each loop is bounded by its count and by --time-limit seconds.
"""

from __future__ import annotations

import argparse
import http.client
import json
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from benchmarks.support.common import header, percentile, table
from kafkalite.broker.testing.fixtures import BrokerProcess

CT = "application/vnd.schemaregistry.v1+json"


def _connect(url: str) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)


def _call(conn: http.client.HTTPConnection, method: str, path: str,
          body: object | None = None) -> object:
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": CT} if data else {})
    resp = conn.getresponse()
    payload = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"{method} {path}: {resp.status} {payload[:200]!r}")
    return json.loads(payload)


def record(fields: int, default: int = 0) -> str:
    return json.dumps({"type": "record", "name": "Bench", "namespace": "bench", "fields": [
        {"name": f"f{i}", "type": "long", "default": default if i == 0 else 0}
        for i in range(fields)]})


def lookups(url: str, count: int, time_limit: float) -> tuple[int, float, float]:
    conn = _connect(url)
    reply = _call(conn, "POST", "/subjects/lookup-bench/versions", {"schema": record(3)})
    assert isinstance(reply, dict)
    path = f"/schemas/ids/{reply['id']}"
    for _ in range(200):  # warm the connection and the interpreter
        _call(conn, "GET", path)
    times: list[float] = []
    deadline = time.perf_counter() + time_limit
    while len(times) < count and time.perf_counter() < deadline:
        t0 = time.perf_counter()
        _call(conn, "GET", path)
        times.append(time.perf_counter() - t0)
    conn.close()
    return len(times), percentile(times, 50) * 1000, percentile(times, 99) * 1000


def registrations(url: str, count: int, fields: int, grow: bool, time_limit: float
                  ) -> tuple[int, float]:
    conn = _connect(url)
    _call(conn, "PUT", "/config/versions-bench", {"compatibility": "BACKWARD"})
    done = 0
    start = time.perf_counter()
    while done < count and time.perf_counter() - start < time_limit:
        schema = record(done + 1) if grow else record(fields, done)
        _call(conn, "POST", "/subjects/versions-bench/versions", {"schema": schema})
        done += 1
    elapsed = time.perf_counter() - start
    versions = _call(conn, "GET", "/subjects/versions-bench/versions")
    assert isinstance(versions, list) and len(versions) == done, versions
    conn.close()
    return done, elapsed


def idle_rss(root: Path, registry: bool, admin: bool, settle: float) -> float:
    extra = ["--schema-registry", "127.0.0.1:0"] if registry else []
    if admin:
        extra += ["--admin", "127.0.0.1:0"]
    name = f"{'on' if registry else 'off'}-{'admin' if admin else 'plain'}"
    broker = BrokerProcess(root / name, extra_args=extra).start()
    try:
        if registry:
            assert broker.schema_registry_url is not None
            conn = _connect(broker.schema_registry_url)
            _call(conn, "POST", "/subjects/rss/versions", {"schema": record(3)})
            conn.close()
        time.sleep(settle)
        assert broker.proc is not None
        return float(psutil.Process(broker.proc.pid).memory_info().rss) / 2**20
    finally:
        broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lookups", type=int, default=5000)
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--fields", type=int, default=10)
    parser.add_argument("--grow", action="store_true",
                        help="add a field per version instead of changing a default")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=2.0,
                        help="seconds to wait before reading a broker's idle RSS")
    args = parser.parse_args()
    header("Schema Registry")
    with tempfile.TemporaryDirectory(prefix="kafkalite-registry-bench-") as d:
        root = Path(d)
        broker = BrokerProcess(root / "bench",
                               extra_args=["--schema-registry", "127.0.0.1:0"]).start()
        try:
            assert broker.schema_registry_url is not None
            n, p50, p99 = lookups(broker.schema_registry_url, args.lookups, args.time_limit)
            done, elapsed = registrations(broker.schema_registry_url, args.versions,
                                          args.fields, args.grow, args.time_limit)
        finally:
            broker.stop()
        off = idle_rss(root, False, False, args.settle)
        on = idle_rss(root, True, False, args.settle)
        admin_off = idle_rss(root, False, True, args.settle)
        admin_on = idle_rss(root, True, True, args.settle)
    shape = "a field added each" if args.grow else f"{args.fields} fields, a default changed"
    print(table(["figure", "value", "target"], [
        (f"GET /schemas/ids/{{id}}, {n} on one connection: p50 / p99",
         f"{p50:.3f} / {p99:.3f} ms", "p50 < 1 ms"),
        (f"{done} versions registered under BACKWARD ({shape})", f"{elapsed:.2f} s "
         f"({done / elapsed:,.0f}/s)", "1,000 in < 5 s"),
        ("idle RSS, registry off / on", f"{off:.1f} / {on:.1f} MiB (+{on - off:.1f})",
         "≤ +10 MB"),
        ("idle RSS with the admin listener, registry off / on",
         f"{admin_off:.1f} / {admin_on:.1f} MiB (+{admin_on - admin_off:.1f})", ""),
    ]))


if __name__ == "__main__":
    main()
