"""``kafkalite groups list|describe`` as a process, against a group of two confluent-kafka
consumers with committed offsets: members, their decoded assignments and the lag of each
partition, as kafka-consumer-groups shows them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread

from .kip848_helpers import FAST_CONSUMER_GROUPS

TOPIC, GROUP, PARTITIONS, PER_PARTITION = "cli-t", "cli-g", 4, 10


def kafkalite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalite", *args], capture_output=True,
                          text=True, timeout=60)


def test_groups_describe_shows_members_assignments_and_lag(broker: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(PARTITIONS * PER_PARTITION):
        p.produce(TOPIC, value=b"v", partition=i % PARTITIONS)
    assert p.flush(10) == 0

    consumers = [Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP,
                           "client.id": f"member-{i}", "enable.auto.commit": False,
                           "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                           "heartbeat.interval.ms": 300})
                 for i in range(2)]
    try:
        for c in consumers:
            c.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        owned: dict[str, list[int]] = {}
        while time.monotonic() < deadline:
            for c in consumers:
                c.poll(0.1)
            owned = {f"member-{i}": sorted(tp.partition for tp in c.assignment())
                     for i, c in enumerate(consumers)}
            if all(owned.values()) and sum(map(len, owned.values())) == PARTITIONS:
                break
        assert sorted(p for ps in owned.values() for p in ps) == list(range(PARTITIONS))
        # Commit partition n at PER_PARTITION - n: its lag is n; partition 3 never commits.
        for i, c in enumerate(consumers):
            offsets = [TopicPartition(TOPIC, n, PER_PARTITION - n)
                       for n in owned[f"member-{i}"] if n != 3]
            if offsets:
                c.commit(offsets=offsets, asynchronous=False)

        listed = kafkalite("groups", "list", "--bootstrap", broker.bootstrap, "--json")
        assert listed.returncode == 0, listed.stderr
        assert {"group_id": GROUP, "group_type": "classic", "state": "Stable",
                "protocol_type": "consumer"} in json.loads(listed.stdout)

        out = kafkalite("groups", "describe", GROUP, "--bootstrap", broker.bootstrap, "--json")
        assert out.returncode == 0, out.stderr
        view: dict[str, Any] = json.loads(out.stdout)
        assert (view["group"], view["type"], view["state"], view["protocol_type"]) == (
            GROUP, "classic", "Stable", "consumer")
        assert view["coordinator"]["id"] == 1
        members = {m["client_id"]: m for m in view["members"]}
        assert {c: m["assignment"] for c, m in members.items()} == {
            c: {TOPIC: ps} for c, ps in owned.items()}
        assert all(m["subscription"] == [TOPIC] and m["epoch"] is None
                   for m in members.values())
        owner_of = {n: members[c]["member_id"] for c, ps in owned.items() for n in ps}
        assert [(r["partition"], r["current_offset"], r["log_end_offset"], r["lag"],
                 r["consumer_id"]) for r in view["partitions"]] == [
            (n, None if n == 3 else PER_PARTITION - n, PER_PARTITION, None if n == 3 else n,
             owner_of[n]) for n in range(PARTITIONS)]

        text = kafkalite("groups", "describe", GROUP, "--bootstrap", broker.bootstrap)
        assert text.returncode == 0, text.stderr
        lines = text.stdout.splitlines()
        assert lines[0].split()[:3] == ["GROUP", "COORDINATOR", "(ID)"]
        assert lines[1].split()[0] == GROUP and "Stable" in lines[1]
        for client, parts in owned.items():
            row = next(line for line in lines if line.startswith(members[client]["member_id"]))
            assert f"{TOPIC}({','.join(map(str, parts))})" in row.split()
        lag_rows = [line.split() for line in lines if line.startswith(f"{TOPIC} ")]
        assert [(r[1], r[2], r[3], r[4]) for r in lag_rows] == [
            ("0", "10", "10", "0"), ("1", "9", "10", "1"), ("2", "8", "10", "2"),
            ("3", "-", "10", "-")]
    finally:
        for c in consumers:
            c.close()

    missing = kafkalite("groups", "describe", "no-such-group", "--bootstrap", broker.bootstrap)
    assert missing.returncode == 1
    assert "does not exist" in missing.stderr


def test_groups_describe_shows_a_consumer_group(
        make_broker: Callable[..., BrokerThread]) -> None:
    """A KIP-848 group (confluent-kafka, group.protocol=consumer): the describe comes from
    ConsumerGroupDescribe, with the group and member epochs and the committed offsets."""
    broker = make_broker(FAST_CONSUMER_GROUPS)
    topic, group = "cli-cg-t", "cli-cg"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(PARTITIONS * PER_PARTITION):
        p.produce(topic, value=b"v", partition=i % PARTITIONS)
    assert p.flush(10) == 0
    consumers = [Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                           "group.protocol": "consumer", "client.id": f"cg-{i}",
                           "enable.auto.commit": False, "auto.offset.reset": "earliest"})
                 for i in range(2)]
    try:
        for c in consumers:
            c.subscribe([topic])
        deadline = time.monotonic() + 30
        owned: dict[str, list[int]] = {}
        while time.monotonic() < deadline:
            for c in consumers:
                c.poll(0.1)
            owned = {f"cg-{i}": sorted(tp.partition for tp in c.assignment())
                     for i, c in enumerate(consumers)}
            if all(owned.values()) and sum(map(len, owned.values())) == PARTITIONS:
                break
        for i, c in enumerate(consumers):
            # OffsetCommit v9 with the member epoch.
            c.commit(offsets=[TopicPartition(topic, n, PER_PARTITION - n)
                              for n in owned[f"cg-{i}"]], asynchronous=False)
        out = kafkalite("groups", "describe", group, "--bootstrap", broker.bootstrap, "--json")
        assert out.returncode == 0, out.stderr
        view: dict[str, Any] = json.loads(out.stdout)
        assert (view["group"], view["type"], view["state"], view["assignor"]) == (
            group, "consumer", "Stable", "uniform")
        members = {m["client_id"]: m for m in view["members"]}
        assert {c: m["assignment"] for c, m in members.items()} == {
            c: {topic: ps} for c, ps in owned.items()}
        assert {m["epoch"] for m in members.values()} == {view["group_epoch"]}
        assert view["assignment_epoch"] == view["group_epoch"]
        assert [(r["partition"], r["current_offset"], r["lag"]) for r in view["partitions"]] == [
            (n, PER_PARTITION - n, n) for n in range(PARTITIONS)]
        listed = kafkalite("groups", "list", "--bootstrap", broker.bootstrap, "--json")
        assert {"group_id": group, "group_type": "consumer", "state": "Stable",
                "protocol_type": "consumer"} in json.loads(listed.stdout)
    finally:
        for c in consumers:
            c.close()
