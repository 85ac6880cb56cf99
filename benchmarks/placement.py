"""Placement: one-at-a-time round trips with the client and the broker pinned to CPUs.

    python -m benchmarks.placement [--brokers kafkalite,tansu] [--seconds 2] [--rounds 2]

A request sent one at a time waits for the broker and then for the client to be woken.
On a small virtual machine that wake-up, not either broker, sets much of the round trip,
and what it costs depends on where the kernel puts the two processes. This prints, for
each broker, ApiVersions (the floor), OffsetFetch and one-partition OffsetCommit round
trips (v8, as ``benchmarks.offsets`` sends them) in three placements, ``--rounds`` times
over:

- ``free``: as the kernel places them (what ``benchmarks.offsets`` measures);
- ``same``: the broker (every thread) and the client pinned to one CPU;
- ``apart``: the broker on one CPU, the client on another.

Only the affinity changes between placements: the same broker process, connection and
requests. Needs Linux and two CPUs. Nothing here is a target; it explains the spread of
the one-at-a-time ratios in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager

from benchmarks.offsets import (
    TOPIC,
    TOPIC_PARTITIONS,
    commit_request,
    fetch_request,
    floor_frames,
    sequential,
)
from benchmarks.support.common import (
    BROKERS,
    broker_args,
    broker_names,
    create_topic,
    parse_sets,
    running,
    table,
)
from kafkalite.client.kafka import RawConnection, one_at_a_time

PLACEMENTS = ("free", "same", "apart")


def _pin(pid: int, cpus: set[int]) -> None:
    """Every thread of ``pid`` (tokio's workers, the log cleaner) on ``cpus``."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return
    for tid in threads:
        try:
            os.sched_setaffinity(int(tid), cpus)
        except OSError:  # a thread that ended meanwhile
            pass


@contextmanager
def placed(pid: int, placement: str, cpus: list[int]) -> Iterator[None]:
    """The broker ``pid`` and this process pinned as ``placement`` says; restored after."""
    everywhere = set(cpus)
    broker_cpus, client_cpus = {
        "free": (everywhere, everywhere),
        "same": ({cpus[0]}, {cpus[0]}),
        "apart": ({cpus[1]}, {cpus[0]}),
    }[placement]
    mine = os.sched_getaffinity(0)
    try:
        _pin(pid, broker_cpus)
        os.sched_setaffinity(0, client_cpus)
        yield
    finally:
        os.sched_setaffinity(0, mine)
        _pin(pid, everywhere)


def measure(name: str, seconds: float, rounds: int, overrides: dict[str, str],
            cpus: list[int]) -> list[list[object]]:
    rows: list[list[object]] = []
    with running(name, overrides) as broker:
        create_topic(broker.bootstrap, TOPIC, TOPIC_PARTITIONS)
        conn = RawConnection(broker.bootstrap)
        try:
            conn.call(commit_request(8, 42))  # the offset the fetches read
            frames = {
                "ApiVersions": floor_frames(conn),
                "OffsetFetch": conn.frames(fetch_request(8), 200_000),
                "OffsetCommit": conn.frames(commit_request(8, 42), 200_000),
            }
            for r in range(rounds):
                for placement in PLACEMENTS:
                    with placed(broker.pid, placement, cpus):
                        row: list[object] = [name, r + 1, placement]
                        for fs in frames.values():
                            s = sequential(one_at_a_time(conn, fs, seconds))
                            row += [f"{s['seq']:,.0f}", f"{s['p50_ms'] * 1000:.1f}"]
                        rows.append(row)
        finally:
            conn.close()
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    broker_args(ap)
    ap.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    ap.add_argument("--rounds", type=int, default=2, help="times through the placements")
    args = ap.parse_args(argv)
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("placement needs two CPUs")
    overrides = parse_sets(args.set)
    rows: list[list[object]] = []
    for name in broker_names(args):
        if name not in BROKERS:
            raise SystemExit(f"unknown broker {name}")
        rows += measure(name, args.seconds, args.rounds, overrides, cpus)
    print(table(["broker", "round", "placement", "ApiVersions/s", "p50 µs", "OffsetFetch/s",
                 "p50 µs", "OffsetCommit/s", "p50 µs"], rows))


if __name__ == "__main__":
    main()
