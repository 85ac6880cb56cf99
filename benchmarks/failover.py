"""Failover and replication cost: kafkalite's nodes in one process beside a three-broker
Apache Kafka (issue 27).

    python -m benchmarks.failover [--peer kafka] [--runs 10] [--count 50000]
        [--time-limit 60]

Starts ``kafkalite serve --nodes 3`` (admin listener on) as a child process and, with
``--peer kafka``, then a three-broker Kafka 4.4 KRaft cluster from the pinned jars
(``benchmarks.support.kafka_cluster``: one controller process and three broker processes, Kafka's
JVM options), one after the other, and prints side by side:

- **failover**: a confluent-kafka producer with its defaults writes a record every
  millisecond to a new topic of one partition and replication factor 3; from the
  controlled stop of the partition leader's broker (kafkalite: the admin API's
  ``POST /api/v1/brokers/{id}/stop``; Kafka: SIGTERM to that broker's process, its
  controlled shutdown), timed from just before the request or signal, to the
  acknowledgement of the first record the new leader appended (the first offset whose
  batch carries a later leader epoch, read back afterwards), p50 and max over ``--runs``
  stops; the broker is started again between runs;
- **produce**: msgs/s of one confluent-kafka producer with acks=all to a topic of
  replication factor 1 and to one of replication factor 3, in the same run, and their
  ratio.

Nothing here is a test; every loop is bounded by a count and by ``--time-limit``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks.support.common import fmt, header, kafkalite_defaults, percentile, table
from kafkalite.broker.testing.fixtures import BrokerProcess

NODES = 3


class Target:
    """A cluster under measurement: its bootstrap, how a broker stops and starts."""

    def __init__(self, name: str, bootstrap: str, stop: Callable[[int], None],
                 start: Callable[[int], None]) -> None:
        self.name, self.bootstrap, self.stop, self.start = name, bootstrap, stop, start


def _post(admin: str, path: str) -> dict[str, Any]:
    req = urllib.request.Request(f"{admin}{path}", data=b"{}", method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        body: dict[str, Any] = json.loads(resp.read())
        return body


def _create(boot: str, topic: str, partitions: int, rf: int, limit: float = 30) -> None:
    """Create a topic; retried while a restarted broker is still registering (bounded)."""
    deadline = time.monotonic() + limit
    admin = AdminClient({"bootstrap.servers": boot})
    while True:
        try:
            admin.create_topics([NewTopic(topic, partitions, rf)])[topic].result(30)
            break
        except KafkaException:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.2)
    while time.monotonic() < deadline:  # every replica known and a leader elected
        p = admin.list_topics(topic, timeout=10).topics[topic].partitions.get(0)
        if p is not None and p.leader >= 0 and len(p.isrs) == rf:
            return
        time.sleep(0.05)


def _leader(boot: str, topic: str) -> int:
    md = AdminClient({"bootstrap.servers": boot}).list_topics(topic, timeout=10)
    return int(md.topics[topic].partitions[0].leader)


def _acked(producer: Producer, topic: str, limit: float) -> bool:
    done: list[Any] = []
    producer.produce(topic, b"x", partition=0, on_delivery=lambda e, m: done.append(e))
    deadline = time.monotonic() + limit
    while not done and time.monotonic() < deadline:
        producer.poll(0.001)
    return bool(done) and done[0] is None


def _new_epoch_offset(boot: str, topic: str, end: int, limit: float) -> int | None:
    """The first offset of partition 0 whose batch carries a leader epoch later than
    offset 0's: the first record the new leader appended."""
    c = Consumer({"bootstrap.servers": boot, "group.id": f"probe-{topic}", "log_level": 2,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, 0)])
    first: int | None = None
    deadline = time.monotonic() + limit
    try:
        while time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error():
                    continue
                epoch = m.leader_epoch()
                if first is None:
                    first = epoch
                elif epoch is not None and first is not None and epoch > first:
                    return int(m.offset())
                if m.offset() >= end - 1:
                    return None
    finally:
        c.close()
    return None


