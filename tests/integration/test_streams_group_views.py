"""A streams group in kafkalite's own views, over TCP on a broker with the admin API and a
manual clock: ``kafkalite groups list|describe`` (StreamsGroupDescribe: members with their
processes and tasks, the lag of the partitions the tasks read), the admin API's
``/api/v1/groups`` and group view, the ``expire-member`` and ``evict-member`` scenarios,
a member's first tasks once the manual clock passes
``group.streams.initial.rebalance.delay.ms`` and its session ending when it passes
``group.streams.session.timeout.ms``."""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread

from .streams_member import APP, SOURCE, UNKNOWN_MEMBER_ID, StreamsMember

ALL_TASKS = [{"subtopology": "0", "partitions": [0, 1]},
             {"subtopology": "1", "partitions": [0, 1]}]
SESSION_TIMEOUT_MS = 45_000  # group.streams.session.timeout.ms's default
STREAMS_INITIAL_DELAY_MS = 200  # group.streams.initial.rebalance.delay.ms's default
ASSIGNMENT_DELAYED = 5


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def cli_out(capsys: Any, *args: str) -> str:
    """What ``kafkalite ARGS`` printed (the broker's own log lines, printed by its thread
    in this process, left out)."""
    from kafkalite.broker.cli.main import main as cli

    capsys.readouterr()
    assert cli(list(args)) == 0
    return "\n".join(line for line in capsys.readouterr().out.splitlines()
                     if not line.startswith("20"))  # log lines start with their date


def test_streams_group_in_the_cli_console_and_on_the_manual_clock(
        kafkalite_factory: Callable[..., BrokerThread], capsys: Any) -> None:
    broker = kafkalite_factory(admin=True, manual_clock=True)
    boot = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic(SOURCE, 2, 1)])[SOURCE].result(10)
    producer = Producer({"bootstrap.servers": boot})
    for i in range(6):
        producer.produce(SOURCE, value=b"v", partition=i % 2)
    producer.flush(10)
    member = StreamsMember(boot)
    other = StreamsMember(boot, client_id="streams-other")
    try:
        # The group's initial rebalance delay runs on the manual clock: the member has no
        # task (ASSIGNMENT_DELAYED) until the clock passes it.
        member.join_only()
        delayed = member.heartbeat()
        assert int(delayed.status[0].status_code) == ASSIGNMENT_DELAYED
        broker.advance(STREAMS_INITIAL_DELAY_MS)
        member.join(joined=True)
        # kafkalite groups: the list, then the group with its member's tasks.
        listed = json.loads(cli_out(capsys, "groups", "list", "--bootstrap", boot, "--json"))
        assert [(g["group_id"], g["group_type"], g["state"]) for g in listed] == [
            (APP, "streams", "Stable")]
        described = json.loads(cli_out(capsys, "groups", "describe", APP, "--bootstrap", boot,
                                       "--json"))
        assert (described["type"], described["state"], described["assignor"]) == (
            "streams", "Stable", "sticky")
        [m] = described["members"]
        assert (m["member_id"], m["client_id"], m["epoch"]) == (
            member.member_id, "streams-member", member.epoch)
        assert m["tasks"] == {"active": {"0": [0, 1], "1": [0, 1]}, "standby": {},
                              "warmup": {}}
        assert m["target_tasks"]["active"] == {"0": [0, 1], "1": [0, 1]}
        # Task (subtopology, p) reads partition p of its source and repartition topics.
        assert m["assignment"] == {SOURCE: [0, 1], f"{APP}-rep": [0, 1]}
        assert [(p["topic"], p["partition"], p["log_end_offset"], p["consumer_id"])
                for p in described["partitions"]] == [
            (f"{APP}-rep", 0, 0, member.member_id), (f"{APP}-rep", 1, 0, member.member_id),
            (SOURCE, 0, 3, member.member_id), (SOURCE, 1, 3, member.member_id)]
        text = cli_out(capsys, "groups", "describe", APP, "--bootstrap", boot)
        assert "ACTIVE" in text and "TARGET-ACTIVE" in text and "0:[0,1]; 1:[0,1]" in text, text

        # The admin API: the list, and the group with its members, tasks and lag.
        groups = get_json(f"{broker.admin_url}/api/v1/groups")["groups"]
        assert [(g["group_id"], g["type"], g["state"], g["members"]) for g in groups] == [
            (APP, "streams", "Stable", 1)]
        view = get_json(f"{broker.admin_url}/api/v1/groups/{APP}")
        assert (view["type"], view["state"], view["topology_epoch"]) == ("streams", "Stable", 1)
        [vm] = view["members"]
        assert (vm["member_id"], vm["member_epoch"], vm["tasks"]["active"]) == (
            member.member_id, member.epoch, ALL_TASKS)
        assert vm["session_deadline_ms"] == view["now_ms"] + SESSION_TIMEOUT_MS
        assert [(r["topic"], r["partition"], r["owner"]) for r in view["lag"]] == [
            (f"{APP}-rep", 0, "streams-member"), (f"{APP}-rep", 1, "streams-member"),
            (SOURCE, 0, "streams-member"), (SOURCE, 1, "streams-member")]

        # The expire-member scenario: a second member's session ends now.
        other.join_only()
        assert len(get_json(f"{broker.admin_url}/api/v1/groups/{APP}")["members"]) == 2
        assert broker.scenario("expire-member", group_id=APP, member_id=other.member_id) == {
            "error": "NONE", "group_id": APP}
        other.heartbeat(expect=UNKNOWN_MEMBER_ID)
        assert broker.scenario("expire-member", group_id=APP, member_id="nobody")["error"] \
            == "UNKNOWN_MEMBER_ID"
        other.member_id, other.epoch = str(uuid.uuid4()), 0
        other.join_only()
        assert broker.scenario("evict-member", group_id=APP, member_id=other.member_id)[
            "error"] == "NONE"
        other.heartbeat(expect=UNKNOWN_MEMBER_ID)
        assert [x["member_id"] for x in
                get_json(f"{broker.admin_url}/api/v1/groups/{APP}")["members"]] == [
            member.member_id]

        # The manual clock: a heartbeat keeps the session; passing its timeout ends it.
        member.heartbeat()
        broker.advance(SESSION_TIMEOUT_MS - 1)
        member.heartbeat()
        broker.advance(SESSION_TIMEOUT_MS + 1)
        member.heartbeat(expect=UNKNOWN_MEMBER_ID)
        view = get_json(f"{broker.admin_url}/api/v1/groups/{APP}")
        assert (view["state"], view["members"]) == ("Empty", [])
    finally:
        member.close()
        other.close()
