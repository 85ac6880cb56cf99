"""What installed fault rules cost the requests they do not match, in one run
(``python -m benchmarks.faults``).

The rules: 100 that a member's Heartbeat never matches, filed as users write them: 40 on
Heartbeat for other groups, 20 on Heartbeat for other client ids, 10 on Heartbeat for
another principal, 30 on other APIs (Produce and Fetch by topic, JoinGroup, SyncGroup,
OffsetCommit).

1. Heartbeats per second: ``kafkalite serve`` as a child process with its admin
   listener; one raw connection joins a group (JoinGroup, SyncGroup as leader), then
   sends ``--heartbeats`` valid Heartbeats pipelined (window 64), alternately with no
   rules and with the 100 rules (added and cleared over the admin HTTP API), ``--rounds``
   times each; the broker's CPU per heartbeat from its process times (psutil), and from
   it the heartbeats one broker CPU-second serves (the client shares the machine, so
   this, not the wall-clock rate, is what compares across rounds).
2. Dispatch CPU per Heartbeat: the broker in this process's background thread serves one
   member's Heartbeat frame through its dispatch ``--heartbeats`` times on its own loop,
   timed with the loop thread's CPU clock, alternately with no rules and with the 100
   rules (the best of ``--rounds`` each), so machine noise hits both alike.

Loops are bounded by count and by ``--time-limit``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import types
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from benchmarks.groups import heartbeat_error_offset, join_member
from kafkalite.broker.control.faults import FaultRules
from kafkalite.broker.testing.fixtures import BrokerProcess, BrokerThread
from kafkalite.client.kafka import RawConnection, pipeline, request

HEARTBEAT = 12
GROUP = "hb-group"
TOPIC = "hb"


def non_matching_rules() -> list[dict[str, Any]]:
    """100 rules a member of GROUP with the benchmark's client id never matches."""
    rules: list[dict[str, Any]] = []
    for i in range(40):
        rules.append({"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS",
                      "group_id": f"other-group-{i}"})
    for i in range(20):
        rules.append({"api": "Heartbeat", "error": "UNKNOWN_MEMBER_ID",
                      "client_id": f"other-client-{i}", "count": 3})
    for i in range(10):
        rules.append({"api": "Heartbeat", "action": "delay", "delay_ms": 100,
                      "principal": f"User:other-{i}"})
    for i in range(10):
        rules.append({"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER",
                      "topic": f"topic-{i}"})
    for i in range(10):
        rules.append({"api": "Fetch", "action": "drop", "topic": f"topic-{i}",
                      "probability": 0.5, "seed": i})
    for api in ("JoinGroup", "SyncGroup", "OffsetCommit"):
        for i in range(3):
            rules.append({"api": api, "error": "NOT_COORDINATOR", "group_id": f"g-{i}"})
    rules.append({"api": "OffsetCommit", "action": "close_after", "client_id": "x"})
    assert len(rules) == 100
    return rules


