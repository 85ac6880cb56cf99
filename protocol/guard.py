"""Bounds check of a request body before kio's native reader sees it.

kio's reader (Rust) reserves memory for an array from the element count on the wire
before reading any element; a count of a few billion in a 60-byte frame makes that
allocation fail, and a failed allocation in Rust aborts the whole process. Kafka bounds
such counts by the bytes that remain (every element takes at least one byte), so this
walks the body with the schema and refuses any array whose declared count exceeds the
bytes left, raising ``ProtocolError``.

The walk is generated as Python source once per entity class (a generic interpreter of
the schema cost five times kio's own decode on a Produce request); entities with no
array anywhere in them (Heartbeat, for one) are not walked at all. The walk only has to
find every array count where kio will read it: other malformations are left to kio,
and an index or struct error here is reported as a malformed request by the caller.
"""

from __future__ import annotations

import dataclasses
import itertools
import struct
from collections.abc import Callable
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    is_optional,
)

from .errors import ProtocolError

Step = Callable[[bytes, int, int], int]

_FIXED = {
    "int8": 1, "bool": 1, "uint8": 1,
    "int16": 2, "uint16": 2, "error_code": 2,
    "int32": 4, "uint32": 4, "timedelta_i32": 4,
    "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8, "datetime_i64": 8,
    "uuid": 16,
}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

_compiled: dict[type[object], Step | None] = {}
_ids = itertools.count()


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise ProtocolError("varint too long")


def _too_many(n: int, left: int) -> None:
    raise ProtocolError(f"array of {n} elements in {left} bytes left")


class _Gen:
    """Generates one function per entity class into a shared namespace."""

    def __init__(self) -> None:
        self.ns: dict[str, Any] = {
            "_uvarint": _uvarint, "_too_many": _too_many, "ProtocolError": ProtocolError,
            "_i16": _I16.unpack_from, "_i32": _I32.unpack_from,
        }
        self.names: dict[type[object], str] = {}

    def entity(self, cls: type[object]) -> str:
        name = self.names.get(cls)
        if name is not None:
            return name
        name = self.names[cls] = f"_e{next(_ids)}"
        flexible = bool(getattr(cls, "__flexible__", False))
        lines = [f"def {name}(buf, pos, end):"]
        tags: list[tuple[int, dataclasses.Field[object]]] = []
        fixed = 0
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            tag = f.metadata.get("tag")
            if tag is not None:
                tags.append((int(tag), f))
                continue
            width = self._fixed_width(f)
            if width is not None:
                fixed += width
                continue
            if fixed:
                lines.append(f"    pos += {fixed}")
                fixed = 0
            lines += self.field(f, flexible, tagged=False, indent="    ")
        if fixed:
            lines.append(f"    pos += {fixed}")
        if flexible:
            lines += self._varint("count", "    ")
            lines.append("    if count > end - pos: _too_many(count, end - pos)")
            lines.append("    for _ in range(count):")
            lines += self._varint("tag", "        ")
            lines += self._varint("size", "        ")
            lines.append("        stop = pos + size")
            lines.append("        if stop > end: raise ProtocolError('tagged field overruns')")
            first = True
            for tag, f in tags:
                kw = "if" if first else "elif"
                first = False
                lines.append(f"        {kw} tag == {tag}:")
                lines.append("            sub_end = end; end = stop")
                lines += self.field(f, True, tagged=True, indent="            ")
                lines.append("            end = sub_end")
            lines.append("        pos = stop")
        lines.append("    return pos")
        exec("\n".join(lines), self.ns)  # generated from the schema, not from input
        return name

    @staticmethod
    def _fixed_width(f: dataclasses.Field[object]) -> int | None:
        fc = classify_field(f)
        if isinstance(fc, PrimitiveField):
            return _FIXED.get(f.metadata.get("kafka_type", ""))
        return None

    @staticmethod
    def _varint(var: str, ind: str) -> list[str]:
        return [
            f"{ind}{var} = buf[pos]",
            f"{ind}if {var} & 0x80: {var}, pos = _uvarint(buf, pos)",
            f"{ind}else: pos += 1",
        ]

    def _string(self, kafka_type: str, flexible: bool, ind: str) -> list[str]:
        if flexible:
            return [*self._varint("n", ind), f"{ind}if n: pos += n - 1"]
        if kafka_type == "string":
            return [f"{ind}n = _i16(buf, pos)[0]", f"{ind}pos += 2 + (n if n > 0 else 0)"]
        return [f"{ind}n = _i32(buf, pos)[0]", f"{ind}pos += 4 + (n if n > 0 else 0)"]

    def _count(self, flexible: bool, ind: str) -> list[str]:
        if flexible:
            return [*self._varint("n", ind), f"{ind}n -= 1"]
        return [f"{ind}n = _i32(buf, pos)[0]", f"{ind}pos += 4"]

    def field(self, f: dataclasses.Field[object], flexible: bool, tagged: bool,
              indent: str) -> list[str]:
        fc = classify_field(f)
        kafka_type = f.metadata.get("kafka_type", "")
        ind = indent
        if isinstance(fc, PrimitiveField):
            width = _FIXED.get(kafka_type)
            if width is not None:
                return [f"{ind}pos += {width}"]
            if kafka_type in ("string", "bytes", "records"):
                return self._string(kafka_type, flexible, ind)
            raise ValueError(f"no bounds check for kafka type {kafka_type!r}")
        if isinstance(fc, PrimitiveTupleField):
            lines = self._count(flexible, ind)
            lines.append(f"{ind}if n > end - pos: _too_many(n, end - pos)")
            width = _FIXED.get(kafka_type)
            if width is not None:
                lines.append(f"{ind}if n > 0: pos += n * {width}")
                return lines
            lines.append(f"{ind}for _ in range(n):")
            return lines + self._string(kafka_type, flexible, ind + "    ")
        if isinstance(fc, EntityTupleField):
            inner = self.entity(fc.type_)
            lines = self._count(flexible, ind)
            lines.append(f"{ind}if n > end - pos: _too_many(n, end - pos)")
            lines.append(f"{ind}for _ in range(n): pos = {inner}(buf, pos, end)")
            return lines
        assert isinstance(fc, EntityField)
        inner = self.entity(fc.type_)
        if tagged or not is_optional(f):
            return [f"{ind}pos = {inner}(buf, pos, end)"]
        return [
            f"{ind}pos += 1",
            f"{ind}if buf[pos - 1] != 0xFF: pos = {inner}(buf, pos, end)",
        ]


_gen = _Gen()


def _has_array(cls: type[object], seen: frozenset[type[object]] = frozenset()) -> bool:
    if cls in seen:
        return False
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        fc = classify_field(f)
        if isinstance(fc, PrimitiveTupleField | EntityTupleField):
            return True
        if isinstance(fc, EntityField) and _has_array(fc.type_, seen | {cls}):
            return True
    return False


def request_guard(cls: type[object]) -> Step | None:
    """A bounds check for bodies of ``cls``, or None when the entity holds no array.

    The check returns the position after the body; it raises ``ProtocolError`` for a
    count beyond the bytes left, and may raise IndexError or struct.error on a body
    cut short (callers report those as malformed requests too)."""
    if cls in _compiled:
        return _compiled[cls]
    guard: Step | None = None
    if _has_array(cls):
        guard = _gen.ns[_gen.entity(cls)]
    _compiled[cls] = guard
    return guard
