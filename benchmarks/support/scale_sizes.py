"""Partitions at growing sizes, kafkalite and Apache Kafka 4.4 in one run.

```
python -m benchmarks.scale sizes [--sizes 1000,5000,10000,50000] [--per-topic 10]
                                 [--brokers kafkalite,kafka] [--samples 8] [--out DIR]
                                 [--nodes N]
```

Each broker (one node, data on disk, Kafka with its own defaults and JVM options) grows
to each size in turn: topics of PER_TOPIC partitions are created with CreateTopics, 50
topics per request, until a Metadata answer shows every partition with a leader ("create
until visible", from empty to that size). Then, median of SAMPLES: Metadata for every
topic and for one topic (confluent-kafka's ``AdminClient.list_topics``: librdkafka
decodes it and builds a Python object per partition, which at ten thousand partitions
costs more than the broker's answer), Metadata v12 for every topic from the request sent
to the answer's last byte, not decoded (the broker's part), and DescribeTopicPartitions
of every topic (raw requests, following the cursor; both brokers answer the same client).
Then the broker's RSS and open file descriptors, a clean stop and the restart: launch to
the first Metadata answer naming the broker (Kafka's KRaft registration done; kafkalite's
logs not yet opened) and to its port accepting (kafkalite: its ready file), the first
Metadata for every topic after it, and RSS and descriptors at once (kafkalite's logs are
opened by their first use and a background pass that begins a second later).

The brokers take turns at each size. The descriptor limit of this process, which the
brokers inherit, is raised to its hard limit first (``ulimit -n``, as Kafka's operations
guide asks; both brokers keep a descriptor per partition). A broker that fails at a size
(it exits, refuses a CreateTopics or does not answer within the bounded waits) is recorded
as failed there, with the partitions it had acknowledged, its open descriptors and the
reason, and is not grown further; the other goes on. Writes ``scale-sizes.json``, a table
per figure and ``scale-sizes.png`` (cost against size, both brokers on each plot) to DIR.

With ``--nodes N`` (N > 1) each broker is a cluster of N brokers and the partitions, of
one replica each, are spread over them by the controller: kafkalite is ``serve --nodes N``
(one process); Kafka is a KRaft controller and N broker processes
(``benchmarks/support/kafka_cluster.py``), each with its own descriptor limit. The requests go to
the first broker; RSS and open files are summed over the broker processes (Kafka's
controller is printed apart); a restart stops every process and starts them again at once,
and ends when every broker listens, then when a Metadata answer names all N. Writes
``scale-sizes-nodesN.json`` and ``.png``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psutil

from benchmarks.support.common import Kafka, Kafkalite, table, wait_port
from benchmarks.support.scale_cluster import ClusterSide
from kafkalite.client.kafka import RawConnection, request, request_class

TOPICS_PER_REQUEST = 50
#: librdkafka quiet about the connections a restart refuses.
ADMIN = {"log_level": 0}
#: Every wait is bounded, generously: Kafka took about a minute to create 10,000
#: partitions and another to restart with them, and grows faster than linearly.
VISIBLE_TIMEOUT_S = 1800.0
START_TIMEOUT_S = 1200.0
STOP_TIMEOUT_S = 600.0
#: A request that creates, lists or describes tens of thousands of partitions.
SOCKET_TIMEOUT_S = 300.0
#: Partitions acknowledged but no more of them visible for this long: given up.
STALLED_S = 180.0


class BrokerFailed(Exception):
    """A broker that exited or stopped answering at a size."""


def raise_fd_limit() -> int:
    """The soft descriptor limit up to the hard one; the brokers started after inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def raw(bootstrap: str) -> RawConnection:
    conn = RawConnection(bootstrap)
    conn.sock.settimeout(SOCKET_TIMEOUT_S)
    return conn


def topic_name(i: int) -> str:
    return f"scale-{i:05d}"


def create_range(bootstrap: str, first: int, last: int, per_topic: int,
                 acked: list[int] | None = None) -> None:
    """Topics FIRST..LAST; ``acked[0]`` counts the topics answered without error."""
    conn = raw(bootstrap)
    try:
        v = conn.version(19, 7)
        topic_cls = request_class(19, v, "CreatableTopic")
        for start in range(first, last, TOPICS_PER_REQUEST):
            req = request(19, v, topics=tuple(
                topic_cls(name=topic_name(i), num_partitions=per_topic, replication_factor=1,
                          assignments=(), configs=())
                for i in range(start, min(start + TOPICS_PER_REQUEST, last))),
                timeout=timedelta(seconds=120), validate_only=False)
            resp = conn.call(req)
            bad = [t for t in resp.topics if int(t.error_code) not in (0, 36)]
            if acked is not None:
                acked[0] += len(resp.topics) - len(bad)
            if bad:
                raise RuntimeError(f"CreateTopics: {bad[0]}")
            asked = min(start + TOPICS_PER_REQUEST, last) - start
            if len(resp.topics) != asked:  # a whole-request error answers no topic
                raise RuntimeError(f"CreateTopics answered {len(resp.topics)} of {asked} "
                                   "topics")
    finally:
        conn.close()


def visible_partitions(admin: Any) -> int:
    md = admin.list_topics(timeout=SOCKET_TIMEOUT_S)
    return sum(1 for name, t in md.topics.items() if name.startswith("scale-")
               for p in t.partitions.values() if p.leader >= 0 and p.error is None)


def create_until_visible(bootstrap: str, admin: Any, have: int, want: int,
                         per_topic: int, acked: list[int]) -> float:
    t0 = time.monotonic()
    create_range(bootstrap, have // per_topic, want // per_topic, per_topic, acked)
    deadline = t0 + VISIBLE_TIMEOUT_S
    seen, moved = -1, time.monotonic()
    while (visible := visible_partitions(admin)) < want:
        now = time.monotonic()
        if visible != seen:
            seen, moved = visible, now
        if now > deadline or now - moved > STALLED_S:
            raise TimeoutError(f"{visible} of {want} partitions visible")
        time.sleep(0.05)
    return time.monotonic() - t0


def median_ms(fn: Any, samples: int) -> float:
    fn()  # warm: the first answer after a change may build what later ones reuse
    out = []
    for _ in range(samples):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)


def describe_all(bootstrap: str) -> int:
    """DescribeTopicPartitions of every topic, page by page; the partitions described."""
    conn = raw(bootstrap)
    try:
        cursor_cls = request_class(75, 0, "Cursor")
        cursor = None
        n = 0
        for _ in range(10_000):
            resp = conn.call(request(75, 0, topics=(), response_partition_limit=2000,
                                     cursor=cursor))
            n += sum(len(t.partitions) for t in resp.topics)
            nxt = resp.next_cursor
            if nxt is None:
                return n
            cursor = cursor_cls(topic_name=nxt.topic_name, partition_index=nxt.partition_index)
        raise RuntimeError("DescribeTopicPartitions did not finish")
    finally:
        conn.close()


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_mb(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / 1e6


def first_metadata(bootstrap: str, timeout: float = START_TIMEOUT_S, brokers: int = 1) -> None:
    """Until a Metadata answer names BROKERS brokers (what KafkaReference waits for)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = RawConnection(bootstrap, "scale-probe")
            conn.sock.settimeout(SOCKET_TIMEOUT_S)
            try:
                resp = conn.call(request(3, 12, topics=(), allow_auto_topic_creation=False,
                                         include_topic_authorized_operations=False))
                if len(resp.brokers) >= brokers:
                    return
            finally:
                conn.close()
        except (OSError, RuntimeError, ConnectionError):
            pass
        time.sleep(0.01)
    raise TimeoutError("no Metadata answer")


class Side:
    """One broker grown through the sizes."""

    def __init__(self, name: str, nodes: int = 1) -> None:
        self.name = name
        self.nodes = nodes
        self.root = Path(tempfile.mkdtemp(prefix=f"scale-{name}-"))
        self.kl: Kafkalite | None = None
        self.kafka: Kafka | None = None
        #: Kafka as a KRaft controller and NODES broker processes.
        self.cluster = ClusterSide(nodes) if name == "kafka" and nodes > 1 else None
        self.have = 0
        #: The creation time of every step so far (each step creates from the last size).
        self.create_s = 0.0
        #: Topics acknowledged by CreateTopics so far.
        self.acked = [0]
        #: Why the broker was given up, at the size it failed at.
        self.failed: str | None = None
        #: How much of each broker log has been read for descriptor errors.
        self.log_read: dict[Path, int] = {}
        #: The first log line about a descriptor error, for the report.
        self.first_emfile: str | None = None

    @property
    def pid(self) -> int:
        """The one broker process (one node)."""
        return self.pids[0]

    @property
    def pids(self) -> list[int]:
        """The broker processes (not Kafka's separate controller)."""
        return [p.pid for p in self.procs]

    @property
    def bootstrap(self) -> str:
        """The first broker: any of them answers for every topic."""
        if self.cluster is not None:
            return self.cluster.bootstrap
        b = self.kl if self.kl is not None else self.kafka
        assert b is not None
        return b.bootstrap

    def start(self) -> tuple[float, float]:
        """Launch to listening (the port accepting; kafkalite: its ready file, written
        once it listens) and to the first Metadata answer naming the broker (s)."""
        if self.cluster is not None:
            return self.cluster.start(START_TIMEOUT_S)
        if self.name == "kafkalite":
            if self.kl is None:
                nodes = ["--nodes", str(self.nodes)] if self.nodes > 1 else []
                self.kl = Kafkalite({"auto.create.topics.enable": "false"}, data_dir=self.root,
                                    extra_args=nodes)
            t0 = time.monotonic()
            self.kl.start(START_TIMEOUT_S)
            listening = time.monotonic() - t0
        else:
            from tests.kafka_reference import kafka_jars

            if self.kafka is None:
                self.kafka = Kafka()
                self.kafka.format()
            ref = self.kafka.ref
            with ref.log_path.open("ab") as log:
                t0 = time.monotonic()
                ref.proc = subprocess.Popen(
                    ref._java(kafka_jars(), "kafka.Kafka", str(ref.workdir / "server.properties")),
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            self.kafka.port = ref.port
            wait_port(ref.port, ref.proc, START_TIMEOUT_S)
            listening = time.monotonic() - t0
        first_metadata(self.bootstrap, brokers=self.nodes)
        return listening, time.monotonic() - t0

    @property
    def procs(self) -> list[subprocess.Popen[bytes]]:
        """The broker processes started (not Kafka's separate controller)."""
        if self.cluster is not None:
            return self.cluster.procs
        if self.kl is not None:
            proc = self.kl.proc.proc if self.kl.proc is not None else None
        else:
            proc = self.kafka.ref.proc if self.kafka is not None else None
        return [proc] if proc is not None else []

    def log_paths(self) -> list[Path]:
        if self.cluster is not None:
            return self.cluster.log_paths
        if self.kl is not None:
            return [self.root / "data.log"]
        assert self.kafka is not None
        return [Path(self.kafka.ref.log_path)]

    def stop(self) -> None:
        """A clean stop (SIGTERM), killed only past STOP_TIMEOUT_S: a broker with tens of
        thousands of partitions takes longer than the tests' 20-30 s to close them."""
        if self.cluster is not None:
            self.cluster.stop(STOP_TIMEOUT_S)
            return
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    print(f"   {self.name}: not stopped in {STOP_TIMEOUT_S:.0f} s, killed",
                          flush=True)
                    proc.kill()
                    proc.wait(30)
        if self.kl is not None:
            self.kl.stop()
        elif self.kafka is not None:
            self.kafka.ref.stop()

    def descriptor_errors(self) -> int:
        """'Too many open files' in the broker's log since the last call: a broker that
        ran out of descriptors may still answer Metadata, with logs it could not open."""
        count = 0
        for path in self.log_paths():
            try:
                with path.open("rb") as f:
                    f.seek(self.log_read.get(path, 0))
                    new = f.read()
            except OSError:
                continue
            self.log_read[path] = self.log_read.get(path, 0) + len(new)
            found = re.findall(rb"[^\n]*Too many open files[^\n]*", new)
            if found and self.first_emfile is None:
                self.first_emfile = found[0][:300].decode(errors="replace")
            count += len(found)
        return count

    def failure(self, size: int, per_topic: int, err: BaseException) -> str:
        """What the broker had reached when it failed; the broker is then stopped."""
        procs = self.procs
        alive = bool(procs) and all(p.poll() is None for p in procs)
        emfile = self.descriptor_errors()
        parts = [f"{type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}",
                 f"{self.acked[0] * per_topic} of {size} partitions acknowledged",
                 "still running" if alive else
                 "exited with " + ", ".join(str(p.returncode) for p in procs
                                            if p.poll() is not None)]
        if alive:
            parts.append(f"{sum(fds(p.pid) for p in procs)} descriptors open")
        if emfile:
            parts.append(f"{emfile} more 'Too many open files' in its log")
        if self.first_emfile is not None:
            parts.append(f"first: {self.first_emfile}")
        self.failed = "; ".join(parts)
        with contextlib.suppress(Exception):
            self.stop()
        return self.failed

    def cleanup(self) -> None:
        self.stop()
        if self.cluster is not None:
            self.cluster.cleanup()
        if self.kafka is not None:
            self.kafka.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def measure(side: Side, size: int, per_topic: int, samples: int) -> dict[str, float]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(ADMIN | {"bootstrap.servers": side.bootstrap})
    row: dict[str, float] = {}
    side.create_s += create_until_visible(side.bootstrap, admin, side.have, size, per_topic,
                                          side.acked)
    row["create until visible, from empty (s)"] = side.create_s
    side.have = size
    one = topic_name(size // per_topic // 2)
    row["Metadata, every topic (ms)"] = median_ms(
        lambda: admin.list_topics(timeout=SOCKET_TIMEOUT_S), samples)
    row["Metadata, one topic (ms)"] = median_ms(
        lambda: admin.list_topics(one, timeout=SOCKET_TIMEOUT_S), samples)
    conn = raw(side.bootstrap)
    try:
        frame = conn.frame(request(3, 12, topics=None, allow_auto_topic_creation=False,
                                   include_topic_authorized_operations=False))

        def undecoded() -> None:
            conn.sock.sendall(frame)  # the same correlation id each time: not checked
            conn.recv_frame()

        row["Metadata, every topic, to its last byte (ms)"] = median_ms(undecoded, samples)
    finally:
        conn.close()
    described = describe_all(side.bootstrap)
    assert described >= size, (described, size)
    row["DescribeTopicPartitions, every topic (ms)"] = median_ms(
        lambda: describe_all(side.bootstrap), max(samples // 2, 3))
    row["RSS (MB)"] = sum(rss_mb(pid) for pid in side.pids)
    row["open files"] = sum(fds(pid) for pid in side.pids)
    if side.cluster is not None:
        print(f"   {side.name}: controller RSS {side.cluster.controller_rss_mb():.0f} MB",
              flush=True)
    if errors := side.descriptor_errors():
        raise BrokerFailed(f"{errors} 'Too many open files' in its log "
                           f"({row['open files']:.0f} descriptors open)")
    side.stop()
    listening, answering = side.start()
    row["restart to listening (s)"] = listening
    row["restart to first Metadata naming the broker (s)"] = answering
    admin = AdminClient(ADMIN | {"bootstrap.servers": side.bootstrap})
    t = time.perf_counter()
    admin.list_topics(timeout=SOCKET_TIMEOUT_S)
    row["first Metadata, every topic, after restart (ms)"] = (time.perf_counter() - t) * 1000
    # Taken at once: kafkalite's background pass has not opened the logs yet.
    row["RSS right after restart (MB)"] = sum(rss_mb(pid) for pid in side.pids)
    row["open files right after restart"] = sum(fds(pid) for pid in side.pids)
    if errors := side.descriptor_errors():
        raise BrokerFailed(f"{errors} 'Too many open files' in its log after the restart")
    return row


def plot(results: dict[str, dict[int, dict[str, float]]], out: Path,
         what: str = "partitions", mark: tuple[float, str] | None = None,
         title: str | None = None) -> None:
    """A panel per figure; ``mark``: a vertical line (x, label) on each, such as the
    descriptor limit past which a broker failed; ``title`` above them all."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = list(next(iter(next(iter(results.values())).values())))
    cols = 3
    rows = (len(figures) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.4 * rows))
    for ax, figure in zip(axes.flat, figures, strict=False):
        for broker, by_size in results.items():
            sizes = sorted(by_size)
            ax.plot(sizes, [by_size[s][figure] for s in sizes], marker="o", label=broker)
        if mark is not None:
            ax.axvline(mark[0], color="grey", linestyle="--", linewidth=1, label=mark[1])
        ax.set_title(figure, fontsize=9)
        ax.set_xlabel(what)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(figures):]:
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def run(sizes: list[int], per_topic: int, brokers: list[str], samples: int,
        out: Path, nodes: int = 1) -> None:
    out.mkdir(parents=True, exist_ok=True)
    name = "scale-sizes" if nodes == 1 else f"scale-sizes-nodes{nodes}"
    print(f"   descriptor limit raised to {raise_fd_limit()}", flush=True)
    # A SIGTERM to this process still stops the brokers (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit(143)))
    sides = [Side(b, nodes) for b in brokers]
    results: dict[str, dict[int, dict[str, float]]] = {b: {} for b in brokers}
    failures: dict[str, dict[int, str]] = {b: {} for b in brokers}

    def save() -> None:
        (out / f"{name}.json").write_text(json.dumps(
            {"results": results, "failures": failures}, indent=1))

    try:
        for side in sides:
            side.start()
        for size in sizes:
            for side in sides:  # in turns: a change in the machine's load reaches both
                if side.failed is not None:
                    continue
                print(f"   {side.name}: {size} partitions, load "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
                t0 = time.monotonic()
                try:
                    results[side.name][size] = measure(side, size, per_topic, samples)
                except Exception as e:  # a broker failing at a size is a result
                    failures[side.name][size] = side.failure(size, per_topic, e)
                    print(f"   {side.name} failed at {size} after "
                          f"{time.monotonic() - t0:.0f} s: {side.failed}", flush=True)
                save()
    finally:
        for side in sides:
            side.cleanup()
    measured = [r for r in results.values() if r]
    if not measured:
        return
    figures = list(next(iter(measured[0].values())))

    def cell(broker: str, size: int, figure: str) -> float | str:
        got = results[broker].get(size)
        return got[figure] if got is not None else "failed" if size in failures[broker] else ""

    for figure in figures:
        rows = []
        for size in sizes:
            cells = [cell(b, size, figure) for b in brokers]
            ratio: list[float | str] = []
            if len(brokers) == 2:
                a, b = cells
                ratio = [a / b if isinstance(a, float) and isinstance(b, float) and b
                         else ""]
            rows.append((size, *cells, *ratio))
        ratio_head = [f"{brokers[0]} / {brokers[1]}"] if len(brokers) == 2 else []
        print(f"\n{figure}\n" + table(["partitions", *brokers, *ratio_head], rows),
              flush=True)
    for broker, by_size in failures.items():
        for size, why in by_size.items():
            print(f"\n{broker} failed at {size} partitions: {why}", flush=True)
    failed = sorted({size for by_size in failures.values() for size in by_size})
    mark = title = None
    if failed:
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        who = " and ".join(b for b in brokers if failures[b])
        mark = (float(limit * nodes), f"descriptor limit ({limit:,})"
                + (f" x {nodes} processes" if nodes > 1 else ""))
        title = (f"{who} failed at {', '.join(f'{x:,}' for x in failed)} partitions "
                 "(not plotted; see the report)")
    plot({b: r for b, r in results.items() if r}, out / f"{name}.png", mark=mark,
         title=title)
    print(f"\nwrote {out / f'{name}.json'} and {out / f'{name}.png'}", flush=True)
