"""A live broker compacts __consumer_offsets as segments roll; a restart reloads the same
offsets from the compacted log."""

from __future__ import annotations

import time
from collections.abc import Callable

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol.records import iter_records


def _records(broker: BrokerThread) -> int:
    part = broker.data_dir / "__consumer_offsets-0"
    return sum(1 for seg in part.glob("*.log") for _ in iter_records(seg.read_bytes()))


def test_offsets_topic_is_compacted_and_reloads(make_broker: Callable[..., BrokerThread]
                                                ) -> None:
    broker = make_broker({"offsets.topic.num.partitions": "1",
                          "offsets.topic.segment.bytes": "4096",
                          "log.cleaner.backoff.ms": "100"})
    assert broker.broker is not None
    b = broker.broker
    broker.call(lambda: b.create_topic("t", 5))
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        tps = [TopicPartition("t", p) for p in range(5)]
        for i in range(300):
            tp = tps[i % 5]
            errors = admin.alter_group_offsets("compacted", {tp: OffsetAndMetadata(i, "", -1)})
            assert errors[tp].__name__ == "NoError"
        written = 300
        deadline = time.monotonic() + 20
        while _records(broker) > written // 2:
            assert time.monotonic() < deadline, "the log was never compacted"
            time.sleep(0.1)
        expected = {tp: 295 + tp.partition for tp in tps}
        before = admin.list_group_offsets({"compacted": None})["compacted"]
        assert {tp: o.offset for tp, o in before.items()} == expected
    finally:
        admin.close()
    broker.restart()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        after = admin.list_group_offsets({"compacted": None})["compacted"]
        assert {tp: o.offset for tp, o in after.items()} == expected
    finally:
        admin.close()
