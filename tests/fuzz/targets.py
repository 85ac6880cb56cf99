"""Fuzz targets: each takes arbitrary bytes and may raise only ``ProtocolError``.

Anything else escaping a target (an IndexError, a UnicodeDecodeError, a Rust panic or
abort in kio, a hang) is a bug: on the broker it would cost a connection its answer or
the whole process. The same functions replay the crash reproducers in
``tests/fuzz/crashes/`` as ordinary tests and run under atheris (``tests/fuzz/run.py``).

- ``frame``: a client byte stream cut into frames (``FrameDecoder``), in chunks chosen by
  the first byte, and every frame decoded as a request;
- ``header``: request headers v1 and v2 of any API key and version (client id, tagged
  fields), alone: the ``request`` target reaches them only for a known key and version;
- ``request``: one request frame body: header (v1/v2), then the body through
  ``protocol.guard`` and kio's reader, as the broker's dispatch does;
- ``records``: record batches (``check_batch``, ``decode_batch`` with every codec,
  ``iter_batch_headers``); the CRC is also re-computed so the fuzzer gets past it;
- ``offsets``: ``__consumer_offsets`` keys and values and the consumer protocol's
  subscriptions and assignments (input: ``uint16`` key length, key, value; a length of
  0xFFFE or 0xFFFF marks a subscription or an assignment).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable

import crc32c
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    is_optional,
)

from kafkalite.protocol import apis as codecs
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.framing import FrameDecoder
from kafkalite.protocol.headers import parse_request_header, peek_api
from kafkalite.protocol.records import (
    BATCH_LENGTH_POS,
    CRC_POS,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    check_batch,
    decode_batch,
    iter_batch_headers,
)

#: Small enough that the fuzzer reaches the limit, as a client declaring a huge frame.
MAX_FRAME = 1 << 16


def _check_nulls(entity: object) -> None:
    """A decoded request holds None only where the schema allows null."""
    for f in dataclasses.fields(entity):  # type: ignore[arg-type]
        value = getattr(entity, f.name)
        fc = classify_field(f)
        if value is None:
            if isinstance(fc, EntityTupleField | PrimitiveTupleField | EntityField) and (
                    not is_optional(f)):
                raise AssertionError(f"{type(entity).__name__}.{f.name} is None")
            continue
        if isinstance(fc, EntityTupleField):
            for item in value:
                _check_nulls(item)
        elif isinstance(fc, EntityField):
            _check_nulls(value)


def request(data: bytes) -> None:
    try:
        api_key, api_version, _corr = peek_api(data)
        c = codecs.codec(api_key, api_version)
        header = parse_request_header(data, c.request_flexible)
        decoded = c.decode_request(data, header.body_offset)
    except ProtocolError:
        return
    _check_nulls(decoded)


def header(data: bytes) -> None:
    for flexible in (False, True):
        try:
            h = parse_request_header(data, flexible)
        except ProtocolError:
            continue
        if not 10 <= h.body_offset <= len(data):
            raise AssertionError(f"header ends at {h.body_offset} of {len(data)} bytes")


def frame(data: bytes) -> None:
    if not data:
        return
    step = data[0] % 61 + 1
    dec = FrameDecoder(MAX_FRAME)
    fed = 0
    out = 0
    try:
        for i in range(1, len(data), step):
            chunk = data[i : i + step]
            fed += len(chunk)
            for f in dec.feed(chunk):
                out += 4 + len(f)
                request(f)
    except ProtocolError:
        return
    if out + dec.buffered != fed:
        raise AssertionError(f"frame decoder lost bytes: {out} + {dec.buffered} != {fed}")


def _fixed_crc(data: bytes) -> bytes | None:
    if len(data) < HEADER_SIZE:
        return None
    (length,) = struct.unpack_from(">i", data, BATCH_LENGTH_POS)
    end = min(len(data), max(length + LOG_OVERHEAD, HEADER_SIZE))
    buf = bytearray(data)
    struct.pack_into(">I", buf, CRC_POS, crc32c.crc32c(memoryview(buf)[CRC_START:end]))
    return bytes(buf)


def records(data: bytes) -> None:
    for candidate in (data, _fixed_crc(data)):
        if candidate is None:
            continue
        try:
            check_batch(candidate)
            decode_batch(candidate)
        except ProtocolError:
            pass
        for pos, h in iter_batch_headers(candidate):
            if pos + h.size > len(candidate):
                raise AssertionError("iter_batch_headers yielded a batch past the buffer")


def offsets(data: bytes) -> None:
    if len(data) < 2:
        return
    (n,) = struct.unpack_from(">H", data, 0)
    rest = data[2:]
    try:
        if n == 0xFFFE:
            co.decode_subscription(rest)
        elif n == 0xFFFF:
            co.decode_assignment(rest)
        else:
            key = co.decode_key(rest[:n])
            co.decode_value(key, rest[n:])
    except ProtocolError:
        pass


TARGETS: dict[str, Callable[[bytes], None]] = {
    "frame": frame,
    "header": header,
    "request": request,
    "records": records,
    "offsets": offsets,
}

#: Seed corpus directories (under tests/fuzz/corpus) of each target.
SEEDS: dict[str, tuple[str, ...]] = {
    "frame": ("stream",),
    "header": ("request",),
    "request": ("request",),
    "records": ("records",),
    "offsets": ("offsets",),
}
