"""Traffic for the console's series: a confluent-kafka producer and a consumer group that
reads less than is produced (so its lag grows), over TCP, for a bounded time."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from confluent_kafka import Consumer, Producer

from kafkalite.broker.testing.fixtures import BrokerThread


def get(broker: BrokerThread, path: str) -> Any:
    with urllib.request.urlopen(f"{broker.admin_url}/api/v1{path}", timeout=10) as resp:
        return json.loads(resp.read())


def lagging_traffic(broker: BrokerThread, topic: str, group: str, seconds: float,
                    batch: int = 50, read: int = 20) -> tuple[int, int]:
    """Produce ``batch`` records about every 0.25 s; the group reads at most ``read`` records per
    round and commits them. Returns (records produced, records committed)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "client.id": "series-consumer"})
    consumer.subscribe([topic])
    produced = consumed = 0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            for i in range(batch):
                producer.produce(topic, key=str(i).encode(), value=b"x" * 100)
            producer.flush(10)
            produced += batch
            msgs = consumer.consume(read, timeout=0.25)
            time.sleep(0.2)  # paced: a few hundred records a second
            good = [m for m in msgs if m.error() is None]
            if good:
                consumer.commit(asynchronous=False)
                consumed += len(good)
    finally:
        consumer.close()
    return produced, consumed
