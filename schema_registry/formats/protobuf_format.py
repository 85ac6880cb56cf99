"""PROTOBUF: ``.proto`` text parsed by ``proto-schema-parser``, or a base64
``FileDescriptorProto`` (what confluent-kafka's Python serializer registers) read with
``protobuf``; both become one model of messages, fields and enums, compared with the main
rules of Confluent's ``ProtobufSchema`` compatibility (docs/compatibility.md lists gaps)."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import invalid_schema
from . import PROTOBUF, Parsed, Resolved

#: Scalar kinds Confluent treats as wire-compatible with each other.
_GROUPS = ({"int32", "uint32", "int64", "uint64", "bool"}, {"sint32", "sint64"},
           {"fixed32", "sfixed32"}, {"fixed64", "sfixed64"}, {"string", "bytes"})
SCALARS = {"double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
           "fixed32", "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes"}
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]+$")


@dataclass(frozen=True, slots=True)
class FieldInfo:
    name: str
    type: str  # a scalar's name, "map<k,v>", or a named type's last component
    named: bool
    label: str  # "", "optional", "repeated" or "required"
    oneof: str | None = None


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
                fields[f.number] = FieldInfo(f.name, f"map<{f.key_type},{_short(f.value_type)}>",
                                             False, "repeated", oneof)
            elif isinstance(f, ast.Field):
                label = f.cardinality.value.lower() if f.cardinality is not None else ""
                named = f.type not in SCALARS
                fields[f.number] = FieldInfo(f.name, _short(f.type) if named else f.type,
                                             named, label, oneof)

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
                vt = _TYPE_NAMES.get(v.type) or _short(v.type_name)
                fields[f.number] = FieldInfo(f.name, f"map<{_TYPE_NAMES.get(k.type)},{vt}>",
                                             False, "repeated", oneof)
            elif f.type in (11, 14):
                fields[f.number] = FieldInfo(f.name, _short(f.type_name), True, label, oneof)
            else:
                fields[f.number] = FieldInfo(f.name, _TYPE_NAMES.get(f.type, "group"), False,
                                             label, oneof)
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
        return diff(writer.model, reader.model)


def _issue(out: list[str], kind: str, path: str) -> None:
    out.append(f"{{errorType:'{kind}', description:'The new schema is incompatible with the "
               f"old schema at path '{path}''}}")


def _scalar_compatible(a: str, b: str) -> bool:
    return a == b or any(a in g and b in g for g in _GROUPS)


def diff(original: ProtoModel, update: ProtoModel) -> list[str]:
    """The changes from ``original`` to ``update`` Confluent counts as incompatible."""
    out: list[str] = []
    if original.package != update.package:
        _issue(out, "PACKAGE_CHANGED", "#/")
    for name, fields in original.messages.items():
        new = update.messages.get(name)
        if new is None:
            _issue(out, "MESSAGE_REMOVED", f"#/{name}")
            continue
        moved_to_oneof: dict[str, int] = {}
        for number, f in fields.items():
            where = f"#/{name}/{number}"
            g = new.get(number)
            if g is None:
                if f.label == "required":
                    _issue(out, "REQUIRED_FIELD_REMOVED", where)
                elif f.oneof is not None:
                    _issue(out, "ONEOF_FIELD_REMOVED", where)
                continue
            if f.named != g.named or f.type.startswith("map<") != g.type.startswith("map<"):
                _issue(out, "FIELD_KIND_CHANGED", where)
            elif f.named and f.type != g.type:
                _issue(out, "FIELD_NAMED_TYPE_CHANGED", where)
            elif not f.named and not _scalar_compatible(f.type, g.type):
                _issue(out, "FIELD_SCALAR_KIND_CHANGED", where)
            elif (f.label == "repeated") != (g.label == "repeated") and (
                    f.named or (f.type in ("string", "bytes") and g.type not in ("string",
                                                                                "bytes"))):
                _issue(out, "FIELD_LABEL_CHANGED", where)
            if f.oneof is None and g.oneof is not None:
                moved_to_oneof[g.oneof] = moved_to_oneof.get(g.oneof, 0) + 1
                if any(x.oneof == g.oneof for x in fields.values()):
                    _issue(out, "FIELD_MOVED_TO_EXISTING_ONEOF", where)
        for oneof, count in moved_to_oneof.items():
            if count > 1:
                _issue(out, "MULTIPLE_FIELDS_MOVED_TO_ONEOF", f"#/{name}/{oneof}")
        for number, g in new.items():
            if number not in fields and g.label == "required":
                _issue(out, "REQUIRED_FIELD_ADDED", f"#/{name}/{number}")
    return out
