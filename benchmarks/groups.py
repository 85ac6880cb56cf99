"""Consumer-group formation, rebalance after a leave, and heartbeat throughput and latency.

For each broker (kafkalite, Tansu), on one topic with as many partitions as the largest N:

* N aiokafka consumers (client defaults: session 10 s, heartbeat every 3 s) start together
  in a fresh group; timed until the assignment is complete: every partition owned by
  exactly one consumer and every consumer holding its assignment from one generation.
* One consumer closes (LeaveGroup); timed until the others are complete again at a newer
  generation.
* On one raw TCP connection a member joins a group (JoinGroup, SyncGroup as leader), then
  sends valid Heartbeat requests pipelined (heartbeats/s, the answers counted by error
  code), then one at a time (latency p50/p99).

    .venv/bin/python -m benchmarks.groups [--sizes 1,10,50,200] [--heartbeats 200000]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from benchmarks.support.common import (
    Broker,
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
from kafkalite.client.kafka import RawConnection, one_at_a_time, pipeline, request, request_class

JOIN_GROUP, SYNC_GROUP, HEARTBEAT = 11, 14, 12
MEMBER_ID_REQUIRED = 79
REBALANCE_IN_PROGRESS = 27


@dataclass
class GroupRun:
    n: int
    stable_s: float | None = None
    generation: int | None = None
    leave_s: float | None = None
    #: Broker CPU seconds from the start of the consumers to a complete assignment.
    cpu_s: float | None = None
    note: str = ""


@dataclass
class Result:
    groups: list[GroupRun] = field(default_factory=list)
    hb_rate: float | None = None
    hb_cpu_us: float | None = None
    hb_errors: Counter[int] = field(default_factory=Counter)
    hb_lat: list[float] = field(default_factory=list)
    hb_path: str = ""


class Tracker:
    """What each consumer was last given, and at which generation."""

    def __init__(self) -> None:
        self.assigned: dict[int, tuple[int, frozenset[int]]] = {}

    def listener(self, idx: int, consumer: Any) -> Any:
        from aiokafka.abc import ConsumerRebalanceListener

        tracker = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                tracker.assigned.pop(idx, None)

            async def on_partitions_assigned(self, assigned: Any) -> None:
                gen = consumer._coordinator.generation
                tracker.assigned[idx] = (gen, frozenset(tp.partition for tp in assigned))

        return Listener()

    def complete(self, members: set[int], partitions: int, after_gen: int = -1) -> int | None:
        """The generation at which ``members`` hold a complete assignment, else None."""
        gens = set()
        total = 0
        union: set[int] = set()
        for idx in members:
            got = self.assigned.get(idx)
            if got is None:
                return None
            gens.add(got[0])
            total += len(got[1])
            union |= got[1]
        if len(gens) != 1:
            return None
        gen = gens.pop()
        if gen <= after_gen or total != partitions or len(union) != partitions:
            return None
        return gen


async def wait_complete(tracker: Tracker, members: set[int], partitions: int, t0: float,
                        limit: float, after_gen: int = -1) -> tuple[float, int] | None:
    deadline = t0 + limit
    while time.perf_counter() < deadline:
        gen = tracker.complete(members, partitions, after_gen)
        if gen is not None:
            return time.perf_counter() - t0, gen
        await asyncio.sleep(0.005)
    return None


async def group_run(broker: Broker, topic: str, partitions: int, n: int,
                    limit: float) -> GroupRun:
    from aiokafka import AIOKafkaConsumer

    group = f"bench-g{n}-{uuid.uuid4().hex[:6]}"
    tracker = Tracker()
    consumers = []
    for i in range(n):
        c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group,
                             enable_auto_commit=False, auto_offset_reset="latest",
                             client_id=f"bench-{i}")
        c.subscribe([topic], listener=tracker.listener(i, c))
        consumers.append(c)
    run = GroupRun(n)
    try:
        cpu0 = broker.cpu_seconds()
        t0 = time.perf_counter()
        try:
            await asyncio.wait_for(asyncio.gather(*(c.start() for c in consumers)), limit)
        except TimeoutError:
            run.note = f"consumers not started in {limit:.0f} s"
            return run
        members = set(range(n))
        got = await wait_complete(tracker, members, partitions, t0, limit)
        if got is None:
            run.note = f"no complete assignment in {limit:.0f} s"
            return run
        run.stable_s, run.generation = got
        run.cpu_s = broker.cpu_seconds() - cpu0
        if n > 1:
            leaving = consumers[-1]
            members.discard(n - 1)
            t1 = time.perf_counter()
            await leaving.stop()
            consumers.pop()
            got = await wait_complete(tracker, members, partitions, t1, limit, run.generation)
            if got is None:
                run.note = f"not re-stabilised in {limit:.0f} s after a leave"
            else:
                run.leave_s = got[0]
        return run
    finally:
        await asyncio.gather(*(c.stop() for c in consumers), return_exceptions=True)


def subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0 for one topic, no user data."""
    raw = topic.encode()
    return b"\x00\x00" + b"\x00\x00\x00\x01" + len(raw).to_bytes(2, "big") + raw + \
        b"\xff\xff\xff\xff"


