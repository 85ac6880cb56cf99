"""The admin HTTP API against a real broker: reads, fault rules, and bad input (4xx with a
clear message, the broker carries on)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalite.broker.admin_http.address import HostPort, parse_admin_listener
from kafkalite.broker.admin_http.lag import LagBoard
from kafkalite.broker.admin_http.views import BadRequest
from kafkalite.broker.testing.fixtures import BrokerThread


def call(url: str, method: str = "GET", body: Any = None, raw: bytes | None = None
         ) -> tuple[int, Any]:
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


LAG_ROW = {"group": "g1", "topic": "orders", "partition": 0, "committed_offset": 10,
           "log_end_offset": 15, "lag": 5, "as_of": "2026-11-26T10:00:00+00:00"}


@pytest.fixture
def broker(make_broker: Callable[..., BrokerThread]) -> BrokerThread:
    return make_broker(admin=True)


@pytest.fixture
def admin(broker: BrokerThread) -> str:
    return broker.admin_url


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for v in values:
        p.produce(topic, key=b"k", value=v, headers=[("h", b"1")])
    assert p.flush(10) == 0


def test_topics_partitions_and_messages(broker: BrokerThread, admin: str) -> None:
    produce(broker.bootstrap, "orders", [json.dumps({"id": i}).encode() for i in range(5)])
    status, body = call(f"{admin}/api/v1/topics")
    assert status == 200
    orders = next(t for t in body["topics"] if t["name"] == "orders")
    assert orders["messages"] == 5 and orders["size_bytes"] > 0
    status, topic = call(f"{admin}/api/v1/topics/orders")
    assert topic["partitions"][0]["log_end_offset"] == 5
    status, msgs = call(f"{admin}/api/v1/topics/orders/partitions/0/messages?offset=2&limit=2")
    assert status == 200
    assert [m["offset"] for m in msgs["messages"]] == [2, 3]
    first = msgs["messages"][0]
    assert first["value"]["json"] == {"id": 2} and first["key"]["text"] == "k"
    assert first["headers"] == [{"key": "h", "value": {"size": 1, "hex": "31", "text": "1",
                                                       "json": 1}}]
    status, cluster = call(f"{admin}/api/v1/cluster")
    assert cluster["bootstrap"] == broker.bootstrap


def test_groups_with_members_deadlines_lag_and_history(broker: BrokerThread,
                                                       admin: str) -> None:
    produce(broker.bootstrap, "orders", [b"a", b"b", b"c"])
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g1",
                  "client.id": "reader", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000,
                  "heartbeat.interval.ms": 200})
    try:
        c.subscribe(["orders"])
        got = 0
        deadline = time.monotonic() + 30
        while got < 3 and time.monotonic() < deadline:
            m = c.poll(0.2)
            got += m is not None and m.error() is None
        assert got == 3
        c.commit(offsets=[TopicPartition("orders", 0, 2)], asynchronous=False)
        status, listing = call(f"{admin}/api/v1/groups")
        assert status == 200
        assert [(g["group_id"], g["state"], g["members"]) for g in listing["groups"]] == \
            [("g1", "Stable", 1)]
        status, g = call(f"{admin}/api/v1/groups/g1")
        assert status == 200 and g["protocol_type"] == "consumer"
        (member,) = g["members"]
        assert member["client_id"] == "reader" and member["leader"]
        assert member["assignment"] == [{"topic": "orders", "partitions": [0]}]
        assert g["now_ms"] < member["session_deadline_ms"] <= g["now_ms"] + 6000
        assert 0 <= member["since_heartbeat_ms"] <= 6000
        assert g["lag"] == [{"topic": "orders", "partition": 0, "committed": 2,
                             "log_end_offset": 3, "lag": 1, "owner": "reader"}]
        assert g["history"][0]["generation"] == g["generation"]
        assert g["history"][0]["members"] == [member["member_id"]]
    finally:
        c.close()
    status, g = call(f"{admin}/api/v1/groups/g1")
    assert (g["state"], g["members"]) == ("Empty", [])
    # Newest first: the group emptied after its last generation.
    assert g["history"][0]["generation"] > g["history"][1]["generation"]


def test_consumer_groups_are_listed_and_described(broker: BrokerThread, admin: str) -> None:
    """A KIP-848 group shows beside classic ones, with its epochs and member states."""
    produce(broker.bootstrap, "cg-orders", [b"x"])
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cg-http",
                  "group.protocol": "consumer"})
    try:
        c.subscribe(["cg-orders"])
        for _ in range(100):
            c.poll(0.1)
            if c.assignment():
                break
        status, listing = call(f"{admin}/api/v1/groups")
        assert status == 200
        row = next(g for g in listing["groups"] if g["group_id"] == "cg-http")
        assert (row["type"], row["state"], row["members"]) == ("consumer", "Stable", 1)
        status, group = call(f"{admin}/api/v1/groups/cg-http")
        assert status == 200
        [member] = group["members"]
        assert (group["type"], member["protocol"], member["state"]) == (
            "consumer", "consumer", "STABLE")
        assert member["member_epoch"] == group["group_epoch"] == group["assignment_epoch"]
        assert member["assignment"] == [{"topic": "cg-orders", "partitions": [0]}]
    finally:
        c.close()


def test_fault_rules_over_http(admin: str) -> None:
    status, rule = call(f"{admin}/api/v1/faults", "POST",
                        {"api": "Heartbeat", "error": "REBALANCE_IN_PROGRESS", "count": 3})
    assert status == 201 and rule["api"] == "Heartbeat" and rule["count"] == 3
    assert rule["error"] == "REBALANCE_IN_PROGRESS"
    status, listing = call(f"{admin}/api/v1/faults")
    assert [r["id"] for r in listing["rules"]] == [rule["id"]]
    assert call(f"{admin}/api/v1/faults/{rule['id']}", "DELETE")[0] == 200
    call(f"{admin}/api/v1/faults", "POST", {"api": "Produce", "action": "delay",
                                             "delay_ms": 10})
    assert call(f"{admin}/api/v1/faults", "DELETE") == (200, {"removed": 1})


@pytest.mark.parametrize("method, path, body, status, message", [
    ("POST", "/api/v1/faults", {"api": "NoSuchApi", "error": "NOT_COORDINATOR"}, 400,
     "unknown api 'NoSuchApi'"),
    ("POST", "/api/v1/faults", b"{not json", 400, "malformed JSON body"),
    ("POST", "/api/v1/faults", {"api": "Heartbeat", "error": "NOPE"}, 400, "unknown error"),
    ("DELETE", "/api/v1/faults/9999", None, 404, "no fault rule with id 9999"),
    ("DELETE", "/api/v1/faults/abc", None, 400, "rule id must be an integer"),
    ("GET", "/api/v1/topics/orders/partitions/0/messages?offset=99", None, 400,
     "offset 99 is out of range"),
    ("GET", "/api/v1/topics/orders/partitions/0/messages?offset=x", None, 400,
     "offset must be an integer"),
    ("GET", "/api/v1/topics/orders/partitions/7/messages", None, 404, "has partitions 0..0"),
    ("GET", "/api/v1/topics/nope", None, 404, "unknown topic 'nope'"),
    ("GET", "/api/v1/groups/nope", None, 404, "unknown group 'nope'"),
    ("GET", "/api/v1/nothing", None, 404, "no such endpoint"),
    ("POST", "/api/v1/clock/advance", {"ms": 10}, 400, "runs on the system clock"),
    ("POST", "/api/v1/scenarios/rebalance", {}, 400, "group_id is required"),
    ("POST", "/api/v1/scenarios/nope", {}, 404, "unknown scenario 'nope'"),
    ("POST", "/api/v1/scenarios/partition-moved", {"group_id": "g"}, 400,
     "for_ms is required"),
    ("POST", "/api/v1/scenarios/partition-loading", {"partition": 99, "for_ms": 5}, 400,
     "__consumer_offsets has"),
    ("POST", "/api/v1/faults/1", None, 405, "Method Not Allowed"),
    ("POST", "/api/v1/clock/advance", {"ms": "ten"}, 400, "ms must be an integer"),
    ("POST", "/api/v1/lag", {"rows": {}}, 400, 'a JSON object {"rows": [...]}'),
    ("POST", "/api/v1/lag", b"[1, 2", 400, "malformed JSON body"),
    ("POST", "/api/v1/lag", {"rows": [1]}, 400, "rows[0] must be a JSON object"),
    ("POST", "/api/v1/lag", {"rows": [{"group": "g"}]}, 400, "rows[0].topic must be"),
    ("POST", "/api/v1/lag", {"rows": [dict(LAG_ROW, partition=True)]}, 400,
     "rows[0].partition must be an integer"),
    ("POST", "/api/v1/lag", {"rows": [LAG_ROW, dict(LAG_ROW, partition=-1)]}, 400,
     "rows[1].partition must be 0 or more"),
    ("POST", "/api/v1/lag", {"rows": [LAG_ROW] * 5001}, 400, "at most 5000 rows per post"),
])
def test_bad_input_gets_a_clear_4xx(broker: BrokerThread, admin: str, method: str, path: str,
                                    body: Any, status: int, message: str) -> None:
    produce(broker.bootstrap, "orders", [b"x"])
    raw = body if isinstance(body, bytes) else None
    got, answer = call(admin + path, method, None if raw else body, raw)
    assert got == status, answer
    assert message in answer["error"], answer
    # The broker carries on.
    assert call(f"{admin}/api/v1/cluster")[0] == 200


def test_lag_rows_posted_by_the_stream_are_kept_per_partition(admin: str) -> None:
    assert call(f"{admin}/api/v1/lag") == (200, {"rows": []})
    rows = [dict(LAG_ROW, partition=1, lag=7), LAG_ROW, dict(LAG_ROW, group="other")]
    assert call(f"{admin}/api/v1/lag", "POST", {"rows": rows}) == (200, {"accepted": 3})
    newer = dict(LAG_ROW, committed_offset=12, lag=3, as_of="2026-11-26T10:00:05+00:00")
    assert call(f"{admin}/api/v1/lag", "POST", {"rows": [newer]}) == (200, {"accepted": 1})
    status, body = call(f"{admin}/api/v1/lag?group=g1")
    assert status == 200
    assert body["rows"] == [newer, dict(LAG_ROW, partition=1, lag=7)]
    assert [r["group"] for r in call(f"{admin}/api/v1/lag")[1]["rows"]] == ["g1", "g1", "other"]
    # A post with one bad row keeps none of its rows.
    bad = [dict(LAG_ROW, group="third"), dict(LAG_ROW, lag="x")]
    assert call(f"{admin}/api/v1/lag", "POST", {"rows": bad})[0] == 400
    assert call(f"{admin}/api/v1/lag?group=third")[1] == {"rows": []}


def test_the_lag_board_refuses_rows_past_its_bound() -> None:
    board = LagBoard(max_rows=2)
    assert board.post({"rows": [LAG_ROW, dict(LAG_ROW, partition=1)]}) == 2
    assert board.post({"rows": [dict(LAG_ROW, lag=1)]}) == 1  # a known partition: replaced
    with pytest.raises(BadRequest, match="at most 2 partitions"):
        board.post({"rows": [dict(LAG_ROW, partition=2)]})
    assert [r["lag"] for r in board.rows()] == [1, 5]


def test_console_and_static_files_are_served(admin: str) -> None:
    with urllib.request.urlopen(admin + "/", timeout=10) as resp:
        html = resp.read().decode()
    assert "console.js" in html and "http" not in html.replace("http-equiv", "")
    with urllib.request.urlopen(admin + "/static/console.js", timeout=10) as resp:
        assert b"/api/v1" in resp.read()


@pytest.mark.parametrize("value, expected", [
    ("", None), ("127.0.0.1:8080", HostPort("127.0.0.1", 8080)),
    (":0", HostPort("127.0.0.1", 0)), ("http://[::1]:9000/", HostPort("::1", 9000)),
])
def test_admin_listener_setting(value: str, expected: HostPort | None) -> None:
    assert parse_admin_listener(value) == expected


def test_admin_listener_setting_refuses_garbage() -> None:
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_admin_listener("localhost")


def ctl(admin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalite", "ctl", "--admin", admin, *args],
                          capture_output=True, text=True, timeout=60)


def test_ctl_fault_add_list_clear(admin: str) -> None:
    added = ctl(admin, "fault", "add", "--api", "Heartbeat", "--error",
                "REBALANCE_IN_PROGRESS", "--count", "3")
    assert added.returncode == 0, added.stderr
    assert "Heartbeat REBALANCE_IN_PROGRESS 3 left" in added.stdout
    listed = ctl(admin, "fault", "list")
    assert "Heartbeat REBALANCE_IN_PROGRESS" in listed.stdout and "fired 0" in listed.stdout
    bad = ctl(admin, "fault", "add", "--api", "Heartbeet", "--error", "NOT_COORDINATOR")
    assert bad.returncode == 1 and "400: unknown api 'Heartbeet'" in bad.stderr
    cleared = ctl(admin, "fault", "clear")
    assert cleared.stdout.strip() == "removed 1 rule"
    assert ctl(admin, "fault", "list").stdout.strip() == "no fault rules"
    refused = ctl(admin, "clock", "advance", "45s")
    assert refused.returncode == 1 and "runs on the system clock" in refused.stderr


def test_ctl_says_when_the_broker_is_unreachable() -> None:
    out = ctl("http://127.0.0.1:9", "fault", "list")
    assert out.returncode == 1 and "cannot reach the admin listener" in out.stderr


def test_restart_keeps_the_admin_listener_address(broker: BrokerThread, admin: str) -> None:
    broker.restart()
    assert broker.admin_url == admin
    assert call(f"{admin}/api/v1/cluster")[1]["bootstrap"] == broker.bootstrap
