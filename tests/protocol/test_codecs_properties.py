"""Property tests: frame and header codecs round-trip, and decoding arbitrary bytes never
raises anything but ProtocolError."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from kio.schema.index import api_key_map, schema_name_map
from kio.static.primitive import Records

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.framing import FrameDecoder, frame, split_frames
from kafkalite.protocol.generated import VERSIONS as GENERATED
from kafkalite.protocol.headers import (
    encode_request_header,
    encode_response_header,
    parse_request_header,
    parse_response_header,
    peek_api,
    skip_tagged_fields,
)
from kafkalite.protocol.varint import read_uvarint, write_uvarint

i16 = st.integers(-(2**15), 2**15 - 1)
i32 = st.integers(-(2**31), 2**31 - 1)
client_ids = st.none() | st.text(max_size=40).filter(lambda s: len(s.encode()) < 2**15)
payloads = st.lists(st.binary(max_size=300), max_size=12)
MAX = 1 << 20

st.register_type_strategy(Records, st.binary(max_size=40).map(Records))

#: Every (api_key, version) kio or protocol/generated has a request codec for.
ALL_VERSIONS = sorted(
    {(key, v) for key, name in api_key_map.items() for v in schema_name_map[name]}
    | set(GENERATED)
)


@given(payloads, st.data())
def test_frames_round_trip_whatever_the_chunking(bodies: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(frame(b) for b in bodies)
    assert split_frames(stream, MAX) == bodies
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    dec = FrameDecoder(MAX)
    out: list[bytes] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        out += dec.feed(stream[prev:cut])
        prev = cut
    assert out == bodies
    assert dec.buffered == 0


@given(st.integers(0, 2**31 - 1))
def test_frame_size_limit(size: int) -> None:
    dec = FrameDecoder(1000)
    try:
        assert dec.feed(struct.pack(">i", size)) == ([b""] if size == 0 else [])
        assert size <= 1000
    except ProtocolError:
        assert size > 1000


@given(st.binary(max_size=1100), st.booleans())
@example(b"x" * 1000, False)
@example(b"x" * 1001, False)
@example(b"x" * 1001, True)
def test_one_whole_frame_per_read(body: bytes, buffered: bool) -> None:
    """A read holding exactly one frame, the usual read of a client waiting for each answer:
    its body comes back as bytes, and the size limit holds as for any other read."""
    dec = FrameDecoder(1000)
    if buffered:  # an earlier partial read: the frame arrives across two reads
        data = frame(body)
        try:
            assert dec.feed(data[:3]) == []
            out = dec.feed(data[3:])
        except ProtocolError:
            assert len(body) > 1000
            return
    else:
        try:
            out = dec.feed(frame(body))
        except ProtocolError:
            assert len(body) > 1000
            return
    assert len(body) <= 1000
    assert out == [body] and type(out[0]) is bytes
    assert dec.buffered == 0


def test_negative_frame_size_in_one_whole_read_is_refused() -> None:
    dec = FrameDecoder(1000)
    with pytest.raises(ProtocolError):
        dec.feed(struct.pack(">i", -1))


@given(i16, i16, i32, client_ids, st.booleans(), st.binary(max_size=20))
def test_request_header_round_trip(
    key: int, version: int, corr: int, client_id: str | None, flexible: bool, body: bytes
) -> None:
    raw = encode_request_header(key, version, corr, client_id, flexible)
    h = parse_request_header(raw + body, flexible)
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (
        key, version, corr, client_id
    )
    assert h.body_offset == len(raw)
    assert peek_api(raw + body) == (key, version, corr)


@given(i32, st.booleans(), st.binary(max_size=20))
def test_response_header_round_trip(corr: int, flexible: bool, body: bytes) -> None:
    raw = encode_response_header(corr, flexible)
    assert parse_response_header(raw + body, flexible) == (corr, len(raw))


@given(st.integers(0, 2**35 - 1))
def test_uvarint_round_trip(value: int) -> None:
    encoded = write_uvarint(value)
    assert read_uvarint(encoded + b"\x01", 0) == (value, len(encoded))


@given(st.binary(max_size=200), st.integers(1, 500))
def test_framing_random_bytes(data: bytes, max_size: int) -> None:
    try:
        split_frames(data, max_size)
    except ProtocolError:
        pass


@given(st.binary(max_size=120), st.booleans())
def test_headers_random_bytes(data: bytes, flexible: bool) -> None:
    for fn in (
        lambda: parse_request_header(data, flexible),
        lambda: parse_response_header(data, flexible),
        lambda: skip_tagged_fields(data, 0),
        lambda: read_uvarint(data, 0),
        lambda: peek_api(data),
    ):
        try:
            fn()
        except ProtocolError:
            pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(ALL_VERSIONS), st.binary(max_size=160))
def test_request_bodies_random_bytes(api: tuple[int, int], data: bytes) -> None:
    c = codecs.codec(*api)
    try:
        c.decode_request(data, 0)
    except ProtocolError:
        pass


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(ALL_VERSIONS), st.binary(max_size=160))
def test_whole_request_frames_random_bytes(api: tuple[int, int], body: bytes) -> None:
    """A header that parses, followed by garbage: header and body decoding together."""
    key, version = api
    c = codecs.codec(key, version)
    raw = encode_request_header(key, version, 1, "c", c.request_flexible) + body
    try:
        h = parse_request_header(raw, c.request_flexible)
        c.decode_request(raw, h.body_offset)
    except ProtocolError:
        pass


def test_unknown_api_is_a_protocol_error() -> None:
    for key, version in ((9999, 0), (3, 999), (-1, 0)):
        try:
            codecs.codec(key, version)
        except ProtocolError:
            continue
        raise AssertionError(f"codec({key}, {version}) did not raise")


@settings(max_examples=250, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(ALL_VERSIONS), st.data())
def test_bounds_check_accepts_every_valid_request(api: tuple[int, int], data: st.DataObject
                                                  ) -> None:
    """The pre-decode bounds check (protocol.guard) never refuses a well-formed request."""
    c = codecs.codec(*api)
    request = data.draw(st.from_type(c.request_type))
    body = b"\x00\x01" + codecs.encode_request(request)
    if c.guard is not None:
        assert c.guard(body, 2, len(body)) == len(body)
    try:
        decoded = c.decode_request(body, 2)
    except ProtocolError as e:
        # kio cannot read back timedeltas at the very ends of the int64 millisecond range.
        assume("timedelta" not in str(e))
        raise
    assert decoded == request


def test_huge_declared_counts_are_refused_before_decoding() -> None:
    """kio's native reader reserves memory from a declared count; the allocation failing
    would abort the process, so counts beyond the bytes left are refused first."""
    cases = [
        (3, 1, struct.pack(">i", 2**31 - 1)),  # Metadata v1: topics
        (19, 5, write_uvarint(2**32 - 1)),  # CreateTopics v5 (flexible): topics
        # Fetch v4: replica, max wait, min bytes, max bytes, isolation, then topics.
        (1, 4, struct.pack(">iiiib", -1, 0, 0, 0, 0) + struct.pack(">i", 2**31 - 1)),
        # CreateTopics v2: one topic whose replica assignments array is huge.
        (19, 2, struct.pack(">ih", 1, 1) + b"t" + struct.pack(">ihi", 1, 1, 2**31 - 1)),
    ]
    for key, version, body in cases:
        try:
            codecs.codec(key, version).decode_request(body, 0)
        except ProtocolError as e:
            assert "bytes left" in str(e) or "elements in" in str(e), str(e)
            continue
        raise AssertionError(f"api {key} v{version} accepted a huge count")


@settings(max_examples=250, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(ALL_VERSIONS), st.data())
def test_corrupted_valid_requests(api: tuple[int, int], data: st.DataObject) -> None:
    """Valid requests with a huge count or random bytes written somewhere inside: deep
    array counts are reached, and decoding still fails only with ProtocolError."""
    c = codecs.codec(*api)
    body = bytearray(codecs.encode_request(data.draw(st.from_type(c.request_type))))
    if not body:
        return
    pos = data.draw(st.integers(0, len(body) - 1))
    patch = data.draw(st.sampled_from([
        b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff\x0f", b"\x40\x00\x00\x00",
    ]) | st.binary(min_size=1, max_size=6))
    body[pos:pos + len(patch)] = patch
    try:
        c.decode_request(bytes(body), 0)
    except ProtocolError:
        pass


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(sorted(GENERATED)), st.data())
def test_generated_responses_round_trip(api: tuple[int, int], data: st.DataObject) -> None:
    """The codecs generated from Kafka's specs (protocol/generated) read back what they
    write, through kio's own reader and writer."""
    c = codecs.codec(*api)
    response = data.draw(st.from_type(c.response_type))
    assert codecs.decode_response(*api, c.encode_response(response), 0) == response
