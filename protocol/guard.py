"""Bounds check of a request body before kio's native reader sees it.

kio's reader (Rust) reserves memory for an array from the element count on the wire
before reading any element; a count of a few billion in a 60-byte frame makes that
allocation fail, and a failed allocation in Rust aborts the whole process. Kafka bounds
such counts by the bytes that remain (every element takes at least one byte), so this
walks the body with the schema and refuses any array whose declared count exceeds the
bytes left, or that is null where the schema does not allow null, raising ``ProtocolError``.

The walk is generated as Python source once per request class, nested entities inlined
(a generic interpreter of the schema cost five times kio's own decode on a Produce
request); entities with no
array anywhere in them (Heartbeat, for one) are not walked at all. The walk only has to
find every array count where kio will read it: other malformations are left to kio,
and an index or struct error here is reported as a malformed request by the caller.
"""

from __future__ import annotations

import dataclasses
import itertools
import struct
import threading
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
from .varint import read_uvarint

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
_generating = threading.Lock()


def _too_many(n: int, left: int) -> None:
    raise ProtocolError(f"array of {n} elements in {left} bytes left")


class _Gen:
    """Generates one function per top-level entity class; nested entities are inlined (a
    call per array element would cost more than the walk itself)."""

    MAX_INLINE_DEPTH = 8

    def __init__(self) -> None:
        self.ns: dict[str, Any] = {
            "_uvarint": read_uvarint, "_too_many": _too_many, "ProtocolError": ProtocolError,
            "_i16": _I16.unpack_from, "_i32": _I32.unpack_from,
        }
        self.names: dict[type[object], str] = {}

    def function(self, cls: type[object]) -> str:
        name = self.names.get(cls)
        if name is not None:
            return name
        name = f"_e{next(_ids)}"
        lines = [f"def {name}(buf, pos, end):"]
        lines += self.entity(cls, "    ", 0, (cls,))
        lines.append("    return pos")
        exec("\n".join(lines), self.ns)  # generated from the schema, not from input
        self.names[cls] = name  # only once the function exists
        return name

    def entity(self, cls: type[object], ind: str, depth: int,
               stack: tuple[type[object], ...]) -> list[str]:
        """Lines advancing ``pos`` over one ``cls``."""
        flexible = bool(getattr(cls, "__flexible__", False))
        lines: list[str] = []
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
                lines.append(f"{ind}pos += {fixed}")
                fixed = 0
            lines += self.field(f, flexible, False, ind, depth, stack)
        if fixed:
            lines.append(f"{ind}pos += {fixed}")
        if not flexible:
            return lines
        d = depth
        lines += self._varint(f"c{d}", ind)
        if not tags:
            # Unknown tags only: skip each by its size.
            lines.append(f"{ind}if c{d}:")
            lines.append(f"{ind}    if c{d} > end - pos: _too_many(c{d}, end - pos)")
            lines.append(f"{ind}    for _ in range(c{d}):")
            lines += self._varint(f"t{d}", ind + "        ")
            lines += self._varint(f"s{d}", ind + "        ")
            lines.append(f"{ind}        pos += s{d}")
            return lines
        lines.append(f"{ind}if c{d}:")
        lines.append(f"{ind}    if c{d} > end - pos: _too_many(c{d}, end - pos)")
        lines.append(f"{ind}    for _ in range(c{d}):")
        inner = ind + "        "
        lines += self._varint(f"t{d}", inner)
        lines += self._varint(f"s{d}", inner)
        lines.append(f"{inner}stop{d} = pos + s{d}")
        lines.append(f"{inner}if stop{d} > end: raise ProtocolError('tagged field overruns')")
        for i, (tag, f) in enumerate(tags):
            lines.append(f"{inner}{'if' if i == 0 else 'elif'} t{d} == {tag}:")
            lines.append(f"{inner}    end{d} = end; end = stop{d}")
            lines += self.field(f, True, True, inner + "    ", depth + 1, stack)
            lines.append(f"{inner}    end = end{d}")
        lines.append(f"{inner}pos = stop{d}")
        return lines

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

    @staticmethod
    def _not_null(f: dataclasses.Field[object], ind: str) -> list[str]:
        # kio reads a null (-1) count as None even where the schema forbids null; Kafka
        # refuses such a request as malformed, and handlers may rely on the array.
        if is_optional(f):
            return []
        return [f"{ind}if n < 0: raise ProtocolError('null array in a non-nullable field')"]

    def _nested(self, cls: type[object], ind: str, depth: int,
                stack: tuple[type[object], ...]) -> list[str]:
        if cls in stack or depth >= self.MAX_INLINE_DEPTH:
            return [f"{ind}pos = {self.function(cls)}(buf, pos, end)"]
        return self.entity(cls, ind, depth, (*stack, cls)) or [f"{ind}pass"]

    def field(self, f: dataclasses.Field[object], flexible: bool, tagged: bool, ind: str,
              depth: int, stack: tuple[type[object], ...]) -> list[str]:
        fc = classify_field(f)
        kafka_type = f.metadata.get("kafka_type", "")
        if isinstance(fc, PrimitiveField):
            width = _FIXED.get(kafka_type)
            if width is not None:
                return [f"{ind}pos += {width}"]
            if kafka_type in ("string", "bytes", "records"):
                return self._string(kafka_type, flexible, ind)
            raise ValueError(f"no bounds check for kafka type {kafka_type!r}")
        if isinstance(fc, PrimitiveTupleField):
            lines = self._count(flexible, ind) + self._not_null(f, ind)
            lines.append(f"{ind}if n > end - pos: _too_many(n, end - pos)")
            width = _FIXED.get(kafka_type)
            if width is not None:
                lines.append(f"{ind}if n > 0: pos += n * {width}")
                return lines
            lines.append(f"{ind}for _ in range(n):")
            return lines + self._string(kafka_type, flexible, ind + "    ")
        if isinstance(fc, EntityTupleField):
            lines = self._count(flexible, ind) + self._not_null(f, ind)
            lines.append(f"{ind}if n > end - pos: _too_many(n, end - pos)")
            lines.append(f"{ind}for _ in range(n):")
            return lines + self._nested(fc.type_, ind + "    ", depth + 1, stack)
        assert isinstance(fc, EntityField)
        if tagged or not is_optional(f):
            return self._nested(fc.type_, ind, depth + 1, stack)
        lines = [f"{ind}pos += 1", f"{ind}if buf[pos - 1] != 0xFF:"]
        return lines + self._nested(fc.type_, ind + "    ", depth + 1, stack)


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
    # Brokers on several threads of one process (test fixtures) may meet a request class
    # for the first time together: one generates, the others wait for it.
    with _generating:
        if cls in _compiled:
            return _compiled[cls]
        guard: Step | None = None
        if _has_array(cls):
            guard = _gen.ns[_gen.function(cls)]
        _compiled[cls] = guard
    return guard
