"""Failover and replication cost across the nodes of one process (issue 27).

    python -m benchmarks.failover [--runs 10] [--count 50000] [--time-limit 60]

Starts ``kafkalite serve --nodes 3`` (admin listener on) as a child process and prints:

- **failover**: a confluent-kafka producer with its defaults (acks=all) writes a record
  every millisecond; from the controlled stop of the partition leader's broker (the
  admin API's ``POST /api/v1/brokers/{id}/stop``, timed from just before the request) to
  the first acknowledgement of a record the new leader appended, p50 and max over
  ``--runs`` stops; the broker is started again between runs;
- **produce**: msgs/s of one confluent-kafka producer with acks=all to a topic of
  replication factor 1 and to one of replication factor 3, in the same run, and their
  ratio.

No Apache Kafka peer yet (a three-broker Kafka from the pinned jars is not started here).
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
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks.common import fmt, header, kafkalite_defaults, percentile, table
from kafkalite.broker.testing.fixtures import BrokerProcess

NODES = 3


def _post(admin: str, path: str) -> dict[str, Any]:
    req = urllib.request.Request(f"{admin}{path}", data=b"{}", method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        body: dict[str, Any] = json.loads(resp.read())
        return body


def _create(boot: str, topic: str, partitions: int, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic(topic, partitions, rf)])[topic].result(30)


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


def failover(b: BrokerProcess, runs: int, limit: float) -> list[float]:
    """Per run: a producer writing a record every millisecond; the time from the stop
    request to the first acknowledgement of a record the new leader appended."""
    boot = ",".join(b.bootstraps)
    assert b.admin_url is not None
    took: list[float] = []
    for i in range(runs):
        topic = f"failover-{i}"
        _create(boot, topic, 1, NODES)
        producer = Producer({"bootstrap.servers": boot})
        if not _acked(producer, topic, limit):
            print(f"run {i}: no first acknowledgement, skipped")
            continue
        leader = _leader(boot, topic)
        acks: list[tuple[float, int]] = []
        stopped: list[tuple[float, float]] = []
        report = partial(_report, acks)
        thread = threading.Thread(target=_stop, args=(b.admin_url, leader, stopped))
        deadline = time.monotonic() + limit
        for _ in range(200):
            producer.produce(topic, b"x", partition=0, on_delivery=report)
            producer.poll(0.001)
        thread.start()
        found = None
        while found is None and time.monotonic() < deadline:
            producer.produce(topic, b"x", partition=0, on_delivery=report)
            producer.poll(0.001)
            if stopped:
                started, returned = stopped[0]
                # When the stop returned the old leader's connections were closed: an
                # offset above every one acknowledged by then was appended by the new
                # leader (conservative: new-leader acknowledgements that arrived while
                # the old leader drained are not counted).
                last_old = max((o for t, o in acks if t <= returned), default=-1)
                found = next((t for t, o in acks if o > last_old), None)
                if found is not None:
                    took.append((found - started) * 1000)
        thread.join(limit)
        if found is None:
            print(f"run {i}: not acknowledged within {limit} s")
        producer.flush(10)
        _post(b.admin_url, f"/api/v1/brokers/{leader}/start")
    return took


def _report(acks: list[tuple[float, int]], err: Any, msg: Any) -> None:
    if err is None:
        acks.append((time.perf_counter(), msg.offset()))


def _stop(admin: str, node: int, stopped: list[tuple[float, float]]) -> None:
    """Stop ``node``; (when the request began, when it returned)."""
    started = time.perf_counter()
    _post(admin, f"/api/v1/brokers/{node}/stop")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--count", type=int, default=50_000)
    parser.add_argument("--time-limit", type=float, default=60)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kafkalite-failover-"))
    overrides = {**kafkalite_defaults(), "admin.listener": "127.0.0.1:0"}
    b = BrokerProcess(root / "data", overrides,
                      ["--nodes", str(NODES), "--log-level", "warning"]).start(60)
    try:
        header(f"failover: controlled stop of the leader to the first acknowledged produce "
               f"(confluent-kafka defaults, {args.runs} runs)")
        took = failover(b, args.runs, args.time_limit)
        print(table(["broker", "runs", "p50 ms", "max ms"],
                    [["kafkalite --nodes 3", len(took), percentile(took, 50),
                      max(took) if took else None]]))
        boot = ",".join(b.bootstraps)
        header(f"produce, acks=all, one partition, {args.count} records of 100 bytes")
        rows = []
        rates = {}
        for rf in (1, 3):
            topic = f"rate-rf{rf}"
            _create(boot, topic, 1, rf)
            rate, cut = produce_rate(boot, topic, args.count, args.time_limit)
            rates[rf] = rate
            rows.append([f"replication factor {rf}", rate, "cut short" if cut else ""])
        print(table(["topic", "msgs/s", ""], rows))
        print(f"rf3/rf1: {fmt(rates[3] / rates[1] if rates[1] else None, 2)}")
    finally:
        b.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
