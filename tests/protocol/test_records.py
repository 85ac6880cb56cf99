"""Record batches: the header's named fields and byte positions, the one varint codec, the
one batch encoder (new batches and the cleaner's thinned ones) and the header patches."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.protocol import records as rb
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import (
    BATCH_HEADER,
    COMPRESSION_GZIP,
    COMPRESSION_NONE,
    BatchHeader,
    NewRecord,
    assigned_parts,
    build_batch,
    check_batch,
    decode_batch,
    increment_sequence,
    parse_batch_header,
    rebuild_batch,
    set_log_append_time,
)
from kafkalite.protocol.varint import (
    put_uvarint,
    put_varint,
    read_uvarint,
    read_varint,
    write_uvarint,
)

#: A header whose fields are all different, to tell them apart.
DISTINCT = BatchHeader(
    base_offset=1 << 40, batch_length=1 << 20, partition_leader_epoch=7, magic=2,
    crc=0xDEADBEEF, attributes=0x15, last_offset_delta=1234, base_timestamp=1 << 41,
    max_timestamp=1 << 42, producer_id=1 << 43, producer_epoch=9, base_sequence=77,
    record_count=1235,
)


def test_field_indices_and_positions_name_the_header_fields() -> None:
    raw = BATCH_HEADER.pack(*DISTINCT)
    h = BATCH_HEADER.unpack_from(raw, 0)
    for i, name in enumerate(BatchHeader._fields):
        assert getattr(rb, name.upper()) == i
        assert h[i] == getattr(DISTINCT, name)
    assert parse_batch_header(raw) == DISTINCT
    at = {
        rb.BATCH_LENGTH_POS: (">i", DISTINCT.batch_length),
        rb.PARTITION_LEADER_EPOCH_POS: (">i", DISTINCT.partition_leader_epoch),
        rb.MAGIC_POS: (">b", DISTINCT.magic),
        rb.CRC_POS: (">I", DISTINCT.crc),
        rb.ATTRIBUTES_POS: (">h", DISTINCT.attributes),
        rb.LAST_OFFSET_DELTA_POS: (">i", DISTINCT.last_offset_delta),
        rb.MAX_TIMESTAMP_POS: (">q", DISTINCT.max_timestamp),
    }
    for pos, (fmt, value) in at.items():
        assert struct.unpack_from(fmt, raw, pos)[0] == value
    assert (rb.LOG_OVERHEAD, rb.CRC_START, rb.HEADER_SIZE) == (12, 21, 61)


@given(st.integers(0, 2**64 - 1))
def test_uvarint_round_trip_up_to_64_bits(value: int) -> None:
    out = bytearray()
    put_uvarint(out, value)
    assert bytes(out) == write_uvarint(value)
    assert read_uvarint(bytes(out) + b"\x05", 0) == (value, len(out))


@given(st.integers(-(2**63), 2**63 - 1))
def test_varint_round_trip_zigzag(value: int) -> None:
    out = bytearray(b"\xff")
    put_varint(out, value)
    assert read_varint(bytes(out), 1) == (value, len(out))


def test_varint_zigzag_bytes_as_kafka() -> None:
    def enc(v: int) -> bytes:
        out = bytearray()
        put_varint(out, v)
        return bytes(out)

    assert [enc(v) for v in (0, -1, 1, -2, 63, -64, 64)] == [
        b"\x00", b"\x01", b"\x02", b"\x03", b"\x7e", b"\x7f", b"\x80\x01"]


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff", b"\xff" * 10 + b"\x01"])
def test_varint_truncated_or_too_long_is_a_protocol_error(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        read_uvarint(data, 0)


RECORDS = [
    NewRecord(b"k0", b"v0", 1000, [("h", b"x"), ("n", None)]),
    NewRecord(None, b"v1", 1500),
    NewRecord(b"k2", None, 1200),
]


@pytest.mark.parametrize("codec", [COMPRESSION_NONE, COMPRESSION_GZIP])
def test_build_then_decode(codec: int) -> None:
    raw = build_batch(RECORDS, base_offset=40, compression=codec, producer_id=5,
                      producer_epoch=1, base_sequence=10)
    h, recs = decode_batch(raw)
    assert (h.base_offset, h.last_offset_delta, h.record_count, h.compression) == (40, 2, 3, codec)
    assert (h.base_timestamp, h.max_timestamp, h.last_sequence) == (1000, 1500, 12)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs] == [
        (40, 1000, b"k0", b"v0", [("h", b"x"), ("n", None)]),
        (41, 1500, None, b"v1", []),
        (42, 1200, b"k2", None, []),
    ]


def test_rebuild_keeps_offsets_and_producer_fields_of_the_batch() -> None:
    raw = build_batch(RECORDS, base_offset=40, compression=COMPRESSION_GZIP, producer_id=5,
                      producer_epoch=1, base_sequence=10)
    h, recs = decode_batch(raw)
    thinned = rebuild_batch(h, [recs[1]])
    h2, recs2 = decode_batch(thinned)
    assert h2 == h._replace(batch_length=h2.batch_length, crc=h2.crc, record_count=1,
                            base_timestamp=1500, max_timestamp=1500)
    assert recs2 == [recs[1]]


def test_rebuild_of_a_log_append_time_batch_keeps_its_time() -> None:
    batch = bytearray(build_batch(RECORDS))
    set_log_append_time(batch, 0, 9999)
    h, recs = decode_batch(batch)
    assert h.log_append_time and [r.timestamp for r in recs] == [9999] * 3
    h2, recs2 = decode_batch(rebuild_batch(h, recs[::2]))
    assert (h2.log_append_time, h2.max_timestamp, h2.last_offset_delta) == (True, 9999, 2)
    assert [(r.offset, r.timestamp, r.key) for r in recs2] == [(0, 9999, b"k0"), (2, 9999, b"k2")]


def test_set_log_append_time_at_a_position_keeps_the_batch_valid() -> None:
    first = build_batch(RECORDS[:1])
    buf = bytearray(first + build_batch(RECORDS, base_offset=1))
    set_log_append_time(buf, len(first), 4242)
    assert bytes(buf[: len(first)]) == first
    h = check_batch(buf, len(first))
    assert (h.log_append_time, h.max_timestamp, h.base_timestamp) == (True, 4242, 1000)


def test_assigned_parts_replace_base_offset_and_leader_epoch_only() -> None:
    raw = build_batch(RECORDS, base_offset=0, partition_leader_epoch=3)
    out = b"".join(bytes(p) for p in assigned_parts(memoryview(raw), 500, 0))
    h = check_batch(out)
    assert h == parse_batch_header(raw)._replace(base_offset=500, partition_leader_epoch=0)
    assert out[rb.MAGIC_POS :] == raw[rb.MAGIC_POS :]


def test_sequences_wrap_as_kafkas() -> None:
    assert increment_sequence(5, 3) == 8
    assert increment_sequence(rb.MAX_SEQUENCE, 1) == 0
    assert increment_sequence(rb.MAX_SEQUENCE - 1, 4) == 2
    assert increment_sequence(2, -4) == rb.MAX_SEQUENCE - 1


def test_set_crc_after_a_change_to_covered_fields() -> None:
    first = build_batch(RECORDS[:1])
    buf = bytearray(first + build_batch(RECORDS, base_offset=1))
    struct.pack_into(">q", buf, len(first) + rb.BASE_TIMESTAMP_POS, 5)
    with pytest.raises(ProtocolError, match="CRC"):
        check_batch(buf, len(first))
    rb.set_crc(buf, len(first))
    assert check_batch(buf, len(first)).base_timestamp == 5
    assert bytes(buf[: len(first)]) == first
