"""Soak and scale: many group members, one huge group, many partitions, start-up.

```
python -m benchmarks.scale soak [--members 1000] [--groups 100] [--seconds 60] [--ten-minutes]
python -m benchmarks.scale cold [--members 1000]
python -m benchmarks.scale partitions [--topics 1000] [--per-topic 10]
python -m benchmarks.scale metadata-nodes [--topics 500] [--per-topic 10] [--nodes 3]
python -m benchmarks.scale startup [--runs 5] [--brokers kafkalite,kafkalite-nodes3,tansu]
python -m benchmarks.scale reload [--records 1000000]
python -m benchmarks.scale sizes [--sizes 1000,5000,10000,50000] [--brokers kafkalite,kafka]
                                  [--nodes 3]
python -m benchmarks.scale connections|groups [--sizes 1000,10000] [--brokers kafkalite,kafka]
```

Clients are light raw-protocol ones (``benchmarks/support/aio_client.py``: one asyncio connection
per member, requests encoded with kio), so the broker is what is measured. The broker is
a child process with its own defaults (session timeouts as Kafka's), data on disk.

- **soak**: MEMBERS members in GROUPS groups join, then heartbeat every 3 s (session
  10 s) for SECONDS. Any heartbeat answered with an error is a false expiration (nobody
  left, so no rebalance is due); the member rejoins. Prints heartbeats, errors by code,
  heartbeat p50/p99/max and the broker's CPU and RSS every 30 s.
- **cold**: MEMBERS members join one group at once from a cold start; time until every
  member holds its SyncGroup answer (Stable), and the size of the group's
  GroupMetadataValue record in ``__consumer_offsets``.
- **partitions**: TOPICS topics of PER_TOPIC partitions created with CreateTopics; the
  broker's RSS per partition and open file descriptors, Metadata latency for all topics,
  start-up time after a clean stop and recovery time after SIGKILL.
- **metadata-nodes**: ``serve --nodes NODES`` with TOPICS topics of PER_TOPIC partitions
  (one replica each, spread over the nodes); Metadata for every topic asked of each node:
  its first answer, then the median and p99 of SAMPLES more.
- **startup**: `python -c pass`, then launch to listening (port open, --ready-file written),
  to the first ApiVersions answer, RSS after 2 s idle and the CPU time the broker used
  until it listened, kafkalite and Tansu; and the
  in-process fixture (BrokerThread) from start() to listening
  in the same run (median of RUNS, the brokers taking turns). ``kafkalite-nodesN`` is
  ``serve --nodes N``, timed to its last node's port and the ready file.
- **reload**: ``__consumer_offsets`` with RECORDS commit records, start-up before and after
  compaction (``benchmarks.offsets.reload``).
- **sizes**: kafkalite and Apache Kafka 4.4 grown through partition counts in one run;
  tables and a plot (``benchmarks/support/scale_sizes.py``); ``--nodes N`` grows N brokers on
  each side (kafkalite ``serve --nodes N``, Kafka a controller and N broker processes).
- **connections**, **groups**: idle connections and consumer groups at growing sizes,
  kafkalite and Kafka 4.4 in one run; tables and a plot (``benchmarks/support/scale_dims.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import psutil

from benchmarks.support.aio_client import AioConnection, Member
from benchmarks.support.common import (
    Kafkalite,
    free_port,
    header,
    kafkalite_defaults,
    percentile,
    table,
    wait_port,
)
from kafkalite.client.kafka import RawConnection, request, request_class

TOPIC = "soak"


class Sampler:
    """The broker's CPU % (of one core) and RSS, sampled every ``every`` seconds."""

    def __init__(self, pid: int, every: float) -> None:
        self.proc = psutil.Process(pid)
        self.every = every
        self.rows: list[tuple[float, float, float]] = []
        self.t0 = time.monotonic()
        t = self.proc.cpu_times()
        self._cpu = t.user + t.system
        self._at = self.t0

    def sample(self) -> None:
        now = time.monotonic()
        t = self.proc.cpu_times()
        cpu = t.user + t.system
        pct = 100 * (cpu - self._cpu) / max(now - self._at, 1e-9)
        self._cpu, self._at = cpu, now
        self.rows.append((now - self.t0, pct, self.proc.memory_info().rss / 1e6))

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.every)
            self.sample()