def failover(target: Target, runs: int, limit: float) -> list[float]:
    """Per run: a producer writing a record every millisecond; the time from the stop
    request to the acknowledgement of the first record the new leader appended."""
    boot = target.bootstrap
    took: list[float] = []
    for i in range(runs):
        topic = f"failover-{i}"
        _create(boot, topic, 1, NODES)
        producer = Producer({"bootstrap.servers": boot, "log_level": 2})
        if not _acked(producer, topic, limit):
            print(f"{target.name} run {i}: no first acknowledgement, skipped")
            continue
        leader = _leader(boot, topic)
        acks: list[tuple[float, int]] = []
        stopped: list[tuple[float, float]] = []
        report = partial(_report, acks)
        thread = threading.Thread(target=_stop, args=(target, leader, stopped))
        deadline = time.monotonic() + limit
        for _ in range(200):
            producer.produce(topic, b"x", partition=0, on_delivery=report)
            producer.poll(0.001)
        thread.start()
        # Until the stop returned and a few hundred records were acknowledged after it.
        while time.monotonic() < deadline:
            producer.produce(topic, b"x", partition=0, on_delivery=report)
            producer.poll(0.001)
            if stopped and sum(1 for t, _ in acks if t > stopped[0][1]) >= 200:
                break
        thread.join(limit)
        producer.flush(10)
        end = max((o for _, o in acks), default=0) + 1
        first_new = _new_epoch_offset(boot, topic, end, limit)
        found = min((t for t, o in acks if first_new is not None and o >= first_new),
                    default=None)
        if stopped and found is not None:
            took.append((found - stopped[0][0]) * 1000)
        else:
            print(f"{target.name} run {i}: no acknowledgement from a new leader "
                  f"within {limit} s")
        target.start(leader)
    return took


def _report(acks: list[tuple[float, int]], err: Any, msg: Any) -> None:
    if err is None:
        acks.append((time.perf_counter(), msg.offset()))


def _stop(target: Target, node: int, stopped: list[tuple[float, float]]) -> None:
    """Stop ``node``; (when the request began, when it returned)."""
    started = time.perf_counter()
    target.stop(node)
    stopped.append((started, time.perf_counter()))


def produce_rate(boot: str, topic: str, count: int, limit: float) -> tuple[float, bool]:
    producer = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 5})
    value = b"v" * 100
    started = time.perf_counter()
    deadline = time.monotonic() + limit
    sent = 0
    while sent < count and time.monotonic() < deadline:
        try:
            producer.produce(topic, value, partition=0)
            sent += 1
        except BufferError:
            producer.poll(0.01)
    left = producer.flush(max(deadline - time.monotonic(), 1))
    return (sent - left) / (time.perf_counter() - started), sent < count or left > 0


def measure(target: Target, args: argparse.Namespace) -> dict[str, Any]:
    """The failover times and the produce rates at replication factors 1 and 3."""
    took = failover(target, args.runs, args.time_limit)
    rates: dict[int, tuple[float, bool]] = {}
    for rf in (1, 3):
        topic = f"rate-rf{rf}"
        _create(target.bootstrap, topic, 1, rf)
        rates[rf] = produce_rate(target.bootstrap, topic, args.count, args.time_limit)
    print(f"   {target.name}: failover ms {[round(t) for t in took]}, "
          f"msgs/s rf1 {rates[1][0]:.0f} rf3 {rates[3][0]:.0f}", flush=True)
    return {"took": took, "rates": rates}


def run_kafkalite(args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="kafkalite-failover-"))
    overrides = {**kafkalite_defaults(), "admin.listener": "127.0.0.1:0"}
    b = BrokerProcess(root / "data", overrides,
                      ["--nodes", str(NODES), "--log-level", "warning"]).start(60)
    try:
        admin = b.admin_url
        assert admin is not None
        return measure(Target("kafkalite", ",".join(b.bootstraps),
                              lambda n: _ignore(_post(admin, f"/api/v1/brokers/{n}/stop")),
                              lambda n: _ignore(_post(admin, f"/api/v1/brokers/{n}/start"))),
                       args)
    finally:
        b.stop()
        shutil.rmtree(root, ignore_errors=True)


def run_kafka(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.support.kafka_cluster import KafkaCluster

    cluster = KafkaCluster(NODES).start()
    try:
        return measure(Target("kafka", cluster.bootstrap, cluster.stop_broker,
                              cluster.start_broker), args)
    finally:
        cluster.stop()


def _ignore(_: object) -> None:
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", default="", choices=["", "kafka"],
                        help="also measure a three-broker Apache Kafka")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--count", type=int, default=50_000)
    parser.add_argument("--time-limit", type=float, default=60)
    args = parser.parse_args()
    results = {"kafkalite --nodes 3": run_kafkalite(args)}
    if args.peer == "kafka":
        results["kafka, 3 brokers"] = run_kafka(args)
    header(f"failover: controlled stop of the leader to the first produce the new leader "
           f"acknowledged (confluent-kafka defaults, {args.runs} runs)")
    print(table(["cluster", "runs", "p50 ms", "max ms"],
                [[name, len(r["took"]), percentile(r["took"], 50),
                  max(r["took"]) if r["took"] else None] for name, r in results.items()]))
    header(f"produce, acks=all, one partition, {args.count} records of 100 bytes")
    rows = []
    for name, r in results.items():
        rates = r["rates"]
        rows.append([name, rates[1][0], rates[3][0],
                     fmt(rates[3][0] / rates[1][0] if rates[1][0] else None, 2),
                     "cut short" if rates[1][1] or rates[3][1] else ""])
    print(table(["cluster", "rf1 msgs/s", "rf3 msgs/s", "rf3/rf1", ""], rows))


if __name__ == "__main__":
    main()
