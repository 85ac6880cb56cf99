"""Readers and writers of Kafka's message-schema primitives, for hand-written record codecs.

The ``__consumer_offsets`` keys and values are generated from JSON schemas in Kafka; kio
has no codecs for them, so :mod:`.consumer_offsets` and :mod:`.consumer_group_records`
write them by hand with these two classes. ``flexible`` selects the compact encodings
(unsigned-varint lengths plus one, tagged fields) of a schema's flexible versions.

Pure: no imports from the coordinator or broker.
"""

from __future__ import annotations

import struct
import uuid

from .errors import ProtocolError
from .varint import put_uvarint, read_uvarint

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class Writer:
    __slots__ = ("buf", "flexible")

    def __init__(self, flexible: bool = False) -> None:
        self.buf = bytearray()
        self.flexible = flexible

    def i8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def i16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def i32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def i64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def uuid(self, v: uuid.UUID) -> None:
        self.buf += v.bytes

    def uvarint(self, v: int) -> None:
        put_uvarint(self.buf, v)

    def _len(self, n: int | None) -> None:
        if self.flexible:
            self.uvarint(0 if n is None else n + 1)
        else:
            self.i16(-1 if n is None else n)

    def string(self, s: str | None) -> None:
        if s is None:
            self._len(None)
            return
        b = s.encode("utf-8")
        self._len(len(b))
        self.buf += b

    def bytes_(self, b: bytes | None) -> None:
        if self.flexible:
            self.uvarint(0 if b is None else len(b) + 1)
        else:
            self.i32(-1 if b is None else len(b))
        if b is not None:
            self.buf += b

    def array_len(self, n: int | None) -> None:
        if self.flexible:
            self.uvarint(0 if n is None else n + 1)
        else:
            self.i32(-1 if n is None else n)

    def tags(self, fields: list[tuple[int, bytes]] | None = None) -> None:
        """The tagged-field section: ``fields`` as (tag, encoded value), ascending tags."""
        if not self.flexible:
            return
        fields = fields or []
        self.uvarint(len(fields))
        for tag, data in fields:
            self.uvarint(tag)
            self.uvarint(len(data))
            self.buf += data


class Reader:
    __slots__ = ("buf", "flexible", "pos")

    def __init__(self, buf: bytes, pos: int = 0, flexible: bool = False) -> None:
        self.buf = buf
        self.pos = pos
        self.flexible = flexible

    def _need(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.buf):
            raise ProtocolError("truncated coordinator record")

    def i8(self) -> int:
        self._need(1)
        (v,) = _I8.unpack_from(self.buf, self.pos)
        self.pos += 1
        return int(v)

    def i16(self) -> int:
        self._need(2)
        (v,) = _I16.unpack_from(self.buf, self.pos)
        self.pos += 2
        return int(v)

    def i32(self) -> int:
        self._need(4)
        (v,) = _I32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return int(v)

    def i64(self) -> int:
        self._need(8)
        (v,) = _I64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return int(v)

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self._raw(16))

    def uvarint(self) -> int:
        v, self.pos = read_uvarint(self.buf, self.pos)
        return v

    def _raw(self, n: int) -> bytes:
        self._need(n)
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out

    def string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.i16()
        if n < 0:
            return None
        try:
            return self._raw(n).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ProtocolError("string is not utf-8") from e

    def req_string(self) -> str:
        s = self.string()
        if s is None:
            raise ProtocolError("null string in a non-nullable field")
        return s

    def bytes_(self) -> bytes | None:
        n = self.uvarint() - 1 if self.flexible else self.i32()
        if n < 0:
            return None
        return self._raw(n)

    def array_len(self) -> int:
        n = self.uvarint() - 1 if self.flexible else self.i32()
        return max(n, 0)

    def tagged(self) -> dict[int, bytes]:
        """The tagged-field section as {tag: raw value}; empty for non-flexible versions."""
        out: dict[int, bytes] = {}
        if not self.flexible:
            return out
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out[tag] = self._raw(self.uvarint())
        return out

    def tags(self) -> None:
        """Skip the tagged-field section (no tag is known to the caller)."""
        self.tagged()

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos
