"""Partitions at growing sizes, kafkalite and Apache Kafka 4.4 in one run.

```
python -m benchmarks.scale sizes [--sizes 1000,5000,10000] [--per-topic 10]
                                 [--brokers kafkalite,kafka] [--samples 8] [--out DIR]
```

Each broker (one node, data on disk, Kafka with its own defaults and JVM options) grows to
each size in turn: topics of PER_TOPIC partitions are created with CreateTopics, 50 topics
per request, until a Metadata answer shows every partition with a leader ("create until
visible", from empty to that size). Then, median of SAMPLES: Metadata for every topic and
for one topic (confluent-kafka's ``AdminClient.list_topics``, librdkafka decoding, so the
client costs little), and DescribeTopicPartitions of every topic (raw requests, following
the cursor; both brokers answer the same client). Then the broker's RSS and open file
descriptors, a clean stop and the restart: launch to the first Metadata answer naming the
broker (Kafka's KRaft registration done; kafkalite's logs not yet opened) and to its
port accepting (kafkalite: its ready file), the first
Metadata for every topic after it, and RSS and descriptors at once (kafkalite's
logs are opened by their first use and a background pass that begins a second later).

The brokers take turns at each size. Writes ``scale-sizes.json``, a table per figure and
``scale-sizes.png`` (cost against size, both brokers on each plot) to DIR.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psutil

from benchmarks.common import Kafka, Kafkalite, table
from kafkalite.client.kafka import RawConnection, request, request_class

TOPICS_PER_REQUEST = 50
#: librdkafka quiet about the connections a restart refuses.
ADMIN = {"log_level": 0}
#: Every wait is bounded.
VISIBLE_TIMEOUT_S = 600.0


def topic_name(i: int) -> str:
    return f"scale-{i:05d}"


def create_range(bootstrap: str, first: int, last: int, per_topic: int) -> None:
    conn = RawConnection(bootstrap)
    try:
        v = conn.version(19, 7)
        topic_cls = request_class(19, v, "CreatableTopic")
        for start in range(first, last, TOPICS_PER_REQUEST):
            req = request(19, v, topics=tuple(
                topic_cls(name=topic_name(i), num_partitions=per_topic, replication_factor=1,
                          assignments=(), configs=())
                for i in range(start, min(start + TOPICS_PER_REQUEST, last))),
                timeout=timedelta(seconds=60), validate_only=False)
            resp = conn.call(req)
            bad = [t for t in resp.topics if int(t.error_code) not in (0, 36)]
            if bad:
                raise RuntimeError(f"CreateTopics: {bad[0]}")
    finally:
        conn.close()


def visible_partitions(admin: Any) -> int:
    md = admin.list_topics(timeout=60)
    return sum(1 for name, t in md.topics.items() if name.startswith("scale-")
               for p in t.partitions.values() if p.leader >= 0 and p.error is None)


def create_until_visible(bootstrap: str, admin: Any, have: int, want: int,
                         per_topic: int) -> float:
    t0 = time.monotonic()
    create_range(bootstrap, have // per_topic, want // per_topic, per_topic)
    deadline = t0 + VISIBLE_TIMEOUT_S
    while visible_partitions(admin) < want:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{want} partitions not visible")
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
    conn = RawConnection(bootstrap)
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


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.1):
            return
        time.sleep(0.005)
    raise TimeoutError("no port")


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_mb(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / 1e6


def first_metadata(bootstrap: str, timeout: float = 300) -> None:
    """Until a Metadata answer names a broker (what KafkaReference waits for)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = RawConnection(bootstrap, "scale-probe")
            try:
                resp = conn.call(request(3, 12, topics=(), allow_auto_topic_creation=False,
                                         include_topic_authorized_operations=False))
                if resp.brokers:
                    return
            finally:
                conn.close()
        except (OSError, RuntimeError, ConnectionError):
            pass
        time.sleep(0.01)
    raise TimeoutError("no Metadata answer")


