"""Kafka's guard-rails hold at sizes: ``num.partitions`` gives every auto-created topic
and every CreateTopics asking for -1 partitions its count (here 1,000 a topic, a few
thousand partitions on the broker), and ``max.connections.per.ip`` and
``max.connections`` close the connection past them while hundreds are open, with real
clients (confluent-kafka, kafka-python) at the limit still producing and a new one
served once a place is freed. Every loop is bounded."""

from __future__ import annotations

import resource
import socket
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KNewTopic

from kafkalite.broker.testing.fixtures import BrokerThread

from .test_limits import closed_within, connect, connections, served

DEFAULT_PARTITIONS = 1000


def partition_counts(admin: AdminClient) -> dict[str, int]:
    md = admin.list_topics(timeout=30)
    return {name: len(t.partitions) for name, t in md.topics.items()
            if not name.startswith("__")}


def test_num_partitions_for_auto_created_and_defaulted_topics(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker({"num.partitions": str(DEFAULT_PARTITIONS)})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    # Auto-created by a producer's Metadata (confluent-kafka, then kafka-python).
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for p in (0, DEFAULT_PARTITIONS - 1):
        for _ in range(3):  # the first may go out before the topic's metadata is back
            producer.produce("auto-confluent", b"x", partition=p)
    assert producer.flush(60) == 0
    kp = KafkaProducer(bootstrap_servers=broker.bootstrap, request_timeout_ms=60000)
    assert kp.send("auto-kafka-python", b"y").get(60).partition in range(DEFAULT_PARTITIONS)
    kp.close()
    # CreateTopics with -1: the broker's count; with a count: that count.
    admin.create_topics([NewTopic("dflt-confluent", -1, -1)],
                        request_timeout=120)["dflt-confluent"].result(120)
    ka = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=120000)
    ka.create_topics([KNewTopic("dflt-kafka-python", num_partitions=-1,
                                replication_factor=-1), KNewTopic("three", 3, 1)])
    ka.close()
    counts = partition_counts(admin)
    assert counts == {"auto-confluent": DEFAULT_PARTITIONS,
                      "auto-kafka-python": DEFAULT_PARTITIONS,
                      "dflt-confluent": DEFAULT_PARTITIONS,
                      "dflt-kafka-python": DEFAULT_PARTITIONS, "three": 3}
    # The last partition of an auto-created topic holds what was produced to it.
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "np",
                  "enable.auto.commit": False})
    last = TopicPartition("auto-confluent", DEFAULT_PARTITIONS - 1)
    assert c.get_watermark_offsets(last, timeout=30) == (0, 3)
    c.close()


@pytest.mark.parametrize("limit", ["max.connections.per.ip", "max.connections"])
def test_real_clients_at_the_connection_limit_of_hundreds(
        make_broker: Callable[..., BrokerThread], limit: str) -> None:
    # The broker runs in this process: each connection is two descriptors here.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096 <= hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096, hard))
    cap = 300
    broker = make_broker({limit: str(cap), "auto.create.topics.enable": "false"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("held", 1, 1)])["held"].result(10)
    del admin
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    producer.produce("held", b"before")
    assert producer.flush(10) == 0
    held: list[socket.socket] = []
    try:
        # Up to the limit: every raw connection is served; the one past it is closed.
        refused = None
        for i in range(cap + 5):
            s = connect(broker)
            if not served(s, i + 1):
                refused = s
                break
            held.append(s)
        assert refused is not None, f"{len(held)} connections under a limit of {cap}"
        assert closed_within(refused, 5)
        refused.close()
        assert cap - 5 <= len(held) < cap  # the producer holds the rest
        assert len(connections(broker)) <= cap
        # The producer at the limit still produces; those within it are still served.
        for _ in range(50):
            producer.produce("held", b"at-the-limit")
        assert producer.flush(10) == 0
        assert all(served(s, 9) for s in held[:: max(len(held) // 20, 1)])
        # Places freed: a new real client (kafka-python) is served.
        for _ in range(10):
            held.pop().close()
        time.sleep(0.2)
        kp = KafkaProducer(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
        assert kp.send("held", b"after").get(10).offset == 51
        kp.close()
    finally:
        for s in held:
            s.close()
