"""KIP-848 consumer groups beside classic ones: time to a stable assignment, and heartbeats.

On kafkalite (Tansu does not serve ConsumerGroupHeartbeat), one topic with N partitions:

* N confluent-kafka (librdkafka) consumers with ``group.protocol=consumer`` subscribe
  together in a fresh group; timed until every partition is owned by exactly one of them
  (read from the consumers' own assignments). The same N with the classic protocol
  (librdkafka, eager ``range``) in another group, for the same client's two protocols
  side by side; the aiokafka classic figures are ``benchmarks.groups``'s.
* On one raw TCP connection a member joins a consumer group (ConsumerGroupHeartbeat with
  epoch 0), then sends steady-state heartbeats (its member epoch, nothing else) pipelined:
  heartbeats/s and broker CPU per heartbeat, then one at a time (p50/p99).

The broker runs with Kafka's default ``group.consumer.heartbeat.interval.ms`` (5000) unless
``--set`` says otherwise: a KIP-848 member learns of partitions freed by others on its next
heartbeat, so that interval paces the formation of a group.

    .venv/bin/python -m benchmarks.consumer_groups [--sizes 10,50] [--heartbeats 200000]
"""

from __future__ import annotations

import argparse
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from benchmarks.support.common import (
    Broker,
    broker_args,
    collector_paused,
    create_topic,
    guarded,
    header,
    parse_sets,
    percentile,
    running,
    table,
)
from kafkalite.client.kafka import RawConnection, one_at_a_time, pipeline, request

CONSUMER_GROUP_HEARTBEAT = 68


@dataclass
class FormRun:
    protocol: str
    n: int
    stable_s: float | None = None
    cpu_s: float | None = None
    note: str = ""


@dataclass
class Result:
    runs: list[FormRun] = field(default_factory=list)
    hb_rate: float | None = None
    hb_cpu_us: float | None = None
    hb_errors: dict[int, int] = field(default_factory=dict)
    hb_lat: list[float] = field(default_factory=list)


def form(broker: Broker, topic: str, partitions: int, n: int, protocol: str,
         limit: float) -> FormRun:
    """N consumers subscribe at once; seconds until their assignments cover the topic once
    each with every consumer holding some."""
    from confluent_kafka import Consumer

    group = f"bench-{protocol}-{n}-{uuid.uuid4().hex[:6]}"
    conf: dict[str, Any] = {"bootstrap.servers": broker.bootstrap, "group.id": group,
                            "enable.auto.commit": False, "auto.offset.reset": "latest"}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf.update({"partition.assignment.strategy": "range", "session.timeout.ms": 10000,
                     "heartbeat.interval.ms": 3000})
    run = FormRun(protocol, n)
    consumers = [Consumer({**conf, "client.id": f"bench-{i}"}) for i in range(n)]
    try:
        cpu0 = broker.cpu_seconds()
        t0 = time.perf_counter()
        for c in consumers:
            c.subscribe([topic])
        deadline = t0 + limit
        while time.perf_counter() < deadline:
            owned = []
            everyone = True
            for c in consumers:
                c.poll(0)
                mine = [tp.partition for tp in c.assignment()]
                everyone = everyone and bool(mine)
                owned.extend(mine)
            # Complete: each partition once, and (N <= partitions) every member has some.
            if everyone and len(owned) == partitions and len(set(owned)) == partitions:
                run.stable_s = time.perf_counter() - t0
                run.cpu_s = broker.cpu_seconds() - cpu0
                return run
            time.sleep(0.002)
        run.note = f"no complete assignment in {limit:.0f} s"
        return run
    finally:
        for c in consumers:
            c.close()


