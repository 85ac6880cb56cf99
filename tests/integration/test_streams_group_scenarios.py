"""The coordinator scenarios and the manual clock on a streams group, over TCP on a broker
with the admin API, driven with ``kafkalite ctl scenario``: a forced rebalance (every
member moves to a new epoch with its tasks), the partition moved away and loaded back
from its records (NOT_COORDINATOR meanwhile, then the members carry on at their epochs),
a fenced static member (FENCED_INSTANCE_ID; its replacement, which no client holds,
expires when the clock passes its session and the other member takes every task), a
member that does not revoke removed when the clock passes its rebalance timeout, and
``kafkalite groups describe`` showing each step. Then a Kafka Streams 4.4 application
through a forced rebalance and an expired member."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection
from kafkalite.protocol.apis import codec

from ..differential.harness import make
from . import test_streams_group_java as java
from .streams_member import APP, SOURCE, StreamsMember
from .test_kafka_streams import _read_all
from .test_streams_group_views import cli_out

NOT_COORDINATOR, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID = 16, 25, 82
SESSION_TIMEOUT_MS = 45_000  # group.streams.session.timeout.ms's default
REBALANCE_TIMEOUT_MS = 30_000  # what StreamsMember joins with
STREAMS_INITIAL_DELAY_MS = 200  # group.streams.initial.rebalance.delay.ms's default


def _settle(members: list[StreamsMember]) -> dict[str, list[tuple[str, list[int]]]]:
    """Heartbeat, acknowledging what each is given, until every member owns its target;
    each member's tasks (an answer carries them only when they changed)."""
    owned: dict[str, list[tuple[str, list[int]]]] = {m.member_id: m.owned for m in members}
    for _ in range(20):
        for m in members:
            resp = m.heartbeat()
            if resp.active_tasks is not None:
                m.owned = owned[m.member_id] = sorted(
                    (t.subtopology_id, sorted(t.partitions)) for t in resp.active_tasks)
                m.heartbeat(active_tasks=[dict(subtopology_id=s, partitions=ps)
                                          for s, ps in owned[m.member_id]],
                            standby_tasks=[], warmup_tasks=[])
        if len({m.epoch for m in members}) == 1 and \
                sum(len(ps) for ts in owned.values() for _s, ps in ts) == 4:
            return owned
    raise AssertionError(f"the group never settled: {owned}")


def _ctl(capsys: Any, broker: BrokerThread, *args: str) -> dict[str, Any]:
    out = cli_out(capsys, "ctl", "--admin", broker.admin_url, "scenario", *args)
    result: dict[str, Any] = json.loads(out)
    return result


def _describe(capsys: Any, broker: BrokerThread) -> Any:
    return json.loads(cli_out(capsys, "groups", "describe", APP, "--bootstrap",
                              broker.bootstrap, "--json"))


