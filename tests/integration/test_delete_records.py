"""DeleteRecords bounds with real clients: an unset, a negative or a too-large offset gets
OFFSET_OUT_OF_RANGE and the records stay; valid offsets still work in the same session."""

from __future__ import annotations

from confluent_kafka import OFFSET_INVALID, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTP
from kafka.errors import OffsetOutOfRangeError

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_java


def _fill(broker: BrokerThread, topic: str, n: int = 50) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(n):
        p.produce(topic, str(i).encode(), partition=0)
    assert p.flush(10) == 0


def _bounds(broker: BrokerThread, topic: str) -> tuple[int, int]:
    assert broker.broker is not None
    plog = broker.broker.logs.get(topic, 0)
    return plog.log_start_offset, plog.log_end_offset


def test_confluent_delete_records_out_of_range(broker: BrokerThread) -> None:
    _fill(broker, "dr-c")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for bad in (OFFSET_INVALID, -5, 51):
        tp = TopicPartition("dr-c", 0, bad)
        fut = admin.delete_records([tp])[tp]
        try:
            fut.result(15)
        except Exception as e:  # the client raises KafkaException
            assert e.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE, (bad, e)
        else:
            raise AssertionError(f"offset {bad} was accepted")
        assert _bounds(broker, "dr-c") == (0, 50), bad
    tp = TopicPartition("dr-c", 0, 20)
    assert admin.delete_records([tp])[tp].result(15).low_watermark == 20
    assert _bounds(broker, "dr-c") == (20, 50)


def test_kafka_python_delete_records_out_of_range(broker: BrokerThread) -> None:
    _fill(broker, "dr-k")
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        for bad in (-5, 51):
            try:
                admin.delete_records({KTP("dr-k", 0): bad})
            except OffsetOutOfRangeError:
                pass
            else:
                raise AssertionError(f"offset {bad} was accepted")
            assert _bounds(broker, "dr-k") == (0, 50)
        out = admin.delete_records({KTP("dr-k", 0): 30})
        assert out[KTP("dr-k", 0)]["low_watermark"] == 30
    finally:
        admin.close()


def test_java_delete_records_out_of_range(broker: BrokerThread) -> None:
    _fill(broker, "dr-j")
    out = run_java("AdminChecks", broker.bootstrap, "delete-records", "dr-j",
                   "-5", "51", "10", "5")
    assert out == {"-5": "OffsetOutOfRangeException", "51": "OffsetOutOfRangeException",
                   "10": "10", "5": "10"}
    assert _bounds(broker, "dr-j") == (10, 50)