class Side:
    """One broker grown through the sizes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.root = Path(tempfile.mkdtemp(prefix=f"scale-{name}-"))
        self.kl: Kafkalite | None = None
        self.kafka: Kafka | None = None
        self.have = 0
        #: The creation time of every step so far (each step creates from the last size).
        self.create_s = 0.0

    @property
    def pid(self) -> int:
        return self.kl.pid if self.kl is not None else self.kafka.pid  # type: ignore[union-attr]

    @property
    def bootstrap(self) -> str:
        b = self.kl if self.kl is not None else self.kafka
        assert b is not None
        return b.bootstrap

    def start(self) -> tuple[float, float]:
        """Launch to listening (the port accepting; kafkalite: its ready file, written
        once it listens) and to the first Metadata answer naming the broker (s)."""
        if self.name == "kafkalite":
            if self.kl is None:
                self.kl = Kafkalite({"auto.create.topics.enable": "false"}, data_dir=self.root)
            t0 = time.monotonic()
            self.kl.start(600)
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
            wait_port(ref.port, ref.proc)
            listening = time.monotonic() - t0
        first_metadata(self.bootstrap)
        return listening, time.monotonic() - t0

    def stop(self) -> None:
        if self.kl is not None:
            self.kl.stop()
        elif self.kafka is not None:
            self.kafka.ref.stop()

    def cleanup(self) -> None:
        self.stop()
        if self.kafka is not None:
            self.kafka.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def measure(side: Side, size: int, per_topic: int, samples: int) -> dict[str, float]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(ADMIN | {"bootstrap.servers": side.bootstrap})
    row: dict[str, float] = {}
    side.create_s += create_until_visible(side.bootstrap, admin, side.have, size, per_topic)
    row["create until visible, from empty (s)"] = side.create_s
    side.have = size
    one = topic_name(size // per_topic // 2)
    row["Metadata, every topic (ms)"] = median_ms(lambda: admin.list_topics(timeout=60),
                                                  samples)
    row["Metadata, one topic (ms)"] = median_ms(
        lambda: admin.list_topics(one, timeout=60), samples)
    described = describe_all(side.bootstrap)
    assert described >= size, (described, size)
    row["DescribeTopicPartitions, every topic (ms)"] = median_ms(
        lambda: describe_all(side.bootstrap), max(samples // 2, 3))
    row["RSS (MB)"] = rss_mb(side.pid)
    row["open files"] = fds(side.pid)
    side.stop()
    listening, answering = side.start()
    row["restart to listening (s)"] = listening
    row["restart to first Metadata naming the broker (s)"] = answering
    admin = AdminClient(ADMIN | {"bootstrap.servers": side.bootstrap})
    t = time.perf_counter()
    admin.list_topics(timeout=120)
    row["first Metadata, every topic, after restart (ms)"] = (time.perf_counter() - t) * 1000
    # Taken at once: kafkalite's background pass has not opened the logs yet.
    row["RSS right after restart (MB)"] = rss_mb(side.pid)
    row["open files right after restart"] = fds(side.pid)
    return row


def plot(results: dict[str, dict[int, dict[str, float]]], out: Path,
         what: str = "partitions") -> None:
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
        ax.set_title(figure, fontsize=9)
        ax.set_xlabel(what)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(figures):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def run(sizes: list[int], per_topic: int, brokers: list[str], samples: int,
        out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    sides = [Side(b) for b in brokers]
    results: dict[str, dict[int, dict[str, float]]] = {b: {} for b in brokers}
    try:
        for side in sides:
            side.start()
        for size in sizes:
            for side in sides:  # in turns: a change in the machine's load reaches both
                print(f"   {side.name}: {size} partitions, load "
                      f"{os.getloadavg()[0]:.1f}", flush=True)
                results[side.name][size] = measure(side, size, per_topic, samples)
                (out / "scale-sizes.json").write_text(json.dumps(results, indent=1))
    finally:
        for side in sides:
            side.cleanup()
    figures = list(next(iter(results[brokers[0]].values())))
    for figure in figures:
        rows = [(size, *(results[b][size][figure] for b in brokers),
                 *([results[brokers[0]][size][figure] / results[brokers[1]][size][figure]
                    if results[brokers[1]][size][figure] else float("nan")]
                   if len(brokers) == 2 else []))
                for size in sizes]
        ratio = [f"{brokers[0]} / {brokers[1]}"] if len(brokers) == 2 else []
        print(f"\n{figure}\n" + table(["partitions", *brokers, *ratio], rows), flush=True)
    plot(results, out / "scale-sizes.png")
    print(f"\nwrote {out / 'scale-sizes.json'} and {out / 'scale-sizes.png'}", flush=True)