def test_scenarios_and_the_clock_on_a_streams_group(
        kafkalite_factory: Callable[..., BrokerThread], capsys: Any) -> None:
    broker = kafkalite_factory(admin=True, manual_clock=True)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(SOURCE, 2, 1)])[SOURCE].result(10)
    a = StreamsMember(broker.bootstrap, "streams-a")
    b = StreamsMember(broker.bootstrap, "streams-b")
    c = StreamsMember(broker.bootstrap, "streams-c")
    try:
        # The group's initial rebalance delay runs on the manual clock.
        a.join_only(instance_id="instance-a")
        broker.advance(STREAMS_INITIAL_DELAY_MS)
        a.join(instance_id="instance-a", joined=True)
        b.join_only()
        before = _settle([a, b])
        epoch = a.epoch

        # A forced rebalance: a new epoch for both, each keeping its tasks.
        assert _ctl(capsys, broker, "rebalance", "--group", APP) == {
            "error": "NONE", "group_id": APP}
        assert _describe(capsys, broker)["state"] == "Reconciling"
        assert _settle([a, b]) == before
        assert (a.epoch, b.epoch) == (epoch + 1, epoch + 1)
        described = _describe(capsys, broker)
        assert described["state"] == "Stable"
        assert {m["member_id"]: m["epoch"] for m in described["members"]} == {
            a.member_id: epoch + 1, b.member_id: epoch + 1}

        # The partition moves away for a while, then is loaded back from its records.
        moved = _ctl(capsys, broker, "partition-moved", "--group", APP, "--for", "500ms")
        assert moved["answers"] == "NOT_COORDINATOR"
        a.heartbeat(expect=NOT_COORDINATOR)
        broker.advance(500)
        for m in (a, b):
            assert m.heartbeat().member_epoch == epoch + 1
        assert _describe(capsys, broker)["state"] == "Stable"

        # a's instance id is taken over: a is fenced, its replacement holds a's tasks.
        fenced = _ctl(capsys, broker, "fence-static-member", "--group", APP,
                      "--instance", "instance-a")
        assert fenced["error"] == "NONE" and fenced["member_id"] not in (a.member_id, None)
        a.heartbeat(expect=FENCED_INSTANCE_ID)
        described = _describe(capsys, broker)
        replacement = next(m for m in described["members"]
                           if m["member_id"] == fenced["member_id"])
        assert replacement["tasks"]["active"] == {
            s: ps for s, ps in before[a.member_id]}
        assert _ctl(capsys, broker, "fence-static-member", "--group", APP,
                    "--instance", "nobody")["error"] == "UNKNOWN_MEMBER_ID"

        # Nobody heartbeats as the replacement: on the clock its session ends while b's
        # goes on, and b takes every task.
        broker.advance(SESSION_TIMEOUT_MS - 5000)
        b.heartbeat()
        broker.advance(5000)
        owned = _settle([b])
        assert owned[b.member_id] == [("0", [0, 1]), ("1", [0, 1])]
        assert [m["member_id"] for m in _describe(capsys, broker)["members"]] == [
            b.member_id]

        # The rebalance timeout on the clock: c joins, b heartbeats on without giving up
        # the tasks c is to get; past b's rebalance timeout (30 s) b is removed.
        c.join_only()
        resp = b.heartbeat(active_tasks=[dict(subtopology_id=s, partitions=ps)
                                         for s, ps in owned[b.member_id]],
                           standby_tasks=[], warmup_tasks=[])
        assert sum(len(t.partitions) for t in resp.active_tasks) == 2  # revoke two
        for _ in range(2):
            broker.advance(REBALANCE_TIMEOUT_MS // 2 - 1000)
            b.heartbeat()  # still owning all four: within the timeout, nothing happens
        broker.advance(2000)
        b.heartbeat(expect=UNKNOWN_MEMBER_ID)
        assert _settle([c])[c.member_id] == [("0", [0, 1]), ("1", [0, 1])]
    finally:
        for m in (a, b, c):
            m.close()


def _java_group(broker: BrokerThread) -> tuple[str, int, list[tuple[str, int]]]:
    conn = RawConnection(broker.bootstrap)
    try:
        d = conn.call(make(codec(89, 0).request_type, dict(
            group_ids=[java.APP], include_authorized_operations=False)))
    finally:
        conn.close()
    (g,) = d.groups
    return g.group_state, g.group_epoch, sorted((m.member_id, m.member_epoch)
                                                for m in g.members)


@pytest.mark.timeout(600)
def test_kafka_streams_app_through_a_forced_rebalance_and_an_expired_member(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    """Two Kafka Streams 4.4 instances (word count, exactly_once_v2): a forced rebalance
    moves both to a new epoch with their tasks, an expired member's instance joins again
    and the tasks are split again, and the counts are exact."""
    broker = make_broker({"group.streams.heartbeat.interval.ms": "500",
                          "group.streams.min.heartbeat.interval.ms": "500"})
    boot = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": boot})
    for f in admin.create_topics([NewTopic(java.IN, 4, 1), NewTopic(java.OUT, 2, 1)]).values():
        f.result(10)
    instances = [java._Instance(boot, tmp_path / n, n) for n in ("a", "b")]
    producer = Producer({"bootstrap.servers": boot})

    def produce(lines: list[str], first: int) -> None:
        for i, line in enumerate(lines, first):
            producer.produce(java.IN, key=f"k{i}".encode(), value=line.encode())
        assert producer.flush(10) == 0

    def counted(lines: list[str]) -> Callable[[], bool]:
        return lambda: dict(_read_all(boot, java.OUT)) == dict(java._words(lines))

    def split() -> bool:
        return [len(i.tasks() or ()) for i in instances] == [4, 4]

    lines, half = java.LINES, len(java.LINES) // 2
    try:
        java._wait(split, 180, "the two instances did not split the tasks", instances)
        tasks = [i.tasks() for i in instances]
        produce(lines[:half], 0)
        java._wait(counted(lines[:half]), 120, "the counts are wrong", instances)
        state, epoch, members = _java_group(broker)
        assert state == "Stable"

        assert broker.scenario("rebalance", group_id=java.APP)["error"] == "NONE"
        java._wait(lambda: _java_group(broker) == (
            "Stable", epoch + 1, [(m, epoch + 1) for m, _e in members]), 60,
            "the instances did not reconcile to the new epoch", instances)
        assert [i.tasks() for i in instances] == tasks

        expired = members[0][0]
        assert broker.scenario("expire-member", group_id=java.APP, member_id=expired)[
            "error"] == "NONE"
        java._wait(lambda: (g := _java_group(broker))[0] == "Stable" and len(g[2]) == 2
                   and split(), 120, "the expired instance did not come back", instances)
        produce(lines[half:], half)
        java._wait(counted(lines), 120, "the counts after the scenarios are wrong", instances)
    finally:
        outs = [i.close() for i in instances]
    java.closed_cleanly(instances, outs)
    by_word = java.counts_by_word(boot, java.OUT)
    assert by_word == {
        w: list(range(1, n + 1)) for w, n in java._words(lines).items()}
