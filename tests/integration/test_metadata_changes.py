"""Real clients over TCP see every topic change in the next Metadata (the broker keeps
each topic's encoded entry between changes), and a restarted broker, whose logs open on
first use, serves what it held before to a real producer and consumer."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread


def partitions_of(admin: AdminClient) -> dict[str, int]:
    md = admin.list_topics(timeout=10)
    return {name: len(t.partitions) for name, t in md.topics.items()
            if not name.startswith("__")}


def test_confluent_admin_sees_each_change_at_once(tmp_path: Path) -> None:
    with BrokerThread(tmp_path / "data", {"auto.create.topics.enable": "false"}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic(f"t{i}", 2, 1) for i in range(20)]).values():
            f.result(10)
        assert partitions_of(admin) == {f"t{i}": 2 for i in range(20)}
        admin.create_partitions([NewPartitions("t3", 6)])["t3"].result(10)
        assert partitions_of(admin)["t3"] == 6
        admin.delete_topics(["t4"])["t4"].result(10)
        assert "t4" not in partitions_of(admin)
        admin.create_topics([NewTopic("t4", 3, 1)])["t4"].result(10)
        assert partitions_of(admin)["t4"] == 3
        one = admin.list_topics("t3", timeout=10).topics["t3"]
        assert (one.error, sorted(one.partitions)) == (None, list(range(6)))


def test_restarted_broker_serves_its_logs_opened_on_first_use(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with BrokerThread(data) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(f"r{i}", 4, 1) for i in range(10)])["r7"].result(10)
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
        for i in range(40):
            p.produce("r7", f"m{i}".encode(), partition=i % 4)
        assert p.flush(10) == 0
    with BrokerThread(data) as b:
        assert b.broker is not None
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe(["r7"])
        got: list[bytes] = []
        for _ in range(100):
            if len(got) == 40:
                break
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        c.close()
        assert sorted(got) == sorted(f"m{i}".encode() for i in range(40))