def assignment(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v0: ``partitions`` of one topic, no user data."""
    raw = topic.encode()
    return (b"\x00\x00" + b"\x00\x00\x00\x01" + len(raw).to_bytes(2, "big") + raw
            + len(partitions).to_bytes(4, "big")
            + b"".join(p.to_bytes(4, "big") for p in partitions) + b"\xff\xff\xff\xff")


def join_member(conn: RawConnection, group: str, topic: str,
                session_ms: int) -> tuple[str, int, int]:
    """JoinGroup (twice when the broker asks for a member id), SyncGroup as leader.

    Returns (member_id, generation, heartbeat version).
    """
    jv = conn.version(JOIN_GROUP, 9)
    sv = conn.version(SYNC_GROUP, 5)
    proto_cls = request_class(JOIN_GROUP, jv, "JoinGroupRequestProtocol")
    assign_cls = request_class(SYNC_GROUP, sv, "SyncGroupRequestAssignment")
    member_id = ""
    last = "no attempt"
    deadline = time.monotonic() + 3 * session_ms / 1000
    while time.monotonic() < deadline:
        resp = conn.call(request(
            JOIN_GROUP, jv, group_id=group, session_timeout=timedelta(milliseconds=session_ms),
            rebalance_timeout=timedelta(milliseconds=session_ms), member_id=member_id,
            group_instance_id=None, protocol_type="consumer", reason=None,
            protocols=(proto_cls(name="range", metadata=subscription(topic)),),
        ))
        if int(resp.error_code) == MEMBER_ID_REQUIRED:
            member_id = resp.member_id
            continue
        if int(resp.error_code):
            raise RuntimeError(f"JoinGroup v{jv}: {resp.error_code!r}")
        member_id = resp.member_id
        generation = int(resp.generation_id)
        sresp = conn.call(request(
            SYNC_GROUP, sv, group_id=group, generation_id=generation, member_id=member_id,
            group_instance_id=None, protocol_type="consumer",
            protocol_name=resp.protocol_name or "range",
            assignments=(assign_cls(member_id=member_id, assignment=assignment(topic, [0])),),
        ))
        if int(sresp.error_code) == REBALANCE_IN_PROGRESS:  # rejoin, as clients do
            last = f"SyncGroup v{sv}: {sresp.error_code!r}"
            time.sleep(0.2)
            continue
        if int(sresp.error_code):
            raise RuntimeError(f"SyncGroup v{sv}: {sresp.error_code!r}")
        break
    else:
        raise RuntimeError(f"no stable membership: {last}")
    return member_id, generation, conn.version(HEARTBEAT, 4)


def heartbeat_error_offset(version: int) -> int:
    """Where the error code sits in a Heartbeat response frame of ``version``."""
    header_len = 5 if version >= 4 else 4  # v4 answers with response header v1
    return header_len + (4 if version >= 1 else 0)  # v1+ start with throttle_time_ms


def heartbeats(broker: Broker, topic: str, count: int, window: int, samples: int,
               limit: float, res: Result) -> None:
    conn = RawConnection(broker.bootstrap)
    try:
        group = f"bench-hb-{uuid.uuid4().hex[:6]}"
        try:
            member, gen, hv = join_member(conn, group, topic, 6000)
            res.hb_path = f"valid (Heartbeat v{hv}, joined member)"
        except Exception as e:
            # The error path still shows the request path's cost; say so in the table.
            print(f"   {broker.name}: join failed ({e}); measuring UNKNOWN_MEMBER_ID answers",
                  flush=True)
            conn.close()
            conn = RawConnection(broker.bootstrap)
            member, gen, hv = "unknown-member", 1, conn.version(HEARTBEAT, 4)
            res.hb_path = f"error path (Heartbeat v{hv}, unknown member)"
        hb = request(HEARTBEAT, hv, group_id=group, generation_id=gen, member_id=member,
                     group_instance_id=None)
        frames = conn.frames(hb, count)
        cpu0 = broker.cpu_seconds()
        p = pipeline(conn, frames, heartbeat_error_offset(hv), window, limit)
        res.hb_rate = p.per_second
        if p.count:
            res.hb_cpu_us = (broker.cpu_seconds() - cpu0) / p.count * 1e6
        res.hb_errors = p.errors
        print(f"   {broker.name}: {p.count:,} pipelined heartbeats in {p.seconds:.2f} s, "
              f"answers by error code {dict(p.errors)}", flush=True)
        res.hb_lat = one_at_a_time(conn, conn.frames(hb, samples), limit)
    finally:
        conn.close()


def run(name: str, args: argparse.Namespace, sizes: list[int]) -> Result:
    res = Result()
    partitions = max(sizes)
    with running(name, parse_sets(args.set)) as broker:
        topic = f"bench-groups-{uuid.uuid4().hex[:6]}"
        if not guarded(f"{name} create", lambda: create_topic(broker.bootstrap, topic,
                                                               partitions)):
            return res
        for n in sizes:
            with collector_paused():
                g = guarded(f"{name} N={n}", lambda n=n: asyncio.run(
                    group_run(broker, topic, partitions, n, args.time_limit)))
            g = g or GroupRun(n, note="error")
            res.groups.append(g)
            print(f"   {name}: N={n} stable {g.stable_s} s (generation {g.generation}), "
                  f"after leave {g.leave_s} s {g.note}", flush=True)
        with collector_paused():
            guarded(f"{name} heartbeats", lambda: heartbeats(
                broker, topic, args.heartbeats, args.window, args.latency_samples,
                args.time_limit, res))
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    broker_args(ap)
    ap.add_argument("--sizes", default="1,10,50,200", help="group sizes N")
    ap.add_argument("--heartbeats", type=int, default=200_000, help="pipelined heartbeats")
    ap.add_argument("--window", type=int, default=2000,
                    help="most unanswered heartbeats on the connection")
    ap.add_argument("--latency-samples", type=int, default=2000)
    ap.add_argument("--time-limit", type=float, default=20.0,
                    help="seconds allowed per measurement")
    args = ap.parse_args(argv)
    # The clients' own rebalance chatter ("Heartbeat failed ... rebalancing") is expected.
    logging.getLogger("aiokafka").setLevel(logging.ERROR)
    sizes = [int(s) for s in args.sizes.split(",")]
    header(f"consumer groups (aiokafka, {max(sizes)} partitions) and heartbeats (raw TCP)")
    results: dict[str, Result] = {}
    for name in broker_names(args):
        results[name] = run(name, args, sizes)

    names = list(results)
    rows = []
    for i, n in enumerate(sizes):
        for name in names:
            gs = results[name].groups
            g = gs[i] if i < len(gs) else GroupRun(n, note="not run")
            rows.append([f"N={n}", name, g.stable_s, g.cpu_s, g.generation, g.leave_s, g.note])
    print()
    print(table(["consumers", "broker", "stable s", "broker CPU s", "generation",
                 "re-stable after leave s", "note"], rows))
    hb_rows = []
    for name in names:
        r = results[name]
        errs = ", ".join(f"{k}:{v}" for k, v in sorted(r.hb_errors.items()))
        cap = 1e6 / r.hb_cpu_us if r.hb_cpu_us else None
        hb_rows.append([name, r.hb_rate, r.hb_cpu_us, cap,
                        percentile(r.hb_lat, 50) if r.hb_lat else None,
                        percentile(r.hb_lat, 99) if r.hb_lat else None, errs, r.hb_path])
    print()
    print(table(["heartbeats", "pipelined /s", "broker CPU us each", "per CPU-second",
                 "p50 ms", "p99 ms", "answers (code:count)",
                 "path"], hb_rows))
    if "kafkalite" in results and "tansu" in results:
        k, t = results["kafkalite"], results["tansu"]
        r_rows = []
        for kg, tg in zip(k.groups, t.groups, strict=False):
            r_rows.append([f"N={kg.n} stable", ratio(kg.stable_s, tg.stable_s)])
            if kg.n > 1:
                r_rows.append([f"N={kg.n} after leave", ratio(kg.leave_s, tg.leave_s)])
        r_rows.append(["pipelined heartbeats/s", ratio(k.hb_rate, t.hb_rate)])
        print()
        print(table(["kafkalite / tansu", "ratio"], r_rows))


if __name__ == "__main__":
    main()
