"""Varints as Kafka writes them: unsigned (LEB128: tagged fields and compact lengths of
flexible versions) and signed (zigzag over the same bytes: the fields of a record).

One reader serves both: a signed varint is the zigzag decoding of the unsigned one. It
accepts up to ten bytes, the width of a varlong (a record's timestamp delta); a value too
large for the field it fills then fails that field's own bounds check.
"""

from __future__ import annotations

from .errors import ProtocolError

_U64 = 0xFFFFFFFFFFFFFFFF


def read_uvarint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    try:
        b = buf[pos]
    except IndexError:
        raise ProtocolError("truncated varint") from None
    if b < 0x80:  # one byte: most lengths, counts and deltas
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    n = len(buf)
    pos += 1
    while True:
        if pos >= n:
            raise ProtocolError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtocolError("varint too long")


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """The signed (zigzag) varint at ``pos`` and the position after it."""
    v, pos = read_uvarint(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def put_uvarint(out: bytearray, value: int) -> None:
    """Append ``value`` (>= 0) as an unsigned varint."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def put_varint(out: bytearray, value: int) -> None:
    """Append ``value`` as a signed (zigzag) varint."""
    v = ((value << 1) ^ (value >> 63)) & _U64
    if v < 0x80:  # one byte: most lengths and deltas of a record
        out.append(v)
    else:
        put_uvarint(out, v)


def write_uvarint(value: int) -> bytes:
    """``value`` (>= 0) as an unsigned varint."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    put_uvarint(out, value)
    return bytes(out)
