"""What the replica tests share: a three-node cluster with replicated internal topics,
topic creation, each replica's log end, reading a topic back, an idempotent producer
loop and the exactly-once check."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread

NODES = 3


@pytest.fixture
def cluster(make_broker: Callable[..., BrokerThread]) -> BrokerThread:
    return make_broker({"group.initial.rebalance.delay.ms": "0",
                        "offsets.topic.replication.factor": "3",
                        "offsets.topic.num.partitions": "3",
                        "transaction.state.log.replication.factor": "3",
                        "default.replication.factor": "3"}, nodes=NODES)


def addresses(cluster: BrokerThread) -> str:
    return ",".join(cluster.bootstraps)


def create(cluster: BrokerThread, topic: str, partitions: int, rf: int = 3,
            **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": addresses(cluster)})
    admin.create_topics([NewTopic(topic, partitions, rf, config=configs)])[topic].result(10)


def replica_ends(cluster: BrokerThread, topic: str, partition: int) -> dict[int, int]:
    """Each open replica's log end offset, by node."""
    def ends() -> dict[int, int]:
        manager = cluster.inner.replicas
        assert manager is not None
        rs = manager.sets[(topic, partition)]  # type: ignore[attr-defined]
        return {n: plog.log_end_offset for n, plog in rs.logs.items()}
    return cluster.call(ends)


def read_all(cluster: BrokerThread, topic: str, partitions: int, expect: int,
             timeout: float = 30) -> dict[int, list[bytes]]:
    c = Consumer({"bootstrap.servers": addresses(cluster),
                  "group.id": f"read-{topic}-{time.time()}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + timeout
    try:
        while sum(map(len, got.values())) < expect and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got[m.partition()].append(m.value())
        # Anything beyond what was expected would be a duplicate: read a little more.
        end = time.monotonic() + 1
        while time.monotonic() < end:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got[m.partition()].append(m.value())
    finally:
        c.close()
    return got


def produce_loop(boot: str, topic: str, partitions: int, stop: threading.Event,
                  acked: dict[int, list[bytes]], errors: list[Any], limit: int) -> None:
    """An idempotent acks=all producer writing numbered records round the partitions
    until ``stop`` (or ``limit`` records); what was acknowledged, by partition."""
    producer = Producer({"bootstrap.servers": boot, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 2, "message.timeout.ms": 60000})

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[msg.partition()].append(msg.value())

    i = 0
    while not stop.is_set() and i < limit:
        producer.produce(topic, f"{i:08d}".encode(), partition=i % partitions,
                         on_delivery=report)
        producer.poll(0)
        i += 1
        if i % 50 == 0:
            time.sleep(0.01)
    assert producer.flush(60) == 0


def check_exactly_once(got: dict[int, list[bytes]], acked: dict[int, list[bytes]]) -> None:
    for p, values in got.items():
        assert len(values) == len(set(values)), f"partition {p}: duplicates"
        assert values == sorted(values), f"partition {p}: out of order"
        assert set(acked[p]) <= set(values), f"partition {p}: acknowledged record lost"