# --- soak --------------------------------------------------------------------------------


async def soak(bootstrap: str, pid: int, members: int, groups: int, seconds: float,
               interval: float, session_ms: int) -> None:
    per = members // groups
    conns = [await AioConnection.open(bootstrap, f"soak-{i}") for i in range(members)]
    ms = [Member(conns[i], f"soak-g{i // per}", TOPIC, session_ms, 30000)
          for i in range(per * groups)]
    t0 = time.monotonic()
    errs = await asyncio.gather(*(m.join() for m in ms))
    join_s = time.monotonic() - t0
    print(f"   {len(ms)} members in {groups} groups joined in {join_s:.1f} s "
          f"(join errors: {Counter(e for e in errs if e) or 'none'})", flush=True)
    lat: list[float] = []
    codes: Counter[int] = Counter()
    rejoins = 0
    stop = asyncio.Event()
    sampler = Sampler(pid, 30)
    deadline = time.monotonic() + seconds

    async def beat(m: Member, offset: float) -> None:
        nonlocal rejoins
        await asyncio.sleep(offset)
        while time.monotonic() < deadline:
            t = time.perf_counter()
            err = await m.heartbeat()
            lat.append((time.perf_counter() - t) * 1000)
            codes[err] += 1
            if err:
                rejoins += 1
                await m.join()
            await asyncio.sleep(interval)

    sampler_task = asyncio.create_task(sampler.run(stop))
    await asyncio.gather(*(beat(m, interval * i / len(ms)) for i, m in enumerate(ms)))
    stop.set()
    await sampler_task
    for c in conns:
        c.close()
    false_expirations = sum(n for code, n in codes.items() if code)
    print(table(["figure", "value"], [
        ("members / groups", f"{len(ms)} / {groups}"),
        ("seconds heartbeating", seconds),
        ("heartbeat interval / session timeout", f"{interval:.0f} s / {session_ms / 1000:.0f} s"),
        ("heartbeats", sum(codes.values())),
        ("answers by error code", dict(codes)),
        ("false expirations (error answers)", false_expirations),
        ("rejoins", rejoins),
        ("heartbeat p50 / p99 / max ms",
         f"{percentile(lat, 50):.2f} / {percentile(lat, 99):.2f} / {max(lat):.1f}"),
    ]), flush=True)
    print(table(["t (s)", "broker CPU % of a core", "broker RSS MB"], sampler.rows), flush=True)


# --- cold start of one big group ----------------------------------------------------------


async def cold(bootstrap: str, members: int) -> float:
    conns = [await AioConnection.open(bootstrap, f"cold-{i}") for i in range(members)]
    ms = [Member(c, "cold-group", TOPIC, 30000, 60000) for c in conns]
    t0 = time.monotonic()
    errs = await asyncio.gather(*(m.join() for m in ms))
    took = time.monotonic() - t0
    gens = Counter(m.generation for m in ms)
    print(f"   {members} members: join errors {Counter(e for e in errs if e) or 'none'}, "
          f"generations {dict(gens)}", flush=True)
    for c in conns:
        c.close()
    return took


def group_value_sizes(data_dir: Path, group: str) -> list[int]:
    from kafkalite.protocol import consumer_offsets as co
    from kafkalite.protocol.records import decode_batch, iter_batch_headers

    sizes = []
    for seg in sorted(data_dir.glob("__consumer_offsets-*/*.log")):
        raw = seg.read_bytes()
        for pos, _h in iter_batch_headers(raw):
            _hdr, recs = decode_batch(raw, pos)
            for r in recs:
                if r.key is None or r.value is None:
                    continue
                with contextlib.suppress(Exception):
                    k = co.decode_key(r.key)
                    if isinstance(k, co.GroupMetadataKey) and k.group == group:
                        sizes.append(len(r.value))
    return sizes


# --- partitions ---------------------------------------------------------------------------


