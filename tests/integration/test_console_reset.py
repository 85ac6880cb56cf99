"""Resetting a group's offsets from the console's API, checked with a real client's
committed offsets: refused while the group has a member, then to earliest, to an offset,
to a time and to latest once it is empty; refused by the ACLs for the admin principal."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread


def _reset(b: BrokerThread, group: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(f"{b.admin_url}/api/v1/groups/{group}/reset-offsets",
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        out: dict[str, Any] = json.loads(r.read())
        return out


def _committed(b: BrokerThread, group: str, topic: str, n: int) -> list[int]:
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(n)], timeout=10)
        return [tp.offset for tp in got]
    finally:
        c.close()


def _consume(b: BrokerThread, group: str, topic: str, count: int) -> Consumer:
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            seen += 1
            c.commit(m, asynchronous=False)
    assert seen == count
    return c


def test_reset_offsets_only_while_the_group_is_empty(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory(admin=True)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("ledger", 1, 1)])["ledger"].result(10)
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    for i in range(20):
        p.produce("ledger", key=f"k{i}".encode(), value=b"v", timestamp=1_700_000_000_000 + i)
        p.flush(10)
    c = _consume(b, "lagging", "ledger", 12)
    with pytest.raises(urllib.error.HTTPError) as e:
        _reset(b, "lagging", {"topic": "ledger", "to": "earliest"})
    assert e.value.code == 409
    assert "can only be reset while it has no members" in e.value.read().decode()
    c.close()
    assert _committed(b, "lagging", "ledger", 1) == [12]
    dry = _reset(b, "lagging", {"topic": "ledger", "to": "earliest", "dry_run": True})
    assert dry["partitions"] == [{"partition": 0, "offset": 0, "error": None}]
    assert _committed(b, "lagging", "ledger", 1) == [12]
    _reset(b, "lagging", {"topic": "ledger", "to": "earliest"})
    assert _committed(b, "lagging", "ledger", 1) == [0]
    _reset(b, "lagging", {"topic": "ledger", "to": "offset", "offset": 7})
    assert _committed(b, "lagging", "ledger", 1) == [7]
    _reset(b, "lagging", {"topic": "ledger", "to": "offset", "offset": 999})  # clamped
    assert _committed(b, "lagging", "ledger", 1) == [20]
    _reset(b, "lagging", {"topic": "ledger", "to": "timestamp",
                          "timestamp": 1_700_000_000_005})
    assert _committed(b, "lagging", "ledger", 1) == [5]
    _reset(b, "lagging", {"topic": "ledger", "to": "latest"})
    assert _committed(b, "lagging", "ledger", 1) == [20]
    with pytest.raises(urllib.error.HTTPError) as e:
        _reset(b, "lagging", {"topic": "ledger", "to": "sideways"})
    assert e.value.code == 400


def test_reset_needs_read_on_the_group_for_the_admin_principal(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    b = kafkalite_factory({"authorizer.class.name":
                           "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                           "super.users": "User:ANONYMOUS",
                           "admin.principal": "User:console"}, admin=True)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("t", 1, 1)])["t"].result(10)
    with pytest.raises(urllib.error.HTTPError) as e:
        _reset(b, "g", {"topic": "t", "to": "earliest"})
    assert e.value.code == 403
    assert "User:console is not authorized to Read Group 'g'" in e.value.read().decode()
