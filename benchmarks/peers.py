"""kafkalite beside Apache Kafka and Tansu, in one run and one table.

    .venv/bin/python -m benchmarks.peers [--peer kafka,tansu] [--startup-runs 3]
        [--startup-only] [--count 1000000] [--consumers 50] [--heartbeats 100000]
        [--seconds 5] [--latency-samples 1000] [--time-limit 20]

``--peer ''`` measures kafkalite alone; ``--startup-only`` measures step 1 only.

For each broker, one after the other (each alone on the machine):

1. Start-up: ``--startup-runs`` fresh launches, each timed from the process start to the
   first acknowledged produce (a topic created, one record with acks=all acknowledged); then
   3 s idle and the broker's RSS. Kafka's log directory is formatted before the clock starts
   (kafka-storage format: once per installation).
2. On one more instance: confluent-kafka produce then consume of ``--count`` 100-byte
   records on one partition (msgs/s, broker CPU s per GB); end-to-end latency with one
   record in flight; ``--consumers`` aiokafka consumers joining one group until the
   assignment is complete (``benchmarks.groups``); pipelined Heartbeats of a joined member
   on one connection; OffsetCommit v8 of one partition one at a time and 64 in flight
   (``benchmarks.offsets``).

Kafka runs with its defaults and bin/kafka-server-start.sh's JVM options
(``benchmarks.support.common.KAFKA_BENCH_SETTINGS``, ``KAFKA_JVM``); kafkalite with its defaults;
Tansu with memory storage. Every loop is bounded by a count and by ``--time-limit``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from benchmarks.groups import GroupRun, group_run, heartbeats
from benchmarks.groups import Result as GroupResult
from benchmarks.offsets import TOPIC, TOPIC_PARTITIONS, _versions, commit_rates
from benchmarks.produce_consume import Phase, consume, latency, produce
from benchmarks.support.common import (
    Broker,
    Kafka,
    Kafkalite,
    collector_paused,
    create_topic,
    guarded,
    header,
    make_broker,
    peers,
    percentile,
    ratio,
    running,
    table,
)
from kafkalite.client.kafka import RawConnection

SIZE = 100
IDLE_S = 3.0


@dataclass
class Figures:
    startup_s: list[float] = field(default_factory=list)
    startup_cpu_s: list[float] = field(default_factory=list)
    idle_rss_mb: list[float] = field(default_factory=list)
    produce: Phase | None = None
    consume: Phase | None = None
    latency_ms: list[float] = field(default_factory=list)
    group: GroupRun | None = None
    hb: GroupResult | None = None
    commits: dict[str, float] = field(default_factory=dict)


def first_produce(broker: Broker) -> None:
    """Create a topic and have one record acknowledged by all in-sync replicas."""
    from confluent_kafka import Producer

    create_topic(broker.bootstrap, "first", 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "log_level": 3})
    errors: list[object] = []
    p.produce("first", b"x", on_delivery=lambda err, _m: errors.append(err))
    if p.flush(30) or errors != [None]:
        raise RuntimeError(f"first produce not acknowledged: {errors}")


def startup_once(name: str) -> tuple[float, float, float]:
    """Seconds from launch to the first acknowledged produce, the broker's CPU seconds
    until then (on a loaded machine the wall time stretches with the load; this does
    less), and the idle RSS (MB)."""
    broker = make_broker(name)
    if isinstance(broker, Kafka):
        broker.format()
    try:
        t0 = time.perf_counter()
        broker.start()
        first_produce(broker)
        took = time.perf_counter() - t0
        cpu = broker.cpu_seconds()
        time.sleep(IDLE_S)
        return took, cpu, broker.rss_mb()
    finally:
        broker.stop()
        if isinstance(broker, Kafkalite):
            broker.cleanup()


def measure(name: str, args: argparse.Namespace) -> Figures:
    f = Figures()
    # A first launch, not counted: byte-code caches, the JVM's class data, the page cache.
    guarded(f"{name} start-up warm-up", lambda: startup_once(name))
    for _ in range(args.startup_runs):
        got = guarded(f"{name} start-up", lambda: startup_once(name))
        if got is not None:
            f.startup_s.append(got[0])
            f.startup_cpu_s.append(got[1])
            f.idle_rss_mb.append(got[2])
    print(f"   {name}: start-up to first acknowledged produce {f.startup_s}", flush=True)
    if args.startup_only:
        return f
    limit = args.time_limit
    with running(name) as broker, collector_paused():
        # A fifth of the records first, not counted: the JVM compiles its hot paths.
        warm = f"peers-warm-{uuid.uuid4().hex[:8]}"
        if guarded(f"{name} create", lambda: create_topic(broker.bootstrap, warm, 1)):
            w = guarded(f"{name} warm-up", lambda: produce(
                broker, warm, SIZE, args.count // 5, limit))
            if w is not None:
                guarded(f"{name} warm-up", lambda: consume(broker, warm, SIZE, w.messages,
                                                            limit))
        topic = f"peers-{uuid.uuid4().hex[:8]}"
        if guarded(f"{name} create", lambda: create_topic(broker.bootstrap, topic, 1)):
            f.produce = guarded(f"{name} produce",
                                lambda: produce(broker, topic, SIZE, args.count, limit))
            if f.produce is not None:
                n = f.produce.messages
                f.consume = guarded(f"{name} consume",
                                    lambda: consume(broker, topic, SIZE, n, limit))
        f.latency_ms = guarded(f"{name} latency", lambda: latency(
            broker, args.latency_samples, limit)) or []
        gtopic = f"peers-g-{uuid.uuid4().hex[:6]}"
        if guarded(f"{name} create", lambda: create_topic(broker.bootstrap, gtopic,
                                                           args.consumers)):
            f.group = guarded(f"{name} group", lambda: asyncio.run(
                group_run(broker, gtopic, args.consumers, args.consumers, limit)))
            hb = GroupResult()
            guarded(f"{name} heartbeats", lambda: heartbeats(
                broker, gtopic, args.heartbeats, 2000, args.latency_samples, limit, hb))
            f.hb = hb if hb.hb_rate else None

        def commits() -> dict[str, float]:
            create_topic(broker.bootstrap, TOPIC, TOPIC_PARTITIONS)
            conn = RawConnection(broker.bootstrap)
            try:
                cv, _fv = _versions(conn, name)
                return commit_rates(broker, conn, cv, 1, args.seconds, args.commits, True)
            finally:
                conn.close()

        f.commits = guarded(f"{name} commits", commits) or {}
    return f


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def rows(results: dict[str, Figures]) -> list[list[Any]]:
    names = list(results)

    def row(label: str, get: Any, better: str) -> list[Any]:
        vals = []
        for n in names:
            try:
                vals.append(get(results[n]))
            except (AttributeError, KeyError, TypeError):
                vals.append(None)
        k = vals[names.index("kafkalite")] if "kafkalite" in names else None
        kafka = vals[names.index("kafka")] if "kafka" in names else None
        return [label, *vals, ratio(k, kafka), better]

    return [
        row("start-up to first acknowledged produce, median s",
            lambda r: _median(r.startup_s), "lower"),
        row("  broker CPU s until then, median", lambda r: _median(r.startup_cpu_s), "lower"),
        row("idle RSS, MB", lambda r: _median(r.idle_rss_mb), "lower"),
        row(f"produce {SIZE} B, msgs/s", lambda r: r.produce.msgs_per_s, "higher"),
        row("  broker CPU s per GB", lambda r: r.produce.cpu_per_gb, "lower"),
        row(f"consume {SIZE} B, msgs/s", lambda r: r.consume.msgs_per_s, "higher"),
        row("  broker CPU s per GB", lambda r: r.consume.cpu_per_gb, "lower"),
        row(f"{args_consumers(results)} aiokafka consumers joining to stable, s",
            lambda r: r.group.stable_s, "lower"),
        row("pipelined heartbeats/s (one connection)", lambda r: r.hb.hb_rate, "higher"),
        row("  broker CPU µs per heartbeat", lambda r: r.hb.hb_cpu_us, "lower"),
        row("offset commits/s, one at a time", lambda r: r.commits["seq"], "higher"),
        row("offset commits/s, 64 in flight", lambda r: r.commits["pipe"], "higher"),
        row("  broker CPU µs per commit (64 in flight)", lambda r: r.commits["pipe_cpu_us"],
            "lower"),
        row("end-to-end latency, one in flight, p50 ms",
            lambda r: percentile(r.latency_ms, 50) if r.latency_ms else None, "lower"),
        row("  p99 ms", lambda r: percentile(r.latency_ms, 99) if r.latency_ms else None,
            "lower"),
    ]


def args_consumers(results: dict[str, Figures]) -> int:
    for r in results.values():
        if r.group is not None:
            return r.group.n
    return 0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", default="kafka,tansu", type=peers,
                    help="the brokers measured beside kafkalite (kafka, tansu or both)")
    ap.add_argument("--startup-runs", type=int, default=3)
    ap.add_argument("--startup-only", action="store_true",
                    help="only start-up to the first acknowledged produce and idle RSS")
    ap.add_argument("--count", type=int, default=1_000_000, help="records produced")
    ap.add_argument("--consumers", type=int, default=50, help="group size")
    ap.add_argument("--heartbeats", type=int, default=100_000, help="pipelined heartbeats")
    ap.add_argument("--commits", type=int, default=20_000, help="pipelined commits")
    ap.add_argument("--seconds", type=float, default=5.0,
                    help="time for the one-at-a-time commits")
    ap.add_argument("--latency-samples", type=int, default=1000)
    ap.add_argument("--time-limit", type=float, default=20.0,
                    help="seconds allowed per measurement")
    args = ap.parse_args(argv)
    logging.getLogger("aiokafka").setLevel(logging.ERROR)
    names = ["kafkalite", *args.peer]
    header(f"kafkalite beside {' and '.join(args.peer)}")
    results = {name: measure(name, args) for name in names}
    print()
    shown = rows(results)[:3] if args.startup_only else rows(results)
    print(table(["figure", *names, "kafkalite / kafka", "better"], shown), flush=True)


if __name__ == "__main__":
    main()
