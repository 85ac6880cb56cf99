"""Bounds check of a request body before kio's native reader sees it.

kio's reader (Rust) reserves memory for an array from the element count on the wire
before reading any element; a count of a few billion in a 60-byte frame makes that
allocation fail, and a failed allocation in Rust aborts the whole process. Kafka bounds
such counts by the bytes that remain (every element takes at least one byte), so this
walks the body with the schema and refuses any array or string whose declared size
exceeds what is left, raising ``ProtocolError``.

The walk is compiled once per entity class; entities with no array anywhere in them
(Heartbeat, for one) are not walked at all.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable

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


def _uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise ProtocolError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise ProtocolError("varint too long")


def _need(pos: int, n: int, end: int) -> int:
    if n < 0 or pos + n > end:
        raise ProtocolError(f"declared size {n} exceeds the {end - pos} bytes left")
    return pos + n


def _fixed(width: int) -> Step:
    def step(buf: bytes, pos: int, end: int) -> int:
        return _need(pos, width, end)

    return step


def _string_step(flexible: bool, wide: bool) -> Step:
    """Strings (int16 length), bytes/records (int32 length) or compact forms; -1 is null."""
    if flexible:
        def compact(buf: bytes, pos: int, end: int) -> int:
            n, pos = _uvarint(buf, pos, end)
            return pos if n == 0 else _need(pos, n - 1, end)

        return compact
    size = _I32 if wide else _I16
    width = size.size

    def legacy(buf: bytes, pos: int, end: int) -> int:
        pos = _need(pos, width, end)
        (n,) = size.unpack_from(buf, pos - width)
        return pos if n == -1 else _need(pos, n, end)

    return legacy


def _array(flexible: bool, element: Step, width: int | None) -> Step:
    def step(buf: bytes, pos: int, end: int) -> int:
        if flexible:
            n, pos = _uvarint(buf, pos, end)
            n -= 1
        else:
            pos = _need(pos, 4, end)
            (n,) = _I32.unpack_from(buf, pos - 4)
        if n < 0:
            if n == -1:
                return pos  # null array
            raise ProtocolError(f"negative array length {n}")
        if width is not None:
            return _need(pos, n * width, end)
        if n > end - pos:
            raise ProtocolError(f"array of {n} elements in {end - pos} bytes")
        for _ in range(n):
            pos = element(buf, pos, end)
        return pos

    return step


def _primitive(kafka_type: str, flexible: bool) -> tuple[Step, int | None]:
    width = _FIXED.get(kafka_type)
    if width is not None:
        return _fixed(width), width
    if kafka_type == "string":
        return _string_step(flexible, wide=False), None
    if kafka_type in ("bytes", "records"):
        return _string_step(flexible, wide=True), None
    raise ValueError(f"no bounds check for kafka type {kafka_type!r}")


def _field_step(f: dataclasses.Field[object], flexible: bool, tagged: bool) -> Step | None:
    """The step for one field, or None when the field holds no array at any depth."""
    fc = classify_field(f)
    kafka_type = f.metadata.get("kafka_type", "")
    if isinstance(fc, PrimitiveField):
        step, _ = _primitive(kafka_type, flexible)
        return step
    if isinstance(fc, PrimitiveTupleField):
        element, width = _primitive(kafka_type, flexible)
        return _array(flexible, element, width)
    if isinstance(fc, EntityTupleField):
        return _array(flexible, _entity_step(fc.type_), None)
    assert isinstance(fc, EntityField)
    inner = _entity_step(fc.type_)
    if tagged or not is_optional(f):
        return inner

    def nullable(buf: bytes, pos: int, end: int) -> int:
        pos = _need(pos, 1, end)
        return pos if buf[pos - 1] == 0xFF else inner(buf, pos, end)

    return nullable


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


def _entity_step(cls: type[object]) -> Step:
    flexible = bool(getattr(cls, "__flexible__", False))
    steps: list[Step] = []
    tags: dict[int, Step] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        tag = f.metadata.get("tag")
        step = _field_step(f, flexible, tagged=tag is not None)
        assert step is not None
        if tag is not None:
            tags[int(tag)] = step
        else:
            steps.append(step)

    def entity(buf: bytes, pos: int, end: int) -> int:
        for step in steps:
            pos = step(buf, pos, end)
        if not flexible:
            return pos
        count, pos = _uvarint(buf, pos, end)
        if count > end - pos:
            raise ProtocolError(f"{count} tagged fields in {end - pos} bytes")
        for _ in range(count):
            tag, pos = _uvarint(buf, pos, end)
            size, pos = _uvarint(buf, pos, end)
            stop = _need(pos, size, end)
            known = tags.get(tag)
            if known is not None:
                known(buf, pos, stop)
            pos = stop
        return pos

    return entity


def request_guard(cls: type[object]) -> Step | None:
    """A bounds check for bodies of ``cls``, or None when the entity holds no array."""
    if cls in _compiled:
        return _compiled[cls]
    guard = _entity_step(cls) if _has_array(cls) else None
    _compiled[cls] = guard
    return guard


def check_body(cls: type[object], buf: bytes, offset: int) -> None:
    guard = request_guard(cls)
    if guard is not None:
        guard(buf, offset, len(buf))
