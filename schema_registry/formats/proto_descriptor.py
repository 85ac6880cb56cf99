"""``.proto`` text as a ``FileDescriptorProto`` (what ``format=serialized`` answers and
confluent-kafka's Python deserializer reads): messages, fields, oneofs, maps, enums,
nested types and imports. Named types keep the name as written (the descriptor pool
resolves it by protobuf's scoping rules); options and services are left out."""

from __future__ import annotations

from typing import Any

from proto_schema_parser import ast
from proto_schema_parser.parser import Parser

_SCALARS = {"double": 1, "float": 2, "int64": 3, "uint64": 4, "int32": 5, "fixed64": 6,
            "fixed32": 7, "bool": 8, "string": 9, "bytes": 12, "uint32": 13,
            "sfixed32": 15, "sfixed64": 16, "sint32": 17, "sint64": 18}
_LABELS = {"REPEATED": 3, "REQUIRED": 2, "OPTIONAL": 1}


def _entry_name(field: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in field.split("_")) + "Entry"


def _typed(fd: Any, type_name: str) -> None:
    if type_name in _SCALARS:
        fd.type = _SCALARS[type_name]
    else:
        fd.type_name = type_name


def _message(out: Any, m: Any) -> None:
    out.name = m.name

    def field(f: Any, oneof: int | None) -> None:
        fd = out.field.add(name=f.name, number=f.number)
        if isinstance(f, ast.MapField):
            entry = out.nested_type.add(name=_entry_name(f.name))
            entry.options.map_entry = True
            key = entry.field.add(name="key", number=1, label=1)
            _typed(key, f.key_type)
            value = entry.field.add(name="value", number=2, label=1)
            _typed(value, f.value_type)
            fd.label = 3
            fd.type = 11
            fd.type_name = entry.name
        else:
            card = f.cardinality.value if f.cardinality is not None else "OPTIONAL"
            fd.label = _LABELS.get(card, 1)
            _typed(fd, f.type)
        if oneof is not None:
            fd.oneof_index = oneof

    for el in m.elements:
        if isinstance(el, ast.OneOf):
            index = len(out.oneof_decl)
            out.oneof_decl.add(name=el.name)
            for f in el.elements:
                if isinstance(f, ast.Field | ast.MapField):
                    field(f, index)
        elif isinstance(el, ast.Field | ast.MapField):
            field(el, None)
        elif isinstance(el, ast.Message):
            _message(out.nested_type.add(), el)
        elif isinstance(el, ast.Enum):
            _enum(out.enum_type.add(), el)


def _enum(out: Any, e: Any) -> None:
    out.name = e.name
    for v in e.elements:
        if isinstance(v, ast.EnumValue):
            out.value.add(name=v.name, number=v.number)


def to_descriptor(text: str, name: str = "default") -> bytes:
    from google.protobuf import descriptor_pb2

    tree = Parser().parse(text)
    fd = descriptor_pb2.FileDescriptorProto(name=name, syntax=tree.syntax or "proto2")
    for el in tree.file_elements:
        if isinstance(el, ast.Package):
            fd.package = el.name
        elif isinstance(el, ast.Import):
            fd.dependency.append(el.name)
        elif isinstance(el, ast.Message):
            _message(fd.message_type.add(), el)
        elif isinstance(el, ast.Enum):
            _enum(fd.enum_type.add(), el)
    data: bytes = fd.SerializeToString()
    return data
