"""``__transaction_state`` records: bytes assembled by hand from Kafka's
TransactionLogKey.json / TransactionLogValue.json, round trips, and the JSON of Kafka's
TransactionLogMessageFormatter."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.protocol import transaction_log as tl
from kafkalite.protocol.consumer_offsets import java_string_hash
from kafkalite.protocol.errors import ProtocolError


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def string(s: str) -> bytes:
    return i16(len(s)) + s.encode()


def compact(s: str) -> bytes:
    return bytes([len(s) + 1]) + s.encode()


ONGOING = tl.TransactionLogValue(
    producer_id=1000, producer_epoch=3, transaction_timeout_ms=60000, transaction_status=1,
    transaction_partitions=(tl.TxnTopicPartitions("__consumer_offsets", (7,)),
                            tl.TxnTopicPartitions("orders", (0, 2))),
    last_update_timestamp_ms=1_700_000_000_123, start_timestamp_ms=1_700_000_000_100,
    previous_producer_id=999, next_producer_id=-1, client_transaction_version=2,
)


def test_key_bytes() -> None:
    data = tl.encode_key(tl.TransactionLogKey("txn-1"))
    assert data == i16(0) + string("txn-1")
    assert tl.decode_key(data) == tl.TransactionLogKey("txn-1")
    with pytest.raises(tl.UnknownTxnRecordType):
        tl.decode_key(i16(1) + string("txn-1"))
    with pytest.raises(ProtocolError):
        tl.decode_key(i16(0) + i16(9) + b"abc")  # truncated


def test_value_v0_bytes() -> None:
    body = (i64(1000) + i16(3) + i32(60000) + b"\x01"
            + i32(2)
            + string("__consumer_offsets") + i32(1) + i32(7)
            + string("orders") + i32(2) + i32(0) + i32(2)
            + i64(1_700_000_000_123) + i64(1_700_000_000_100))
    data = tl.encode_value(ONGOING, 0)
    assert data == i16(0) + body
    # v0 has no tagged fields: they read back as their defaults.
    back = tl.decode_value(data)
    assert back.version == 0
    assert (back.previous_producer_id, back.next_producer_id,
            back.client_transaction_version) == (-1, -1, 0)
    assert back.transaction_partitions == ONGOING.transaction_partitions


def test_value_v1_bytes_with_tagged_fields() -> None:
    body = (i64(1000) + i16(3) + i32(60000) + b"\x01"
            + b"\x03"  # compact array: 2 entries
            + compact("__consumer_offsets") + b"\x02" + i32(7) + b"\x00"
            + compact("orders") + b"\x03" + i32(0) + i32(2) + b"\x00"
            + i64(1_700_000_000_123) + i64(1_700_000_000_100)
            # tagged fields, ascending tags, only the non-default ones
            + b"\x02" + b"\x00\x08" + i64(999) + b"\x02\x02" + i16(2))
    data = tl.encode_value(ONGOING)
    assert data == i16(1) + body
    assert tl.decode_value(data) == ONGOING


def test_value_v1_empty_state_has_null_partitions_and_no_tags() -> None:
    empty = tl.TransactionLogValue(5, 0, 30000, 0, None, 42, -1)
    data = tl.encode_value(empty)
    assert data == i16(1) + i64(5) + i16(0) + i32(30000) + b"\x00" + b"\x00" + i64(42) \
        + i64(-1) + b"\x00"
    assert tl.decode_value(data) == empty
    assert tl.encode_value(empty, 0) == i16(0) + i64(5) + i16(0) + i32(30000) + b"\x00" \
        + i32(-1) + i64(42) + i64(-1)


def test_value_reads_next_producer_id_and_epoch_and_skips_unknown_tags() -> None:
    base = (i64(7) + i16(32766) + i32(1000) + b"\x02" + b"\x01" + i64(10) + i64(5))
    tags = (b"\x04" + b"\x01\x08" + i64(77) + b"\x03\x02" + i16(0)
            + b"\x09\x03abc"  # a tag this broker does not know
            + b"\x02\x02" + i16(2))
    v = tl.decode_value(i16(1) + base + tags)
    assert (v.next_producer_id, v.next_producer_epoch, v.client_transaction_version) == (77, 0, 2)
    assert v.transaction_partitions == ()
    # Written back, the known tags are kept (in tag order), the unknown one is not.
    assert tl.encode_value(v) == i16(1) + base + b"\x03" + b"\x01\x08" + i64(77) \
        + b"\x02\x02" + i16(2) + b"\x03\x02" + i16(0)


def test_bad_values() -> None:
    with pytest.raises(tl.UnknownTxnValueVersion):
        tl.decode_value(i16(2) + i64(1))
    with pytest.raises(ProtocolError):
        tl.decode_value(i16(1) + i64(1) + i16(0))  # truncated
    with pytest.raises(ValueError):
        tl.encode_value(ONGOING, 2)


partitions = st.none() | st.lists(
    st.builds(tl.TxnTopicPartitions, st.text(min_size=1, max_size=20),
              st.lists(st.integers(0, 2**31 - 1), max_size=5).map(tuple)),
    max_size=4).map(tuple)


@settings(max_examples=60, deadline=None)
@given(
    pid=st.integers(-1, 2**63 - 1), epoch=st.integers(-1, 32767),
    timeout=st.integers(0, 2**31 - 1), status=st.integers(0, 7), parts=partitions,
    last=st.integers(-1, 2**62), start=st.integers(-1, 2**62),
    prev=st.integers(-1, 2**62), nxt=st.integers(-1, 2**62), ctv=st.integers(0, 2),
)
def test_round_trip(pid: int, epoch: int, timeout: int, status: int,
                    parts: tuple[tl.TxnTopicPartitions, ...] | None, last: int, start: int,
                    prev: int, nxt: int, ctv: int) -> None:
    v = tl.TransactionLogValue(pid, epoch, timeout, status, parts, last, start, prev, nxt, ctv)
    assert tl.decode_value(tl.encode_value(v)) == v
    v0 = tl.decode_value(tl.encode_value(v, 0))
    assert v0 == tl.TransactionLogValue(pid, epoch, timeout, status, parts, last, start,
                                        version=0)


def test_partition_of_a_transactional_id() -> None:
    assert tl.txn_partition("hello", 50) == java_string_hash("hello") % 50 == 99162322 % 50
    assert tl.txn_partition("polygenelubricants", 50) == 0  # Utils.abs(Integer.MIN_VALUE)
    assert tl.txn_partition("my-txn", 1) == 0


def test_formatter_json() -> None:
    """The cases of Kafka's TransactionLogMessageFormatterTest."""
    key = tl.encode_key(tl.TransactionLogKey("TXNID"))
    value = tl.encode_value(tl.TransactionLogValue(100, 50, 500, 4, (), 1000, 750))

    def line(k: bytes | None, v: bytes | None) -> str:
        return json.dumps(tl.record_json(k, v), separators=(",", ":"))

    data = ('{"producerId":100,"producerEpoch":50,"transactionTimeoutMs":500,'
            '"transactionStatus":4,"transactionPartitions":[],'
            '"transactionLastUpdateTimestampMs":1000,"transactionStartTimestampMs":750}')
    assert line(key, value) == ('{"key":{"version":0,"data":{"transactionalId":"TXNID"}},'
                                '"value":{"version":1,"data":' + data + '}}')
    assert line(i16(10) + key[2:], i16(10) + value[2:]) == (
        '{"key":{"version":10,"data":"unknown"},"value":{"version":10,"data":"unknown"}}')
    assert line(key, None) == '{"key":{"version":0,"data":{"transactionalId":"TXNID"}},' \
        '"value":null}'
    assert line(None, value) == '{"key":null,"value":{"version":1,"data":' + data + '}}'
    assert line(None, None) == '{"key":null,"value":null}'
    # Tagged fields show when set, in schema order.
    tagged = tl.record_json(key, tl.encode_value(ONGOING))["value"]["data"]
    assert list(tagged)[:3] == ["producerId", "previousProducerId", "producerEpoch"]
    assert tagged["clientTransactionVersion"] == 2
    assert tagged["transactionPartitions"] == [
        {"topic": "__consumer_offsets", "partitionIds": [7]},
        {"topic": "orders", "partitionIds": [0, 2]}]
