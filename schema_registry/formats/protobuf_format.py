"""PROTOBUF: ``.proto`` text parsed by ``proto-schema-parser``, or a base64
``FileDescriptorProto`` (what confluent-kafka's Python serializer registers) read with
``protobuf``; both become one model of messages, fields and enums, compared by
``protobuf_diff`` with Confluent's ``ProtobufSchemaDiff`` rules."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import invalid_schema
from . import PROTOBUF, Parsed, Resolved

SCALARS = {"double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
           "fixed32", "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes"}
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]+$")


@dataclass(frozen=True, slots=True)
class FieldInfo:
    name: str
    type: str  # a scalar's name, "map<k,v>", or a named type as written
    label: str  # "", "optional", "repeated" or "required"
    oneof: str | None = None
    scope: str = ""  # the message declaring the field, where its type names resolve


@dataclass(slots=True)
class ProtoModel:
    package: str = ""
    messages: dict[str, dict[int, FieldInfo]] = field(default_factory=dict)
    enums: dict[str, dict[int, str]] = field(default_factory=dict)
    descriptor: bytes | None = None


class _Raise:
    """An ANTLR error listener that stops the parse at the first syntax error."""

    def syntaxError(self, recognizer: Any, symbol: Any, line: int, column: int, msg: str,
                    error: Any) -> None:
        raise ValueError(f"line {line}:{column} {msg}")

    def reportAmbiguity(self, *args: Any) -> None:
        pass

    def reportAttemptingFullContext(self, *args: Any) -> None:
        pass

    def reportContextSensitivity(self, *args: Any) -> None:
        pass


def _quiet(recognizer: Any) -> None:
    recognizer.removeErrorListeners()
    recognizer.addErrorListener(_Raise())


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def from_text(text: str) -> ProtoModel:
    from proto_schema_parser import ast
    from proto_schema_parser.parser import Parser

    tree = Parser(setup_lexer=_quiet, setup_parser=_quiet).parse(text)
    model = ProtoModel()

    def message(prefix: str, m: Any) -> None:
        name = f"{prefix}{m.name}"
        fields: dict[int, FieldInfo] = {}
        model.messages[name] = fields

        def add(f: Any, oneof: str | None) -> None:
            if isinstance(f, ast.MapField):
                fields[f.number] = FieldInfo(f.name, f"map<{f.key_type},{f.value_type}>",
                                             "repeated", oneof, name)
            elif isinstance(f, ast.Field):
                label = f.cardinality.value.lower() if f.cardinality is not None else ""
                fields[f.number] = FieldInfo(f.name, f.type, label, oneof, name)

        for el in m.elements:
            if isinstance(el, ast.OneOf):
                for f in el.elements:
                    add(f, el.name)
            elif isinstance(el, ast.Message):
                message(f"{name}.", el)
            elif isinstance(el, ast.Enum):
                enum(f"{name}.", el)
            else:
                add(el, None)

    def enum(prefix: str, e: Any) -> None:
        model.enums[f"{prefix}{e.name}"] = {
            v.number: v.name for v in e.elements if isinstance(v, ast.EnumValue)}

    for el in tree.file_elements:
        if isinstance(el, ast.Package):
            model.package = el.name
        elif isinstance(el, ast.Message):
            message("", el)
        elif isinstance(el, ast.Enum):
            enum("", el)
    return model


_TYPE_NAMES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64",
               7: "fixed32", 8: "bool", 9: "string", 12: "bytes", 13: "uint32",
               15: "sfixed32", 16: "sfixed64", 17: "sint32", 18: "sint64"}
_LABELS = {1: "optional", 2: "required", 3: "repeated"}


def from_descriptor(raw: bytes) -> ProtoModel:
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    fd = descriptor_pb2.FileDescriptorProto()
    try:
        fd.ParseFromString(raw)
    except DecodeError as e:
        raise ValueError(f"not a FileDescriptorProto: {e}") from None
    if not fd.message_type and not fd.enum_type and not fd.name:
        raise ValueError("an empty FileDescriptorProto")
    model = ProtoModel(package=fd.package, descriptor=raw)
    proto3 = fd.syntax == "proto3"

    def message(prefix: str, m: Any) -> None:
        name = f"{prefix}{m.name}"
        entries = {f"{n.name}": n for n in m.nested_type if n.options.map_entry}
        fields: dict[int, FieldInfo] = {}
        model.messages[name] = fields
        for f in m.field:
            oneof = (m.oneof_decl[f.oneof_index].name
                     if f.HasField("oneof_index") and not f.proto3_optional else None)
            label = _LABELS.get(f.label, "")
            if proto3 and label == "optional" and not f.proto3_optional:
                label = ""
            entry = entries.get(_short(f.type_name)) if f.type == 11 else None
            if entry is not None:
                k, v = entry.field[0], entry.field[1]
                vt = _TYPE_NAMES.get(v.type) or v.type_name
                fields[f.number] = FieldInfo(f.name, f"map<{_TYPE_NAMES.get(k.type)},{vt}>",
                                             "repeated", oneof, name)
            elif f.type in (11, 14) or f.type_name:
                fields[f.number] = FieldInfo(f.name, f.type_name, label, oneof, name)
            else:
                fields[f.number] = FieldInfo(f.name, _TYPE_NAMES.get(f.type, "group"), label,
                                             oneof, name)
        for n in m.nested_type:
            if not n.options.map_entry:
                message(f"{name}.", n)
        for en in m.enum_type:
            model.enums[f"{name}.{en.name}"] = {v.number: v.name for v in en.value}

    for m in fd.message_type:
        message("", m)
    for en in fd.enum_type:
        model.enums[en.name] = {v.number: v.name for v in en.value}
    return model


def looks_serialized(text: str) -> bool:
    """Whether a PROTOBUF schema is a base64 descriptor rather than ``.proto`` text."""
    return _descriptor_bytes(text) is not None


def _descriptor_bytes(text: str) -> bytes | None:
    stripped = text.strip()
    if not stripped or not _BASE64.match(stripped):
        return None
    try:
        return base64.b64decode(stripped, validate=False)
    except (binascii.Error, ValueError):
        return None


class ProtobufFormat:
    def parse(self, text: str, refs: tuple[Resolved, ...], normalize: bool) -> Parsed:
        raw = _descriptor_bytes(text)
        try:
            model = from_descriptor(raw) if raw is not None else from_text(text)
        except (ValueError, TypeError, AttributeError, KeyError) as e:
            raise invalid_schema(f"{text[:200]!r}, details: {e}") from None
        if not model.messages and not model.enums:
            raise invalid_schema(f"{text[:200]!r}, details: no message or enum defined")
        canonical = text.strip() if raw is None else base64.b64encode(raw).decode("ascii")
        return Parsed(PROTOBUF, canonical, model, refs)

    def incompatibilities(self, reader: Parsed, writer: Parsed) -> list[str]:
        from .protobuf_diff import diff, imported

        return diff(writer.model, reader.model, tuple(imported(writer.refs)),
                    tuple(imported(reader.refs)))
