"""Incremental fetch sessions (KIP-227) with real consumers: after one full Fetch, the Java
consumer and kafka-python send incremental ones, as the broker's session counters show."""

from __future__ import annotations

import time

from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTP

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_java


def test_java_consumer_on_1000_partitions_fetches_incrementally(
        broker: BrokerThread) -> None:
    out = run_java("ManyPartitions", broker.bootstrap, "many", "1000", "200")
    assert out["read"] == "205"
    assert broker.broker is not None
    stats = broker.broker.fetch_sessions.stats
    # One full fetch opened the session over all 1,000 partitions; every later fetch was
    # incremental, and the consumer closed the session when it left.
    assert (stats.full, stats.created, stats.evicted) == (1, 1, 0)
    assert stats.incremental >= 5
    assert len(broker.broker.fetch_sessions) == 0


def test_kafka_python_consumer_fetches_incrementally(broker: BrokerThread) -> None:
    assert broker.broker is not None
    broker.call(lambda: broker.broker.create_topic("kp", 20))  # type: ignore[union-attr]
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, fetch_max_wait_ms=50)
    try:
        consumer.assign([KTP("kp", i) for i in range(20)])
        consumer.seek_to_beginning()
        got: list[bytes] = []
        for round_ in range(3):
            for i in range(20):
                producer.send("kp", f"{round_}-{i}".encode(), partition=i)
            producer.flush()
            deadline = time.monotonic() + 10
            while len(got) < 20 * (round_ + 1) and time.monotonic() < deadline:
                for records in consumer.poll(100).values():
                    got.extend(r.value for r in records)
        assert sorted(got) == sorted(f"{r}-{i}".encode() for r in range(3) for i in range(20))
        stats = broker.broker.fetch_sessions.stats
        assert stats.created == 1 and stats.incremental >= 2
        session = next(iter(broker.broker.fetch_sessions.sessions.values()))
        assert len(session.partitions) == 20
    finally:
        consumer.close()
        producer.close()
