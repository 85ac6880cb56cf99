"""The share group record codecs (``__consumer_offsets`` types 10-15 and
``__share_group_state``): every record survives a round trip, tagged fields are written
only when set, and bad input is a ProtocolError. Kafka's own bytes for the same records are
compared in tests/integration/test_share_records_oracle.py."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol import share_group_records as sg
from kafkalite.protocol import share_state_records as ss
from kafkalite.protocol.consumer_group_records import TopicIdPartitions
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.schema_io import Reader

_names = st.text(max_size=8)
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_tps = st.lists(st.builds(TopicIdPartitions, st.uuids(),
                          st.lists(_i32, max_size=4).map(tuple)), max_size=3).map(tuple)
_infos = st.lists(st.builds(sg.TopicPartitionsInfo, st.uuids(), _names,
                            st.lists(_i32, max_size=4).map(tuple)), max_size=3).map(tuple)

_group_records = st.one_of(
    st.tuples(st.builds(sg.ShareGroupMemberMetadataKey, _names, _names),
              st.builds(sg.ShareGroupMemberMetadataValue, st.none() | _names, _names, _names,
                        st.lists(_names, max_size=3).map(tuple))),
    st.tuples(st.builds(sg.ShareGroupMetadataKey, _names),
              st.builds(sg.ShareGroupMetadataValue, _i32, _i64)),
    st.tuples(st.builds(sg.ShareGroupTargetAssignmentMetadataKey, _names),
              st.builds(sg.ShareGroupTargetAssignmentMetadataValue, _i32, _i64)),
    st.tuples(st.builds(sg.ShareGroupTargetAssignmentMemberKey, _names, _names),
              st.builds(sg.ShareGroupTargetAssignmentMemberValue, _tps)),
    st.tuples(st.builds(sg.ShareGroupCurrentMemberAssignmentKey, _names, _names),
              st.builds(sg.ShareGroupCurrentMemberAssignmentValue, _i32, _i32,
                        st.integers(-128, 127), _tps)),
    st.tuples(st.builds(sg.ShareGroupStatePartitionMetadataKey, _names),
              st.builds(sg.ShareGroupStatePartitionMetadataValue, _infos, _infos,
                        st.lists(st.builds(sg.TopicIdAndName, st.uuids(), _names),
                                 max_size=2).map(tuple))),
)

_batches = st.lists(st.builds(ss.StateBatch, _i64, _i64, st.sampled_from((0, 2, 4)),
                              st.integers(-(2**15), 2**15 - 1)), max_size=4).map(tuple)
_state_records = st.one_of(
    st.tuples(st.builds(ss.ShareStateKey, st.just(ss.SHARE_SNAPSHOT), _names, st.uuids(), _i32),
              st.builds(ss.ShareSnapshotValue, _i32, _i32, _i32, _i64, _i64, _i64, _batches,
                        _i32)),
    st.tuples(st.builds(ss.ShareStateKey, st.just(ss.SHARE_UPDATE), _names, st.uuids(), _i32),
              st.builds(ss.ShareUpdateValue, _i32, _i32, _i64, _batches, _i32)),
)


def _decode_group_key(data: bytes) -> sg.ShareGroupKey:
    r = Reader(data)
    return sg.decode_key_fields(r.i16(), r)


@given(_group_records)
def test_share_group_records_round_trip(
        record: tuple[sg.ShareGroupKey, sg.ShareGroupValue]) -> None:
    key, value = record
    assert _decode_group_key(sg.encode_key(key)) == key
    assert sg.decode_value(key, sg.encode_value(value)) == value


@given(_state_records)
def test_share_state_records_round_trip(
        record: tuple[ss.ShareStateKey, ss.ShareStateValue]) -> None:
    key, value = record
    assert ss.decode_key(ss.encode_key(key)) == key
    assert ss.decode_value(key, ss.encode_value(value)) == value


def test_tagged_fields_only_when_set() -> None:
    plain = sg.encode_value(sg.ShareGroupTargetAssignmentMetadataValue(3))
    assert plain == bytes.fromhex("00000000000300")
    stamped = sg.encode_value(sg.ShareGroupTargetAssignmentMetadataValue(3, 5))
    assert stamped.endswith(bytes.fromhex("01000800000000000000 05".replace(" ", "")))
    update = ss.encode_value(ss.ShareUpdateValue(0, 0, -1, ()))
    assert update[-1] == 0  # no tagged fields: delivery_complete_count is -1


def test_group_coordinator_reader_decodes_share_keys_classic_readers_skip_them() -> None:
    key = sg.encode_key(sg.ShareGroupMemberMetadataKey("g", "m"))
    assert co.decode_key(key, consumer_groups=True) == sg.ShareGroupMemberMetadataKey("g", "m")
    value = sg.ShareGroupMemberMetadataValue(None, "c", "/h", ("t",))
    raw = co.encode_value(value)
    assert raw is not None and co.decode_value(co.decode_key(key, consumer_groups=True),
                                               raw) == value
    assert co.encode_key(sg.ShareGroupMemberMetadataKey("g", "m")) == key
    with pytest.raises(co.UnknownRecordType):
        co.decode_key(key)


def test_bad_input() -> None:
    with pytest.raises(ProtocolError):
        ss.decode_key(bytes.fromhex("0002000167"))  # record type 2 is not a share state key
    with pytest.raises(ProtocolError):
        ss.decode_key(bytes.fromhex("0000000167010203"))  # truncated uuid
    key = ss.ShareStateKey(ss.SHARE_SNAPSHOT, "g", uuid.UUID(int=1), 0)
    with pytest.raises(ProtocolError):
        ss.decode_value(key, bytes.fromhex("0001"))  # unknown value version
    with pytest.raises(ProtocolError):
        ss.decode_value(key, bytes.fromhex("000000000001"))  # truncated
    with pytest.raises(ProtocolError):
        _decode_group_key(bytes.fromhex("000a000167"))  # member key without member id
    with pytest.raises(ProtocolError):
        sg.decode_value(sg.ShareGroupMetadataKey("g"), bytes.fromhex("00000000"))
    with pytest.raises(ProtocolError):
        ss.encode_key(ss.ShareStateKey(5, "g", uuid.UUID(int=1), 0))