def create_topics(bootstrap: str, topics: int, per_topic: int) -> float:
    conn = RawConnection(bootstrap)
    v = conn.version(19, 7)
    topic_cls = request_class(19, v, "CreatableTopic")
    t0 = time.monotonic()
    for start in range(0, topics, 50):
        req = request(19, v, topics=tuple(
            topic_cls(name=f"scale-{i:04d}", num_partitions=per_topic, replication_factor=1,
                      assignments=(), configs=())
            for i in range(start, min(start + 50, topics))), timeout=timedelta(seconds=60),
            validate_only=False)
        resp = conn.call(req)
        bad = [t for t in resp.topics if int(t.error_code) not in (0, 36)]
        if bad:
            raise RuntimeError(f"CreateTopics: {bad[0]}")
    conn.close()
    return time.monotonic() - t0


def metadata_latency(bootstrap: str, samples: int) -> tuple[list[float], int, int]:
    conn = RawConnection(bootstrap)
    v = conn.version(3, 12)
    req = request(3, v, topics=None, allow_auto_topic_creation=False,
                  include_topic_authorized_operations=False)
    out = []
    parts = topics = 0
    for _ in range(samples):
        t = time.perf_counter()
        resp = conn.call(req)
        out.append((time.perf_counter() - t) * 1000)
        topics = len(resp.topics)
        parts = sum(len(t.partitions) for t in resp.topics)
    conn.close()
    return out, topics, parts


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def partitions(topics: int, per_topic: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="kafkalite-scale-"))
    try:
        b = Kafkalite({"auto.create.topics.enable": "false"}, data_dir=root).start(600)
        time.sleep(1)
        rss0, fd0 = b.rss_mb(), fds(b.pid)
        create_s = create_topics(b.bootstrap, topics, per_topic)
        time.sleep(1)
        rss1, fd1 = b.rss_mb(), fds(b.pid)
        lat, n_topics, n_parts = metadata_latency(b.bootstrap, 20)
        b.stop()
        t = time.monotonic()
        b.start(600)
        start_s = time.monotonic() - t
        rss2, fd2 = b.rss_mb(), fds(b.pid)
        assert b.proc is not None and b.proc.proc is not None
        os.kill(b.pid, signal.SIGKILL)
        b.proc.proc.wait()
        b.proc.proc = None
        t = time.monotonic()
        b.start(600)
        recover_s = time.monotonic() - t
        lat2, _, _ = metadata_latency(b.bootstrap, 20)
        b.stop()
        n = topics * per_topic
        print(table(["figure", "value"], [
            ("topics / partitions", f"{n_topics} / {n_parts}"),
            ("CreateTopics for all (s)", create_s),
            ("broker RSS idle / with the partitions (MB)", f"{rss0:.1f} / {rss1:.1f}"),
            ("RSS per partition (KB)", (rss1 - rss0) * 1000 / n),
            ("open fds idle / with the partitions / after restart", f"{fd0} / {fd1} / {fd2}"),
            ("Metadata, all topics: p50 / p99 ms",
             f"{percentile(lat, 50):.1f} / {percentile(lat, 99):.1f}"),
            ("start-up after a clean stop (s)", start_s),
            ("RSS after start-up (MB)", rss2),
            ("recovery start-up after SIGKILL (s)", recover_s),
            ("Metadata after recovery p50 ms", percentile(lat2, 50)),
        ]), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def metadata_nodes(topics: int, per_topic: int, nodes: int, samples: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="kafkalite-scale-nodes-"))
    try:
        b = Kafkalite({"auto.create.topics.enable": "false"}, data_dir=root,
                      extra_args=["--nodes", str(nodes)]).start(600)
        assert b.proc is not None
        create_s = create_topics(b.bootstrap, topics, per_topic)
        time.sleep(1)
        rows: list[tuple[object, ...]] = []
        for node, address in enumerate(b.proc.nodes or [b.bootstrap], start=1):
            lat, n_topics, n_parts = metadata_latency(address, samples + 1)
            rest = lat[1:]
            rows.append((node, f"{n_topics} / {n_parts}", lat[0], percentile(rest, 50),
                         percentile(rest, 99)))
        b.stop()
        print(f"CreateTopics for all: {create_s:.1f} s")
        print(table(["node", "topics / partitions", "first Metadata, every topic (ms)",
                     "then p50 (ms)", "p99 (ms)"], rows), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- start-up -------------------------------------------------------------------------------


def _bare_python() -> float:
    """``python -c pass``: the floor any Python process starts from."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def startup_once(name: str) -> tuple[float, float, float, float]:
    """Launch to an open port (kafkalite: and its --ready-file written), launch to the
    first ApiVersions answer, the RSS after 2 s idle, and the CPU time the process used
    until it listened (less moved by the machine's load than the wall-clock time)."""
    port = free_port()
    tmp = Path(tempfile.mkdtemp(prefix="kafkalite-startup-"))
    ready = tmp / "ready.json"
    kafkalite = name.startswith("kafkalite")
    if kafkalite:
        nodes = int(name.removeprefix("kafkalite").removeprefix("-nodes") or "1")
        args = [sys.executable, "-m", "kafkalite", "serve", "--data-dir", str(tmp / "data"),
                "--listen", f"127.0.0.1:{port}", "--log-level", "warning",
                "--ready-file", str(ready), *(["--nodes", str(nodes)] if nodes > 1 else [])]
        # Nodes listen in order: the last one's port open means every one is.
        port += nodes - 1
    else:
        from benchmarks.support.common import tansu_binary

        url = f"tcp://127.0.0.1:{port}"
        args = [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url",
                url, "--storage-engine", "memory://tansu/"]
    # As installed: with byte-code caches (a pip install compiles them; the first, warm-up
    # launch writes them here even where PYTHONDONTWRITEBYTECODE is set).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        wait_port(port, proc)
        if kafkalite:
            deadline = time.monotonic() + 60
            while not (ready.exists() and ready.stat().st_size):
                if time.monotonic() > deadline:
                    raise TimeoutError("no ready file")
                time.sleep(0.001)
        took = time.perf_counter() - t0
        cpu_t = psutil.Process(proc.pid).cpu_times()
        cpu = cpu_t.user + cpu_t.system
        conn = RawConnection(f"127.0.0.1:{port}")  # its first request is ApiVersions
        answered = time.perf_counter() - t0
        conn.close()
        time.sleep(2)
        rss = psutil.Process(proc.pid).memory_info().rss / 1e6
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return took, answered, rss, cpu


def fixture_once() -> float:
    """The in-process fixture (``BrokerThread``, what ``kafkalite_broker`` starts): from
    ``start()`` to a listening broker, imports already done as in a test session."""
    from kafkalite.broker.testing.fixtures import BrokerThread

    tmp = Path(tempfile.mkdtemp(prefix="kafkalite-fixture-"))
    try:
        t0 = time.perf_counter()
        broker = BrokerThread(tmp / "data").start()
        took = time.perf_counter() - t0
        broker.stop()
        return took
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def startup(runs: int, brokers: list[str]) -> None:
    _bare_python()
    bare = statistics.median(_bare_python() for _ in range(runs)) * 1000
    rows: list[tuple[str, float, float, object, object, object]] = [
        ("python -c pass", bare, 1.0, "", "", "")]
    for name in brokers:
        startup_once(name)  # warm-up: byte-code caches, page cache
    # The brokers take turns, so a change in the machine's load reaches each alike.
    runs_of: dict[str, list[tuple[float, float, float, float]]] = {
        name: [] for name in brokers}
    for _ in range(runs):
        for name in brokers:
            runs_of[name].append(startup_once(name))
    for name, got in runs_of.items():
        median = statistics.median(t for t, _, _, _ in got) * 1000
        rows.append((f"{name}: launch to listening", median, median / bare,
                     statistics.median(a for _, a, _, _ in got) * 1000,
                     statistics.median(r for _, _, r, _ in got),
                     statistics.median(c for _, _, _, c in got) * 1000))
    if "kafkalite" in brokers:
        fixture_once()
        inproc = statistics.median(fixture_once() for _ in range(runs)) * 1000
        rows.append(("kafkalite: in-process fixture ready", inproc, inproc / bare, "", "", ""))
    print(table(["start-up", "median ms", "x python -c pass", "first answer, median ms",
                 "idle RSS MB", "CPU until listening, median ms"], rows), flush=True)


# --- main -------------------------------------------------------------------------------------


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("soak")
    s.add_argument("--members", type=int, default=1000)
    s.add_argument("--groups", type=int, default=100)
    s.add_argument("--seconds", type=float, default=60)
    s.add_argument("--ten-minutes", action="store_true", help="--seconds 600")
    s.add_argument("--interval", type=float, default=3.0, help="heartbeat interval, s")
    s.add_argument("--session-ms", type=int, default=10000)
    c = sub.add_parser("cold")
    c.add_argument("--members", type=int, default=1000)
    pt = sub.add_parser("partitions")
    pt.add_argument("--topics", type=int, default=1000)
    pt.add_argument("--per-topic", type=int, default=10)
    mn = sub.add_parser("metadata-nodes")
    mn.add_argument("--topics", type=int, default=500)
    mn.add_argument("--per-topic", type=int, default=10)
    mn.add_argument("--nodes", type=int, default=3)
    mn.add_argument("--samples", type=int, default=20)
    st = sub.add_parser("startup")
    st.add_argument("--runs", type=int, default=5)
    st.add_argument("--brokers", default="kafkalite,tansu",
                    help="of kafkalite, kafkalite-nodesN (serve --nodes N), tansu")
    r = sub.add_parser("reload")
    r.add_argument("--records", type=int, default=1_000_000)
    sz = sub.add_parser("sizes")
    sz.add_argument("--sizes", default="1000,5000,10000,50000")
    sz.add_argument("--per-topic", type=int, default=10)
    sz.add_argument("--brokers", default="kafkalite,kafka")
    sz.add_argument("--samples", type=int, default=8)
    sz.add_argument("--out", default="scale-sizes")
    sz.add_argument("--nodes", type=int, default=1,
                    help="brokers per cluster (kafkalite serve --nodes N; Kafka N processes)")
    for dim in ("connections", "groups"):
        d = sub.add_parser(dim)
        d.add_argument("--sizes", default="1000,10000")
        d.add_argument("--brokers", default="kafkalite,kafka")
        d.add_argument("--out", default="scale-sizes")
    args = p.parse_args()

    if args.cmd == "soak":
        seconds = 600 if args.ten_minutes else args.seconds
        header(f"soak: {args.members} members in {args.groups} groups for {seconds:.0f} s")
        with Kafkalite() as b:
            asyncio.run(soak(b.bootstrap, b.pid, args.members, args.groups, seconds,
                             args.interval, args.session_ms))
    elif args.cmd == "cold":
        header(f"cold start: one group of {args.members} members")
        root = Path(tempfile.mkdtemp(prefix="kafkalite-cold-"))
        try:
            b = Kafkalite(data_dir=root).start()
            took = asyncio.run(cold(b.bootstrap, args.members))
            b.stop()
            sizes = group_value_sizes(root / "data", "cold-group")
            print(table(["figure", "value"], [
                ("members", args.members),
                ("JoinGroup sent to every SyncGroup answered (s)", took),
                ("GroupMetadataValue records / largest (bytes)",
                 f"{len(sizes)} / {max(sizes, default=0):,}"),
            ]), flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    elif args.cmd == "partitions":
        header(f"scale: {args.topics} topics x {args.per_topic} partitions")
        partitions(args.topics, args.per_topic)
    elif args.cmd == "metadata-nodes":
        header(f"Metadata on --nodes {args.nodes}: {args.topics} topics x {args.per_topic}")
        metadata_nodes(args.topics, args.per_topic, args.nodes, args.samples)
    elif args.cmd == "startup":
        header("start-up to an open port and idle RSS")
        startup(args.runs, [b for b in args.brokers.split(",") if b])
    elif args.cmd == "sizes":
        from benchmarks.support.scale_sizes import run

        header(f"partitions at {args.sizes} ({args.per_topic} per topic, {args.nodes} "
               f"node(s)): {args.brokers}")
        run([int(x) for x in args.sizes.split(",")], args.per_topic,
            [b for b in args.brokers.split(",") if b], args.samples, Path(args.out),
            args.nodes)
    elif args.cmd in ("connections", "groups"):
        from benchmarks.support.scale_dims import run as run_dim

        header(f"{args.cmd} at {args.sizes}: {args.brokers}")
        run_dim(args.cmd, [int(x) for x in args.sizes.split(",")],
                [b for b in args.brokers.split(",") if b], Path(args.out))
    elif args.cmd == "reload":
        from benchmarks.offsets import reload

        header(f"__consumer_offsets reload, {args.records:,} commit records")
        print(table(["__consumer_offsets reload", "value", "note"],
                    reload(args.records, kafkalite_defaults())), flush=True)


if __name__ == "__main__":
    main()
