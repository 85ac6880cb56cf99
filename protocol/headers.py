"""Request headers v1/v2 and response headers v0/v1, parsed by hand: they sit on every frame."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .errors import ProtocolError
from .varint import read_uvarint

_PREFIX = struct.Struct(">hhi")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    #: Offset of the request body within the frame.
    body_offset: int


def skip_tagged_fields(buf: bytes, pos: int) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise ProtocolError("truncated tagged field")
    return pos


def peek_api(frame: bytes) -> tuple[int, int, int]:
    """Return (api_key, api_version, correlation_id) of a request frame body.

    Every request header (v1 and v2) holds at least the key, version, correlation id and
    the client id's length: 10 bytes."""
    if len(frame) < 10:
        raise ProtocolError("frame shorter than a request header")
    k, v, c = _PREFIX.unpack_from(frame, 0)
    return int(k), int(v), int(c)


def parse_request_header(frame: bytes, flexible: bool) -> RequestHeader:
    """Parse header v1 (``flexible`` False) or v2 (``flexible`` True)."""
    api_key, api_version, correlation_id = peek_api(frame)
    pos = 8
    if len(frame) < pos + 2:
        raise ProtocolError("truncated client id")
    (n,) = _I16.unpack_from(frame, pos)
    pos += 2
    client_id: str | None
    if n < 0:
        if n != -1:
            raise ProtocolError("bad client id length")
        client_id = None
    else:
        if len(frame) < pos + n:
            raise ProtocolError("truncated client id")
        try:
            client_id = frame[pos : pos + n].decode()
        except UnicodeDecodeError as e:
            raise ProtocolError("client id is not utf-8") from e
        pos += n
    if flexible:
        pos = skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id, pos)


def encode_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, flexible: bool
) -> bytes:
    out = _PREFIX.pack(api_key, api_version, correlation_id)
    if client_id is None:
        out += _I16.pack(-1)
    else:
        raw = client_id.encode()
        out += _I16.pack(len(raw)) + raw
    if flexible:
        out += b"\x00"
    return out


def encode_response_header(correlation_id: int, flexible: bool) -> bytes:
    """Response header v0 (correlation id) or v1 (plus empty tagged fields)."""
    if flexible:
        return _I32.pack(correlation_id) + b"\x00"
    return _I32.pack(correlation_id)


def parse_response_header(frame: bytes, flexible: bool) -> tuple[int, int]:
    """Return (correlation_id, body_offset) of a response frame body."""
    if len(frame) < 4:
        raise ProtocolError("truncated response header")
    (corr,) = _I32.unpack_from(frame, 0)
    pos = 4
    if flexible:
        pos = skip_tagged_fields(frame, pos)
    return int(corr), pos
