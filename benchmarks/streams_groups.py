"""Streams groups (KIP-1071): how long a rebalance of Kafka Streams instances takes, on
kafkalite and on Apache Kafka 4.4 in one run.

    .venv/bin/python -m benchmarks.streams_groups [--peer kafka] [--instances 3]
        [--partitions 4] [--rounds 3] [--heartbeat-ms MS] [--initial-delay-ms MS]
        [--time-limit 600]

For each broker, alone on the machine: ``--instances`` Kafka Streams 4.4 instances of one
word-count application (tests/integration/java/StreamsRebalance.java: a repartition topic
and a state store, so 2 x ``--partitions`` tasks; one stream thread each; every timing at
the client's and broker's defaults, so a 5 s streams heartbeat interval on both, unless
``--heartbeat-ms`` sets ``group.streams.heartbeat.interval.ms`` and its minimum on both
brokers, and ``--initial-delay-ms`` sets ``group.streams.initial.rebalance.delay.ms`` on both)
in one JVM under ``group.protocol=streams``. Figures, each from the action to the
moment every instance is RUNNING, every task is active on exactly one instance and every
instance has a task ("every task running again"):

- start: the first instances from ``KafkaStreams.start()`` (the initial rebalance delay of
  a new streams group included: 3 s on Kafka, 200 ms on kafkalite by default);
- join: one more instance started;
- leave: the oldest instance closed (a clean close: it leaves the group).

A join and a leave alternate ``--rounds`` times. Each wait is bounded (120 s in the
program), the whole broker's run by ``--time-limit`` seconds.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.support.common import (
    create_topic,
    fmt,
    guarded,
    header,
    peers,
    percentile,
    running,
    table,
)

IN, OUT = "sr-lines", "sr-counts"
SETTLED = re.compile(r"^(settled|timeout) (\w+)(?: ms=([\d.]+))?(?: tasks=(\S+))?")


def _program(bootstrap: str, state: Path, instances: int, partitions: int,
             ) -> subprocess.Popen[str]:
    from tests.integration.java_support import full_classpath, java_command, tools_log_config

    log = tools_log_config(state)
    cmd = java_command("StreamsRebalance", bootstrap, "streams-rebalance", IN, OUT,
                       str(state / "state"), str(instances), str(2 * partitions),
                       cp=full_classpath(), jvm_args=(f"-Dlog4j2.configurationFile={log}",))
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1)


def _answer(proc: subprocess.Popen[str], what: str, deadline: float) -> tuple[float, str]:
    """The program's line for ``what``: its milliseconds and task counts per instance."""
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the Streams program ended before {what}")
        m = SETTLED.match(line.strip())
        if m is None or m.group(2) != what:
            continue
        if m.group(1) == "timeout":
            raise RuntimeError(f"{what}: the tasks did not settle in 120 s ({line.strip()})")
        return float(m.group(3)), m.group(4)
    raise RuntimeError(f"{what}: past the time limit")


def run_broker(name: str, args: argparse.Namespace) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"start": [], "join": [], "leave": []}
    settings = {} if args.heartbeat_ms is None else {
        "group.streams.heartbeat.interval.ms": str(args.heartbeat_ms),
        "group.streams.min.heartbeat.interval.ms": str(args.heartbeat_ms)}
    if args.initial_delay_ms is not None:
        settings["group.streams.initial.rebalance.delay.ms"] = str(args.initial_delay_ms)
    with running(name, settings, settings) as broker:
        create_topic(broker.bootstrap, IN, args.partitions)
        create_topic(broker.bootstrap, OUT, args.partitions)
        state = Path(tempfile.mkdtemp(prefix="streams-rebalance-"))
        proc = _program(broker.bootstrap, state, args.instances, args.partitions)
        deadline = time.monotonic() + args.time_limit
        try:
            ms, tasks = _answer(proc, "start", deadline)
            figures["start"].append(ms)
            print(f"   [{name}] start: {ms:.0f} ms, tasks per instance {tasks}", flush=True)
            assert proc.stdin is not None
            for _ in range(args.rounds):
                for what in ("join", "leave"):
                    proc.stdin.write(what + "\n")
                    ms, tasks = _answer(proc, what, deadline)
                    figures[what].append(ms)
                    print(f"   [{name}] {what}: {ms:.0f} ms, tasks per instance {tasks}",
                          flush=True)
            proc.stdin.write("quit\n")
            proc.stdin.flush()
            proc.wait(90)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            shutil.rmtree(state, ignore_errors=True)
    return figures


def _cell(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0] / 1000:.2f} s"
    return (f"{percentile(values, 50) / 1000:.2f} s "
            f"({min(values) / 1000:.2f}-{max(values) / 1000:.2f})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", type=peers, default=[],
                        help="also measure Apache Kafka (kafka), from the jars of jvm/pom.xml")
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4,
                        help="the input topic's partitions (tasks: twice this)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--heartbeat-ms", type=int, default=None,
                        help="group.streams.heartbeat.interval.ms (and its minimum) on both "
                             "brokers; default: theirs (5000)")
    parser.add_argument("--initial-delay-ms", type=int, default=None,
                        help="group.streams.initial.rebalance.delay.ms on both brokers; "
                             "default: theirs (Kafka 3000, kafkalite 200)")
    parser.add_argument("--time-limit", type=float, default=600)
    args = parser.parse_args(argv)
    if not 1 <= args.instances < 2 * args.partitions:
        parser.error("--instances must be at least 1 and fewer than the tasks")
    header(f"streams group rebalance: {args.instances} instances, "
           f"{2 * args.partitions} tasks, {args.rounds} join/leave rounds, heartbeat "
           f"{args.heartbeat_ms or 5000} ms"
           + ("" if args.initial_delay_ms is None
              else f", initial delay {args.initial_delay_ms} ms"))
    results = {}
    for name in ["kafkalite", *args.peer]:
        results[name] = guarded(name, lambda name=name: run_broker(name, args)) or {}
    rows = []
    for what, label in (("start", f"{args.instances} instances started"),
                        ("join", f"one joins ({args.instances} + 1)"),
                        ("leave", "the oldest leaves")):
        row = [label] + [_cell(results[n].get(what, [])) for n in results]
        lite = results["kafkalite"].get(what)
        kafka = results.get("kafka", {}).get(what)
        if "kafka" in results:
            # A broker that failed leaves its cells and the ratio empty.
            row.append(fmt(percentile(lite, 50) / percentile(kafka, 50), 2)
                       if lite and kafka else "-")
        rows.append(row)
    heads = ["until every task runs again (median, range)", *results]
    if "kafka" in results:
        heads.append("kafkalite / Kafka")
    print(table(heads, rows), flush=True)


if __name__ == "__main__":
    main()
