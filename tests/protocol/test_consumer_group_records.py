"""KIP-848 consumer group records of ``__consumer_offsets``: Kafka's bytes, both ways.

The expected bytes are assembled by hand from Kafka's message JSON (ConsumerGroup*Key /
ConsumerGroup*Value, group-coordinator/src/main/resources/common/message): keys are the
int16 record type then non-flexible strings (int16 length); values are the int16 version
0 then flexible fields (compact lengths are length + 1 as unsigned varints, uuids are 16
raw bytes, each struct ends with its tagged-field count).
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.protocol import consumer_group_records as cg
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ProtocolError

T1 = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
T1_BYTES = bytes.fromhex("00112233445566778899aabbccddeeff")


def _h(*parts: str) -> bytes:
    return bytes.fromhex("".join(parts))


def test_key_bytes_per_type() -> None:
    cases: list[tuple[cg.ConsumerGroupKey, bytes]] = [
        (cg.ConsumerGroupMetadataKey("g"), _h("0003", "0001", "67")),
        (cg.ConsumerGroupPartitionMetadataKey("g"), _h("0004", "0001", "67")),
        (cg.ConsumerGroupMemberMetadataKey("g", "m1"), _h("0005", "000167", "00026d31")),
        (cg.ConsumerGroupTargetAssignmentMetadataKey("g"), _h("0006", "000167")),
        (cg.ConsumerGroupTargetAssignmentMemberKey("g", "m1"), _h("0007", "000167", "00026d31")),
        (cg.ConsumerGroupCurrentMemberAssignmentKey("g", "m1"), _h("0008", "000167", "00026d31")),
        (cg.ConsumerGroupRegularExpressionKey("g", "t.*"), _h("0010", "000167", "0003742e2a")),
    ]
    for key, raw in cases:
        assert co.encode_key(key) == raw
        assert co.decode_key(raw, consumer_groups=True) == key


def test_classic_readers_still_skip_consumer_group_keys() -> None:
    raw = co.encode_key(cg.ConsumerGroupMemberMetadataKey("g", "m1"))
    with pytest.raises(co.UnknownRecordType):
        co.decode_key(raw)
    # Share group keys (9-15) stay unknown even to consumer group readers.
    with pytest.raises(co.UnknownRecordType):
        co.decode_key(_h("0009", "000167"), consumer_groups=True)


def test_group_epoch_value_bytes() -> None:
    key = cg.ConsumerGroupMetadataKey("g")
    raw = _h("0000", "0000000a", "00")  # version 0, epoch 10, no tagged fields
    assert co.encode_value(cg.ConsumerGroupMetadataValue(10)) == raw
    assert co.decode_value(key, raw) == cg.ConsumerGroupMetadataValue(10)


def test_group_epoch_value_with_kafka_41_metadata_hash() -> None:
    # Kafka 4.1 (KIP-1101) adds tagged field 0, MetadataHash (int64); readers keep it.
    raw = _h("0000", "00000005", "01", "00", "08", "0123456789abcdef")
    value = co.decode_value(cg.ConsumerGroupMetadataKey("g"), raw)
    assert value == cg.ConsumerGroupMetadataValue(5, metadata_hash=0x0123456789ABCDEF)
    assert co.encode_value(value) == raw
    # An unknown tag (here 7) is skipped.
    raw7 = _h("0000", "00000005", "01", "07", "02", "abcd")
    assert co.decode_value(cg.ConsumerGroupMetadataKey("g"), raw7) == \
        cg.ConsumerGroupMetadataValue(5)


def test_partition_metadata_value_bytes() -> None:
    value = cg.ConsumerGroupPartitionMetadataValue((cg.PartitionMetadataTopic(T1, "foo", 3),))
    raw = _h(
        "0000",
        "02",  # one topic
        T1_BYTES.hex(), "04666f6f", "00000003",
        "01",  # PartitionMetadata: empty (Kafka 4.0 no longer writes racks)
        "00",  # topic tagged fields
        "00",  # value tagged fields
    )
    assert co.encode_value(value) == raw
    assert co.decode_value(cg.ConsumerGroupPartitionMetadataKey("g"), raw) == value


def test_partition_metadata_with_racks_written_by_kafka_37() -> None:
    raw = _h(
        "0000", "02", T1_BYTES.hex(), "0278", "00000002",
        "03",  # two partitions with racks
        "00000000", "03", "037231", "037232", "00",
        "00000001", "02", "037233", "00",
        "00", "00",
    )
    value = co.decode_value(cg.ConsumerGroupPartitionMetadataKey("g"), raw)
    assert value == cg.ConsumerGroupPartitionMetadataValue((cg.PartitionMetadataTopic(
        T1, "x", 2, (cg.PartitionRacks(0, ("r1", "r2")), cg.PartitionRacks(1, ("r3",)))),))
    assert co.encode_value(value) == raw


def test_member_metadata_value_bytes() -> None:
    value = cg.ConsumerGroupMemberMetadataValue(
        instance_id=None, rack_id="r", client_id="c", client_host="/h",
        subscribed_topic_names=("a", "b"), subscribed_topic_regex="",
        rebalance_timeout_ms=5000, server_assignor="range")
    raw = _h(
        "0000",
        "00",  # InstanceId null
        "0272",  # RackId "r"
        "0263",  # ClientId "c"
        "032f68",  # ClientHost "/h"
        "03", "0261", "0262",  # SubscribedTopicNames
        "01",  # SubscribedTopicRegex ""
        "00001388",  # RebalanceTimeoutMs 5000
        "0672616e6765",  # ServerAssignor "range"
        "00",
    )
    assert co.encode_value(value) == raw
    assert co.decode_value(cg.ConsumerGroupMemberMetadataKey("g", "m"), raw) == value


def test_member_metadata_with_classic_member_metadata_tag() -> None:
    classic = cg.ClassicMemberMetadata(45000, (cg.ClassicProtocol("range", b"\x01\x02"),))
    value = cg.ConsumerGroupMemberMetadataValue(
        "i", None, "c", "h", (), None, 300, None, classic)
    struct_bytes = _h("0000afc8", "02", "0672616e6765", "03", "0102", "00", "00")
    raw = _h(
        "0000", "0269", "00", "0263", "0268", "01", "00", "0000012c", "00",
        "01", "00", f"{len(struct_bytes):02x}", struct_bytes.hex(),
    )
    assert co.encode_value(value) == raw
    assert co.decode_value(cg.ConsumerGroupMemberMetadataKey("g", "m"), raw) == value


def test_target_assignment_values_bytes() -> None:
    raw_epoch = _h("0000", "00000007", "00")
    assert co.encode_value(cg.ConsumerGroupTargetAssignmentMetadataValue(7)) == raw_epoch
    assert co.decode_value(cg.ConsumerGroupTargetAssignmentMetadataKey("g"), raw_epoch) == \
        cg.ConsumerGroupTargetAssignmentMetadataValue(7)
    member = cg.ConsumerGroupTargetAssignmentMemberValue(
        (cg.TopicIdPartitions(T1, (0, 2)),))
    raw = _h("0000", "02", T1_BYTES.hex(), "03", "00000000", "00000002", "00", "00")
    assert co.encode_value(member) == raw
    assert co.decode_value(cg.ConsumerGroupTargetAssignmentMemberKey("g", "m"), raw) == member


def test_current_assignment_value_bytes() -> None:
    value = cg.ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=10, previous_member_epoch=9, state=1,
        assigned_partitions=(cg.TopicIdPartitions(T1, (1,)),),
        partitions_pending_revocation=(cg.TopicIdPartitions(T1, (0,)),))
    raw = _h(
        "0000", "0000000a", "00000009", "01",
        "02", T1_BYTES.hex(), "02", "00000001", "00",
        "02", T1_BYTES.hex(), "02", "00000000", "00",
        "00",
    )
    assert co.encode_value(value) == raw
    assert co.decode_value(cg.ConsumerGroupCurrentMemberAssignmentKey("g", "m"), raw) == value


def test_regular_expression_value_bytes() -> None:
    value = cg.ConsumerGroupRegularExpressionValue(("t1", "t2"), 42, 1_700_000_000_000)
    raw = _h("0000", "03", "037431", "037432", "000000000000002a",
             (1_700_000_000_000).to_bytes(8, "big").hex(), "00")
    assert co.encode_value(value) == raw
    assert co.decode_value(cg.ConsumerGroupRegularExpressionKey("g", "t.*"), raw) == value


def test_tombstones_and_bad_input() -> None:
    assert co.decode_value(cg.ConsumerGroupMetadataKey("g"), None) is None
    assert co.encode_value(None) is None
    with pytest.raises(ProtocolError):
        co.decode_value(cg.ConsumerGroupMetadataKey("g"), _h("0001", "00000001", "00"))
    with pytest.raises(ProtocolError):  # truncated uuid
        co.decode_value(cg.ConsumerGroupTargetAssignmentMemberKey("g", "m"),
                        _h("0000", "02", "0011"))
    with pytest.raises(ProtocolError):  # member key without member id
        co.decode_key(_h("0005", "000167"), consumer_groups=True)


_names = st.text(max_size=8)
_uuids = st.uuids()
_tps = st.lists(st.builds(cg.TopicIdPartitions, _uuids,
                          st.lists(st.integers(0, 2**31 - 1), max_size=4).map(tuple)),
                max_size=3).map(tuple)
_values = st.one_of(
    st.builds(cg.ConsumerGroupMetadataValue, st.integers(-(2**31), 2**31 - 1),
              st.integers(-(2**63), 2**63 - 1), st.integers(-(2**63), 2**63 - 1)),
    st.builds(cg.ConsumerGroupPartitionMetadataValue, st.lists(st.builds(
        cg.PartitionMetadataTopic, _uuids, _names, st.integers(0, 1000),
        st.lists(st.builds(cg.PartitionRacks, st.integers(0, 9),
                           st.lists(_names, max_size=2).map(tuple)), max_size=2).map(tuple)),
        max_size=3).map(tuple)),
    st.builds(cg.ConsumerGroupMemberMetadataValue, st.none() | _names, st.none() | _names,
              _names, _names, st.lists(_names, max_size=3).map(tuple), st.none() | _names,
              st.integers(-1, 10**6), st.none() | _names,
              st.none() | st.builds(cg.ClassicMemberMetadata, st.integers(0, 10**6),
                                    st.lists(st.builds(cg.ClassicProtocol, _names,
                                                       st.binary(max_size=6)),
                                             max_size=2).map(tuple))),
    st.builds(cg.ConsumerGroupTargetAssignmentMetadataValue, st.integers(-1, 10**6)),
    st.builds(cg.ConsumerGroupTargetAssignmentMemberValue, _tps),
    st.builds(cg.ConsumerGroupCurrentMemberAssignmentValue, st.integers(-2, 10**6),
              st.integers(-2, 10**6), st.sampled_from([0, 1, 2, 127]), _tps, _tps),
    st.builds(cg.ConsumerGroupRegularExpressionValue, st.lists(_names, max_size=3).map(tuple),
              st.integers(0, 2**63 - 1), st.integers(-1, 2**62)),
)

_KEY_FOR: dict[type, cg.ConsumerGroupKey] = {
    cg.ConsumerGroupMetadataValue: cg.ConsumerGroupMetadataKey("g"),
    cg.ConsumerGroupPartitionMetadataValue: cg.ConsumerGroupPartitionMetadataKey("g"),
    cg.ConsumerGroupMemberMetadataValue: cg.ConsumerGroupMemberMetadataKey("g", "m"),
    cg.ConsumerGroupTargetAssignmentMetadataValue:
        cg.ConsumerGroupTargetAssignmentMetadataKey("g"),
    cg.ConsumerGroupTargetAssignmentMemberValue:
        cg.ConsumerGroupTargetAssignmentMemberKey("g", "m"),
    cg.ConsumerGroupCurrentMemberAssignmentValue:
        cg.ConsumerGroupCurrentMemberAssignmentKey("g", "m"),
    cg.ConsumerGroupRegularExpressionValue: cg.ConsumerGroupRegularExpressionKey("g", "r"),
}


@given(_values)
def test_values_round_trip(value: cg.ConsumerGroupValue) -> None:
    raw = co.encode_value(value)
    assert raw is not None
    assert co.decode_value(_KEY_FOR[type(value)], raw) == value


@given(st.sampled_from(sorted(cg.KEY_TYPES)), _names, _names)
def test_keys_round_trip(record_type: int, group: str, second: str) -> None:
    key = {
        3: cg.ConsumerGroupMetadataKey(group),
        4: cg.ConsumerGroupPartitionMetadataKey(group),
        5: cg.ConsumerGroupMemberMetadataKey(group, second),
        6: cg.ConsumerGroupTargetAssignmentMetadataKey(group),
        7: cg.ConsumerGroupTargetAssignmentMemberKey(group, second),
        8: cg.ConsumerGroupCurrentMemberAssignmentKey(group, second),
        16: cg.ConsumerGroupRegularExpressionKey(group, second),
    }[record_type]
    raw = co.encode_key(key)
    assert raw[:2] == record_type.to_bytes(2, "big")
    assert co.decode_key(raw, consumer_groups=True) == key


@given(st.binary(max_size=64))
def test_garbage_values_raise_protocol_errors_only(data: bytes) -> None:
    for key in _KEY_FOR.values():
        try:
            co.decode_value(key, data)
        except ProtocolError:
            pass
