"""The coordinator scenarios and the manual clock on a streams group, over TCP on a broker
with the admin API, driven with ``kafkalite ctl scenario``: a forced rebalance (every
member moves to a new epoch with its tasks), the partition moved away and loaded back
from its records (NOT_COORDINATOR meanwhile, then the members carry on at their epochs),
a fenced static member (FENCED_INSTANCE_ID; its replacement, which no client holds,
expires when the clock passes its session and the other member takes every task), a
member that does not revoke removed when the clock passes its rebalance timeout, and
``kafkalite groups describe`` showing each step."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread

from .streams_member import APP, SOURCE, StreamsMember
from .test_streams_group_views import cli_out

NOT_COORDINATOR, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID = 16, 25, 82
SESSION_TIMEOUT_MS = 45_000  # group.streams.session.timeout.ms's default
REBALANCE_TIMEOUT_MS = 30_000  # what StreamsMember joins with
STREAMS_INITIAL_DELAY_MS = 200  # group.streams.initial.rebalance.delay.ms's default


def _settle(members: list[StreamsMember]) -> dict[str, list[tuple[str, list[int]]]]:
    """Heartbeat, acknowledging what each is given, until every member owns its target;
    each member's tasks."""
    owned: dict[str, list[tuple[str, list[int]]]] = {m.member_id: [] for m in members}
    for _ in range(20):
        for m in members:
            resp = m.heartbeat()
            if resp.active_tasks is not None:
                owned[m.member_id] = sorted((t.subtopology_id, sorted(t.partitions))
                                            for t in resp.active_tasks)
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
