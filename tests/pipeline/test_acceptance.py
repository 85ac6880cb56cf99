"""Acceptance: real consumer groups against kafkalite, then every pipeline job on the
broker's log directory (through ``kafkalite pipeline all`` on local[2]), checked against
what the test did: generations, their members, committed offsets and lag."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from kafkalite.broker.cli.main import main as cli_main
from kafkalite.broker.testing.fixtures import BrokerThread

MEMBER = str(Path(__file__).with_name("committing_member.py"))
TOPIC, GROUP, PARTITIONS = "events", "analytics", 4
FAST = {"group.min.session.timeout.ms": "100", "group.initial.rebalance.delay.ms": "100"}


class Member:
    def __init__(self, bootstrap: str, client_id: str, instance_id: str = "",
                 session_ms: int = 2000) -> None:
        args = [sys.executable, MEMBER, bootstrap, GROUP, TOPIC, "--client-id", client_id,
                "--session-ms", str(session_ms)]
        if instance_id:
            args += ["--instance-id", instance_id]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.kill()


def group_state(broker: BrokerThread) -> tuple[str, int, dict[str, str | None]]:
    def read() -> tuple[str, int, dict[str, str | None]]:
        assert broker.broker is not None
        g = broker.broker.groups.core.group(GROUP)
        if g is None:
            return ("Dead", 0, {})
        return (g.state.value, g.generation,
                {mid: m.group_instance_id for mid, m in g.members.items()})

    return broker.call(read)


def wait_for(broker: BrokerThread, pred: Callable[[str, int, dict[str, str | None]], bool],
             what: str, timeout: float = 60) -> tuple[str, int, dict[str, str | None]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = group_state(broker)
        if pred(*st):
            return st
        time.sleep(0.1)
    raise AssertionError(f"{what}: group is {group_state(broker)}")


def stable_with(n: int) -> Callable[[str, int, dict[str, str | None]], bool]:
    return lambda state, _gen, members: state == "Stable" and len(members) == n


def produce(bootstrap: str, per_partition: int) -> None:
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for part in range(PARTITIONS):
        for i in range(per_partition):
            p.send(TOPIC, value=b"event-%d" % i, partition=part)
    p.flush(30)
    p.close()


def committed(bootstrap: str) -> dict[int, int | None]:
    # OffsetFetch only: this consumer never subscribes, so it never joins the group.
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
    try:
        return {p: c.committed(TopicPartition(TOPIC, p)) for p in range(PARTITIONS)}
    finally:
        c.close()


@pytest.mark.timeout(900)
def test_group_history_through_every_job(spark: Any, make_broker: Callable[..., BrokerThread],
                                         tmp_path: Path) -> None:
    broker = make_broker(FAST)
    log_dir = broker.data_dir
    boot = broker.bootstrap
    broker.call(lambda: broker.broker.create_topic(TOPIC, PARTITIONS))  # type: ignore[union-attr]
    produce(boot, 100)

    members: list[Member] = []
    stable: list[tuple[int, dict[str, str | None]]] = []  # (generation, members) as seen
    try:
        a = Member(boot, "client-a")
        members.append(a)
        _, g1, m1 = wait_for(broker, stable_with(1), "A joined")
        stable.append((g1, m1))
        b = Member(boot, "client-b")
        members.append(b)
        _, g2, m2 = wait_for(broker, lambda s, g, m: stable_with(2)(s, g, m) and g > g1,
                             "B joined")
        stable.append((g2, m2))
        s = Member(boot, "client-s", instance_id="static-1", session_ms=8000)
        members.append(s)
        _, g3, m3 = wait_for(broker, lambda s_, g, m: stable_with(3)(s_, g, m) and g > g2,
                             "static member joined")
        stable.append((g3, m3))
        b_id = next(k for k in m2 if k not in m1)

        b.kill()  # no LeaveGroup: expires by its session timeout
        _, g4, m4 = wait_for(broker, lambda s_, g, m: stable_with(2)(s_, g, m) and g > g3,
                             "B expired")
        assert b_id not in m4
        stable.append((g4, m4))

        old_static = next(k for k, v in m4.items() if v == "static-1")
        s.close()  # a static member sends no LeaveGroup
        s2 = Member(boot, "client-s", instance_id="static-1", session_ms=8000)
        members.append(s2)
        _, g4b, m4b = wait_for(
            broker,
            lambda s_, g, m: s_ == "Stable" and "static-1" in m.values()
            and old_static not in m, "static member restarted")
        assert g4b == g4, "a static restart does not rebalance"
        new_static = next(k for k, v in m4b.items() if v == "static-1")

        deadline = time.monotonic() + 60
        while committed(boot) != dict.fromkeys(range(PARTITIONS), 100):
            assert time.monotonic() < deadline, committed(boot)
            time.sleep(0.3)

        a.kill()
        s2.kill()
        _, g5, m5 = wait_for(broker, lambda s_, g, m: s_ == "Empty", "all expired",
                             timeout=60)
        assert m5 == {}
        produce(boot, 50)  # nobody consumes these: a lag of 50 on every partition
        time.sleep(1.1)  # the last records in their own one-second bucket
    finally:
        for m in members:
            m.kill()
    broker.stop()

    out = tmp_path / "out"
    # The command's own code path, in this process so that it shares the tests' Spark.
    rc = cli_main(["pipeline", "all", "--log-dir", str(log_dir), "--out", str(out),
                   "--master", "local[2]", "--bucket-seconds", "1",
                   "--shuffle-partitions", "2"])
    assert rc == 0
    assert (out / "report.html").stat().st_size > 10_000

    reb = pq.read_table(out / "rebalances").to_pylist()
    reb = sorted((r for r in reb if r["group"] == GROUP), key=lambda r: r["generation"])
    gens = [r["generation"] for r in reb]
    assert gens == [g1, g2, g3, g4, g5], (gens, json.dumps(reb, default=str)[:2000])
    by_gen = {r["generation"]: r for r in reb}
    for gen, ms in stable[:3]:
        assert by_gen[gen]["member_ids"] == sorted(ms), (gen, by_gen[gen])
    # Generation 4 ends with the restarted static member in place of the old one.
    assert by_gen[g4]["member_ids"] == sorted(m4b)
    assert by_gen[g4]["members_removed"] == [b_id]
    assert by_gen[g4]["members_added"] == []
    assert by_gen[g3]["members_added"] == ["static-1"]
    assert by_gen[g5]["member_count"] == 0 and by_gen[g5]["is_current"]
    assert all(r["protocol"] == "roundrobin" and r["protocol_type"] == "consumer" for r in reb[:4])
    assert all(r["duration_s"] >= 0 for r in reb)

    mem = {r["member_id"]: r for r in pq.read_table(out / "members").to_pylist()
           if r["group"] == GROUP}
    assert set(mem) == set(m1) | set(m2) | set(m3) | set(m4b)
    a_id = next(iter(m1))
    assert mem[a_id]["generations"] == [g1, g2, g3, g4]
    assert mem[a_id]["client_id"] == "client-a"
    assert mem[b_id]["generations"] == [g2, g3]
    assert mem[old_static]["generations"] == [g3, g4]
    assert mem[new_static]["generations"] == [g4]
    assert mem[new_static]["group_instance_id"] == "static-1"
    assert all(r["left_at"] is not None for r in mem.values())

    lag = [r for r in pq.read_table(out / "lag").to_pylist() if r["group"] == GROUP]
    assert {r["partition"] for r in lag} == set(range(PARTITIONS))
    for p in range(PARTITIONS):
        rows = sorted((r for r in lag if r["partition"] == p), key=lambda r: r["bucket_start"])
        last = rows[-1]
        assert (last["committed_offset"], last["log_end_offset"], last["lag"]) == (100, 150, 50)
        # Lag was zero once everything produced had been consumed and committed.
        assert any(r["lag"] == 0 and r["committed_offset"] == 100 for r in rows)
        assert [r["committed_offset"] for r in rows if r["committed_offset"] is not None] == \
            sorted(r["committed_offset"] for r in rows if r["committed_offset"] is not None)