def admin_call(url: str, method: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def heartbeats_per_second(base: Path, count: int, rounds: int, limit: float
                          ) -> dict[str, list[tuple[float, float]]]:
    """(heartbeats/s, broker CPU µs per heartbeat) of each round, by rule set."""
    b = BrokerProcess(base / "proc", {"admin.listener": "127.0.0.1:0",
                                      "group.min.session.timeout.ms": "1000"})
    b.start()
    try:
        assert b.proc is not None and b.admin_url is not None
        proc = psutil.Process(b.proc.pid)
        conn = RawConnection(b.bootstrap)
        member, generation, hv = join_member(conn, GROUP, TOPIC, 30000)
        hb = request(HEARTBEAT, hv, group_id=GROUP, generation_id=generation,
                     member_id=member, group_instance_id=None)
        out: dict[str, list[tuple[float, float]]] = {"no rules": [], "100 rules": []}
        rules = non_matching_rules()
        for _ in range(rounds):
            for name in out:
                if name == "100 rules":
                    for spec in rules:
                        admin_call(f"{b.admin_url}/api/v1/faults", "POST", spec)
                    installed = admin_call(f"{b.admin_url}/api/v1/faults", "GET")["rules"]
                    assert len(installed) == 100, len(installed)
                frames = conn.frames(hb, count)
                t = proc.cpu_times()
                cpu0 = t.user + t.system
                result = pipeline(conn, frames, heartbeat_error_offset(hv), 64, limit)
                t = proc.cpu_times()
                cpu = t.user + t.system - cpu0
                assert set(result.errors) <= {0}, result.errors
                out[name].append((result.per_second, cpu / max(result.count, 1) * 1e6))
                if name == "100 rules":
                    fired = sum(r["fired"] for r in
                                admin_call(f"{b.admin_url}/api/v1/faults", "GET")["rules"])
                    assert fired == 0, fired
                    admin_call(f"{b.admin_url}/api/v1/faults", "DELETE")
        conn.close()
        return out
    finally:
        b.stop()


def dispatch_cpu(base: Path, count: int, rounds: int) -> tuple[float, float]:
    """Best-of-rounds CPU µs per Heartbeat through dispatch: (no rules, 100 rules)."""
    b = BrokerThread(base / "thread", {"group.min.session.timeout.ms": "1000"}).start()
    try:
        inner = b.inner
        conn = RawConnection(b.bootstrap)
        member, generation, hv = join_member(conn, GROUP, TOPIC, 30000)
        frame = conn.frames(request(HEARTBEAT, hv, group_id=GROUP, generation_id=generation,
                                    member_id=member, group_instance_id=None), 1)[0][4:]
        peer = types.SimpleNamespace(principal="User:ANONYMOUS", peer_host="127.0.0.1",
                                     peer_port=1, listener_name="PLAINTEXT", connection_id=1,
                                     client_id_raw=None, client_id=None, received_at=0.0)
        faults: FaultRules = inner.faults
        rules = non_matching_rules()

        def run(with_rules: bool) -> float:
            faults.clear()
            if with_rules:
                for spec in rules:
                    faults.add_json(spec)
            handle = inner.apis.handle
            for _ in range(1000):  # warm-up: caches, lookups
                peer.received_at = time.monotonic()
                handle(peer, frame)
            t0 = time.thread_time()
            for i in range(count):
                if not i & 63:  # as a connection does once per read of pipelined frames
                    peer.received_at = time.monotonic()
                handle(peer, frame)
            elapsed = (time.thread_time() - t0) / count * 1e6
            assert all(r.fired == 0 for r in faults.rules())
            faults.clear()
            return elapsed

        plain, ruled = [], []
        for _ in range(rounds):
            plain.append(b.call(lambda: run(False)))
            ruled.append(b.call(lambda: run(True)))
        conn.close()
        return min(plain), min(ruled)
    finally:
        b.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heartbeats", type=int, default=50000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--time-limit", type=float, default=30)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        print(f"Heartbeats per second, one pipelined connection (window 64), "
              f"{args.heartbeats} per round, {args.rounds} rounds alternating")
        rates = heartbeats_per_second(base, args.heartbeats, args.rounds, args.time_limit)
        best = {}
        for name, rows in rates.items():
            per_s = [r for r, _c in rows]
            cpu = [c for _r, c in rows]
            # The rate one free core would give: the client shares the machine.
            best[name] = 1e6 / statistics.median(cpu)
            print(f"  {name:<10} best {max(per_s):9.0f}/s  "
                  f"median {statistics.median(per_s):9.0f}/s  "
                  f"broker CPU {min(cpu):5.2f}-{max(cpu):5.2f} us/heartbeat "
                  f"(median {statistics.median(cpu):5.2f}: {best[name]:7.0f} per CPU-second)")
        change = (best["100 rules"] / best["no rules"] - 1) * 100
        print(f"  100 rules vs none, heartbeats per broker CPU-second: {change:+.1f}%")
        plain, ruled = dispatch_cpu(base, args.heartbeats, args.rounds)
        print("Heartbeat dispatch CPU per request (best of rounds)")
        print(f"  no rules   {plain:6.2f} us")
        print(f"  100 rules  {ruled:6.2f} us  ({(ruled / plain - 1) * 100:+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
