"""Offset commits and fetches per second as a real consumer group member sees them.

For each broker (kafkalite, Tansu): one confluent-kafka consumer joins a group on a
one-partition topic (subscribe; a simple ``assign`` consumer if no assignment comes in
time, said in the table), commits one offset at a time synchronously (commits/s, as a
consumer committing after every message would), then asks for its committed offset one
request at a time (OffsetFetch/s). ``benchmarks.offsets`` measures the same APIs on a raw
connection (one at a time and pipelined) and the ``__consumer_offsets`` reload.

    .venv/bin/python -m benchmarks.offsets_client [--commits 20000] [--time-limit 10]
"""

from __future__ import annotations

import argparse
import time
import uuid
from dataclasses import dataclass
from typing import Any

from benchmarks.support.common import (
    broker_args,
    broker_names,
    collector_paused,
    create_topic,
    guarded,
    header,
    parse_sets,
    percentile,
    ratio,
    running,
    table,
)


@dataclass
class Rates:
    mode: str = ""
    commits: int = 0
    commit_s: float = float("nan")
    commit_lat: list[float] | None = None
    fetches: int = 0
    fetch_s: float = float("nan")

    @property
    def commits_per_s(self) -> float:
        return self.commits / self.commit_s if self.commit_s > 0 else float("nan")

    @property
    def fetches_per_s(self) -> float:
        return self.fetches / self.fetch_s if self.fetch_s > 0 else float("nan")


def consumer(bootstrap: str, group: str) -> Any:
    from confluent_kafka import Consumer

    return Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "latest",
        # aiokafka's default; librdkafka's 45 s would make Tansu's join wait 22 s.
        "session.timeout.ms": 10_000,
        "log_level": 3,
    })


def rates(bootstrap: str, count: int, limit: float) -> Rates:
    from confluent_kafka import TopicPartition

    topic = f"bench-off-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, 1)
    group = f"bench-off-{uuid.uuid4().hex[:6]}"
    c = consumer(bootstrap, group)
    out = Rates()
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 30
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.1)
        if c.assignment():
            out.mode = "group member"
        else:
            # No assignment in time: commit as a simple consumer (generation -1).
            c.unsubscribe()
            c.assign([TopicPartition(topic, 0)])
            out.mode = "simple (assign)"
        # One warm-up commit and fetch: the coordinator lookup is not what is measured.
        c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        lat: list[float] = []
        t0 = time.perf_counter()
        deadline = t0 + limit
        i = 0
        while i < count and time.perf_counter() < deadline:
            a = time.perf_counter()
            c.commit(offsets=[TopicPartition(topic, 0, i + 2)], asynchronous=False)
            lat.append((time.perf_counter() - a) * 1000)
            i += 1
        out.commits, out.commit_s, out.commit_lat = i, time.perf_counter() - t0, lat
        last = i + 1
        got = c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
        if got != last:
            raise RuntimeError(f"committed offset {got}, expected {last}")
        t0 = time.perf_counter()
        deadline = t0 + limit
        j = 0
        while j < count and time.perf_counter() < deadline:
            c.committed([TopicPartition(topic, 0)], timeout=10)
            j += 1
        out.fetches, out.fetch_s = j, time.perf_counter() - t0
        return out
    finally:
        c.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    broker_args(ap)
    ap.add_argument("--commits", type=int, default=20_000, help="commits (and fetches) to time")
    ap.add_argument("--time-limit", type=float, default=10.0,
                    help="seconds allowed per measurement")
    args = ap.parse_args(argv)
    overrides = parse_sets(args.set)
    header("offsets from a consumer (confluent-kafka, synchronous commits)")
    results: dict[str, Rates | None] = {}
    for name in broker_names(args):
        with running(name, overrides) as broker, collector_paused():
            results[name] = guarded(f"{name} rates",
                                    lambda b=broker: rates(b.bootstrap, args.commits,
                                                           args.time_limit))
    rows: list[list[Any]] = []
    for name, r in results.items():
        if r is None:
            rows.append([name, "error", None, None, None, None, None])
            continue
        lat = r.commit_lat or []
        rows.append([name, r.mode, r.commits, r.commits_per_s, percentile(lat, 50),
                     percentile(lat, 99), r.fetches_per_s])
    print()
    print(table(["broker", "committer", "commits", "commits/s", "commit p50 ms",
                 "commit p99 ms", "OffsetFetch/s"], rows))
    k, t = results.get("kafkalite"), results.get("tansu")
    if k is not None and t is not None:
        print()
        print(table(["kafkalite / tansu", "ratio"], [
            ["commits/s", ratio(k.commits_per_s, t.commits_per_s)],
            ["OffsetFetch/s", ratio(k.fetches_per_s, t.fetches_per_s)],
        ]))


if __name__ == "__main__":
    main()
