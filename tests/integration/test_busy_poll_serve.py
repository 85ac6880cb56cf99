"""``kafkalite serve`` with its default busy poll after answers (``socket.busy.poll.us``):
a confluent-kafka producer and a consumer group committing after every record, one
request at a time, get every record, in order, and the committed offsets back. The
broker runs as its own process, as the command starts it, so the poll shares no lock
with the clients."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from kafkalite.broker.busy_poll import usable_cpus
from kafkalite.broker.testing.fixtures import BrokerProcess

RECORDS = 200


def _started_line(log_path: Path) -> dict[str, object]:
    for line in log_path.read_text().splitlines():
        if '"broker.started"' in line:
            found: dict[str, object] = json.loads(line)
            return found
    raise AssertionError("no broker.started line")


def test_sequential_clients_against_a_busy_polling_broker(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data") as proc:
        expected = 100 if usable_cpus() >= 2 else 0
        assert _started_line(proc.log_path)["busy_poll_us"] == expected
        topic, group = f"busy-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
        producer = Producer({"bootstrap.servers": proc.bootstrap, "linger.ms": 0})
        for i in range(RECORDS):
            producer.produce(topic, value=f"v{i}".encode(), key=str(i).encode())
            assert producer.flush(10) == 0  # one Produce request at a time
        consumer = Consumer({"bootstrap.servers": proc.bootstrap, "group.id": group,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
        consumer.subscribe([topic])
        seen: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(seen) < RECORDS and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None or m.error() is not None:
                continue
            seen.append(m.value())
            consumer.commit(message=m, asynchronous=False)
        assert seen == [f"v{i}".encode() for i in range(RECORDS)]
        [got] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert got.offset == RECORDS
        consumer.close()
