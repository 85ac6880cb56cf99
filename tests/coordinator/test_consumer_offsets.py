"""__consumer_offsets record schemas and the consumer embedded protocol."""

from __future__ import annotations

import pytest

from kafkalite.protocol import consumer_offsets as co


def test_java_string_hash_and_partition() -> None:
    assert co.java_string_hash("hello") == 99162322
    assert co.java_string_hash("") == 0
    # A famous string whose hashCode is Integer.MIN_VALUE: Utils.abs maps it to 0.
    assert co.java_string_hash("polygenelubricants") == -(1 << 31)
    assert co.group_partition("polygenelubricants", 50) == 0
    assert co.group_partition("hello", 50) == 99162322 % 50
    neg = co.java_string_hash("my-group-xyz")
    assert co.group_partition("my-group-xyz", 7) == abs(neg) % 7


def test_offset_commit_key_bytes() -> None:
    key = co.OffsetCommitKey("g", "t", 3)
    data = co.encode_key(key)
    assert data == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    assert co.decode_key(data) == key
    assert co.decode_key(b"\x00\x00" + data[2:]) == co.OffsetCommitKey("g", "t", 3, 0)


def test_group_metadata_key_bytes() -> None:
    data = co.encode_key(co.GroupMetadataKey("grp"))
    assert data == b"\x00\x02\x00\x03grp"
    assert co.decode_key(data) == co.GroupMetadataKey("grp")
    with pytest.raises(co.UnknownRecordType):  # a share group key
        co.decode_key(b"\x00\x09\x00\x01g", consumer_groups=True)
    with pytest.raises(co.UnknownRecordType):  # KIP-848 keys only when asked for
        co.decode_key(b"\x00\x05\x00\x01g\x00\x01m")


def test_offset_value_versions() -> None:
    v3 = co.OffsetCommitValue(42, "meta", 1000, leader_epoch=7)
    data = co.encode_value(v3)
    assert data is not None
    assert data[:2] == b"\x00\x03"
    assert data == (b"\x00\x03" + (42).to_bytes(8, "big") + (7).to_bytes(4, "big")
                    + b"\x00\x04meta" + (1000).to_bytes(8, "big"))
    assert co.decode_offset_value(data) == v3
    v1 = co.OffsetCommitValue(5, "", 10, expire_timestamp=99)
    d1 = co.encode_value(v1)
    assert d1 is not None and d1[:2] == b"\x00\x01"
    assert co.decode_offset_value(d1) == v1
    v0 = co.encode_offset_value(co.OffsetCommitValue(1, "m", 2), version=0)
    assert co.decode_offset_value(v0) == co.OffsetCommitValue(1, "m", 2)
    v4 = co.encode_offset_value(v3, version=4)
    assert v4[-1] == 0  # empty tagged fields
    assert co.decode_offset_value(v4) == v3


def test_group_value_roundtrip_all_versions() -> None:
    m = co.MemberMetadata("m-1", "cid", "/127.0.0.1", 30000, 10000, b"sub", b"asg", "inst")
    val = co.GroupMetadataValue("consumer", 3, "range", "m-1", 123, (m,))
    data = co.encode_value(val)
    assert data is not None and data[:2] == b"\x00\x03"
    assert co.decode_group_value(data) == val
    assert co.decode_value(co.GroupMetadataKey("g"), data) == val
    assert co.decode_group_value(co.encode_group_value(val, 4)) == val
    # v2 has no instance id; v1 no state timestamp; v0 no rebalance timeout.
    assert co.decode_group_value(co.encode_group_value(val, 2)).members[0].group_instance_id is None
    assert co.decode_group_value(co.encode_group_value(val, 1)).current_state_timestamp == -1
    m0 = co.decode_group_value(co.encode_group_value(val, 0)).members[0]
    assert m0.rebalance_timeout == m0.session_timeout == 10000
    empty = co.GroupMetadataValue("consumer", 4, None, None, 5, ())
    assert co.decode_group_value(co.encode_group_value(empty)) == empty
    assert co.decode_value(co.GroupMetadataKey("g"), None) is None


def test_consumer_protocol_against_aiokafka() -> None:
    from aiokafka.coordinator.protocol import (
        ConsumerProtocolMemberAssignment,
        ConsumerProtocolMemberMetadata,
    )

    raw = ConsumerProtocolMemberMetadata(0, ["a", "b"], b"ud").encode()
    sub = co.decode_subscription(raw)
    assert sub.topics == ("a", "b") and sub.user_data == b"ud" and sub.version == 0
    assert co.encode_subscription(sub) == raw
    raw_a = ConsumerProtocolMemberAssignment(0, [("a", [0, 2])], b"").encode()
    a = co.decode_assignment(raw_a)
    assert a.assigned_partitions == (co.TopicPartitions("a", (0, 2)),)
    assert co.encode_assignment(a) == raw_a


def test_subscription_v3_roundtrip() -> None:
    sub = co.ConsumerProtocolSubscription(
        ("t",), None, (co.TopicPartitions("t", (1,)),), 4, "rack-a", 3
    )
    assert co.decode_subscription(co.encode_subscription(sub)) == sub