def heartbeats(broker: Broker, topic: str, count: int, window: int, samples: int,
               limit: float, res: Result) -> None:
    conn = RawConnection(broker.bootstrap)
    try:
        group = f"bench-cg-hb-{uuid.uuid4().hex[:6]}"
        member = uuid.uuid4().hex
        join = conn.call(request(
            CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id=member, member_epoch=0,
            instance_id=None, rack_id=None, rebalance_timeout=timedelta(seconds=30),
            subscribed_topic_names=(topic,), subscribed_topic_regex=None,
            server_assignor=None, topic_partitions=()))
        if int(join.error_code):
            raise RuntimeError(f"ConsumerGroupHeartbeat join: {join.error_code!r}")
        # The steady state: the member's epoch and nothing else (every field null).
        hb = request(CONSUMER_GROUP_HEARTBEAT, 1, group_id=group, member_id=member,
                     member_epoch=int(join.member_epoch), instance_id=None, rack_id=None,
                     rebalance_timeout=timedelta(milliseconds=-1),
                     subscribed_topic_names=None, subscribed_topic_regex=None,
                     server_assignor=None, topic_partitions=None)
        frames = conn.frames(hb, count)
        cpu0 = broker.cpu_seconds()
        # Response header v1 (correlation id, tags) then throttle_time_ms: the error at 9.
        p = pipeline(conn, frames, 9, window, limit)
        res.hb_rate = p.per_second
        if p.count:
            res.hb_cpu_us = (broker.cpu_seconds() - cpu0) / p.count * 1e6
        res.hb_errors = dict(p.errors)
        print(f"   {p.count:,} pipelined ConsumerGroupHeartbeats in {p.seconds:.2f} s, "
              f"answers by error code {dict(p.errors)}", flush=True)
        res.hb_lat = one_at_a_time(conn, conn.frames(hb, samples), limit)
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    broker_args(ap)
    ap.set_defaults(brokers="kafkalite")
    ap.add_argument("--sizes", default="10,50", help="group sizes N")
    ap.add_argument("--protocols", default="consumer,classic")
    ap.add_argument("--heartbeats", type=int, default=200_000, help="pipelined heartbeats")
    ap.add_argument("--window", type=int, default=2000,
                    help="most unanswered heartbeats on the connection")
    ap.add_argument("--latency-samples", type=int, default=2000)
    ap.add_argument("--time-limit", type=float, default=60.0,
                    help="seconds allowed per measurement")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    protocols = args.protocols.split(",")
    header(f"KIP-848 consumer groups (confluent-kafka, {max(sizes)} partitions) and "
           "ConsumerGroupHeartbeat (raw TCP)")
    res = Result()
    partitions = max(sizes)
    with running("kafkalite", parse_sets(args.set)) as broker, collector_paused():
        topic = f"bench-cg-{uuid.uuid4().hex[:6]}"
        if not guarded("create", lambda: create_topic(broker.bootstrap, topic, partitions)):
            return
        for n in sizes:
            for protocol in protocols:
                r = guarded(f"N={n} {protocol}", lambda n=n, protocol=protocol: form(
                    broker, topic, partitions, n, protocol, args.time_limit))
                r = r or FormRun(protocol, n, note="error")
                res.runs.append(r)
                print(f"   N={n} {protocol}: stable {r.stable_s} s {r.note}", flush=True)
        guarded("heartbeats", lambda: heartbeats(broker, topic, args.heartbeats, args.window,
                                                 args.latency_samples, args.time_limit, res))
    print()
    print(table(["consumers", "protocol", "stable s", "broker CPU s", "note"],
                [[f"N={r.n}", r.protocol, r.stable_s, r.cpu_s, r.note] for r in res.runs]))
    errs = ", ".join(f"{k}:{v}" for k, v in sorted(res.hb_errors.items()))
    cap = 1e6 / res.hb_cpu_us if res.hb_cpu_us else None
    print()
    print(table(["ConsumerGroupHeartbeat", "pipelined /s", "broker CPU us each",
                 "per CPU-second", "p50 ms", "p99 ms", "answers (code:count)"],
                [["kafkalite", res.hb_rate, res.hb_cpu_us, cap,
                  percentile(res.hb_lat, 50) if res.hb_lat else None,
                  percentile(res.hb_lat, 99) if res.hb_lat else None, errs]]))


if __name__ == "__main__":
    main()
