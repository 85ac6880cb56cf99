"""The Java client (Kafka 4.4's kafka-clients) while brokers of a three-node cluster stop:
an idempotent acks=all producer through the partition leader's stop and start, then a
consumer group committing through its coordinator's stop. One JVM
(java/FailoverClients.java) runs both phases; the test drives it through stdin and
stdout."""

from __future__ import annotations

import queue
import subprocess
import threading
import time

from confluent_kafka import Consumer, TopicPartition

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import java_command
from .replica_helpers import addresses, cluster, create, read_all

__all__ = ["cluster"]  # the fixture, used by name

TOPIC, PARTITIONS, COUNT, GROUP = "java-failover", 3, 6000, "java-movers"


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str | None]:
    """The program's stdout, line by line (None at its end), read on a thread so that
    every wait for a line is bounded in time."""
    out: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(line.rstrip("\n"))
        out.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return out


def _next(out: queue.Queue[str | None], seen: list[str], timeout: float = 120) -> str | None:
    line = out.get(timeout=timeout)
    if line is not None:
        seen.append(line)
    return line


def _await(out: queue.Queue[str | None], seen: list[str], want: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = _next(out, seen, deadline - time.monotonic())
        assert line is not None, f"the Java program ended before {want}: {seen}"
        if line == want:
            return
    raise AssertionError(f"no {want} from the Java program: {seen}")


def test_java_clients_through_leader_and_coordinator_stops(cluster: BrokerThread) -> None:
    create(cluster, TOPIC, PARTITIONS)
    boot = addresses(cluster)
    proc = subprocess.Popen(java_command("FailoverClients", boot, TOPIC, str(PARTITIONS),
                                         str(COUNT), GROUP),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    threading.Thread(target=lambda: err.extend(proc.stderr or []), daemon=True).start()
    out = _lines(proc)
    seen: list[str] = []
    assert proc.stdin is not None
    try:
        # Phase 1: the producer is sending; stop the leader's broker, start it again.
        _await(out, seen, "phase=produce")
        leader = cluster.partition_state(TOPIC, 0)[0]
        cluster.stop_node(leader)
        new = cluster.partition_state(TOPIC, 0)
        assert new[0] not in (leader, -1) and leader not in new[2]
        time.sleep(1)
        cluster.start_node(leader)
        proc.stdin.write("resumed\n")
        proc.stdin.flush()
        # Phase 2: the group is consuming and committing; stop its coordinator's broker.
        _await(out, seen, "phase=group")
        coordinator = cluster.call(lambda: cluster.inner.cluster.coordinator(0, GROUP))
        cluster.stop_node(coordinator)
        proc.stdin.write("stopped\n")
        proc.stdin.flush()
        while _next(out, seen) is not None:
            pass
        assert proc.wait(30) == 0, "\n".join(seen) + "".join(err)[-4000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    lines = dict(line.split("=", 1) for line in seen if "=" in line)
    assert lines["acked"] == str(COUNT)
    assert lines["offset.gaps"] == "0"
    # Every partition holds each record exactly once, in the order sent.
    got = read_all(cluster, TOPIC, PARTITIONS, COUNT)
    for p in range(PARTITIONS):
        assert got[p] == [f"{i:06d}".encode() for i in range(p, COUNT, PARTITIONS)], \
            f"partition {p}"
    # The group read everything and its committed offsets end at the log end offsets.
    moved = cluster.call(lambda: cluster.inner.cluster.coordinator(0, GROUP))
    assert moved not in (coordinator, -1)
    assert lines["consumed.distinct"] == str(COUNT)
    ends = [len(got[p]) for p in range(PARTITIONS)]
    assert [int(lines[f"committed.{p}"]) for p in range(PARTITIONS)] == ends
    # And so the new coordinator answers another client.
    c = Consumer({"bootstrap.servers": boot, "group.id": GROUP})
    try:
        committed = c.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], 10)
    finally:
        c.close()
    assert [tp.offset for tp in committed] == ends
