"""The formats' compatibility rules, schema against schema (no broker)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafkalite.schema_registry.errors import RegistryError
from kafkalite.schema_registry.formats import format_for, parse


def issues(kind: str, reader: Any, writer: Any) -> list[str]:
    r = parse(kind, reader if isinstance(reader, str) else json.dumps(reader))
    w = parse(kind, writer if isinstance(writer, str) else json.dumps(writer))
    return format_for(kind).incompatibilities(r, w)


def obj(props: dict[str, Any], closed: bool = False, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, **more}
    if closed:
        out["additionalProperties"] = False
    return out


STR, INT, NUM = {"type": "string"}, {"type": "integer"}, {"type": "number"}


@pytest.mark.parametrize("reader,writer,kind", [
    (obj({"a": STR, "b": INT}, closed=True), obj({"a": STR}, closed=True), None),
    (obj({"a": STR, "b": INT}), obj({"a": STR}), "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"),
    (obj({"a": STR}, closed=True), obj({"a": STR, "b": INT}, closed=True),
     "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    (obj({"a": STR}), obj({"a": STR, "b": INT}), None),
    (obj({"a": STR}, required=["a"]), obj({"a": STR}), "REQUIRED_ATTRIBUTE_ADDED"),
    (obj({"a": {"type": "string", "default": "x"}}, required=["a"]), obj({"a": STR}), None),
    (obj({"a": NUM}), obj({"a": INT}), None),
    (obj({"a": INT}), obj({"a": NUM}), "TYPE_NARROWED"),
    (obj({"a": STR}), obj({"a": INT}), "TYPE_CHANGED"),
    (obj({"a": STR}, closed=True), obj({"a": STR}), "ADDITIONAL_PROPERTIES_REMOVED"),
    (obj({"a": {"type": "string", "maxLength": 5}}), obj({"a": STR}), "MAX_LENGTH_ADDED"),
    (obj({"a": {"type": "string", "maxLength": 5}}),
     obj({"a": {"type": "string", "maxLength": 9}}), "MAX_LENGTH_DECREASED"),
    (obj({"a": {"type": "integer", "minimum": 3}}),
     obj({"a": {"type": "integer", "minimum": 1}}), "MINIMUM_INCREASED"),
    (obj({"a": {"enum": ["x", "y"]}}), obj({"a": {"enum": ["x"]}}), None),
    (obj({"a": {"enum": ["x"]}}), obj({"a": {"enum": ["x", "y"]}}), "ENUM_ARRAY_NARROWED"),
    ({"type": "array", "items": INT}, {"type": "array", "items": NUM}, "TYPE_NARROWED"),
    ({"oneOf": [STR, INT]}, STR, None),
    ({"oneOf": [STR]}, {"oneOf": [STR, INT]}, "SUM_TYPE_NARROWED"),
])
def test_json_schema_rules(reader: Any, writer: Any, kind: str | None) -> None:
    found = issues("JSON", reader, writer)
    if kind is None:
        assert found == []
    else:
        assert any(f"errorType:'{kind}'" in m for m in found), found


def proto(body: str, package: str = "p") -> str:
    return f'syntax = "proto3";\npackage {package};\n{body}\n'


@pytest.mark.parametrize("new,old,kind", [
    (proto("message M { string a = 1; int32 b = 2; }"), proto("message M { string a = 1; }"),
     None),
    (proto("message M { string a = 1; }"), proto("message M { string a = 1; int32 b = 2; }"),
     None),
    (proto("message M { string a = 1; int64 b = 2; }"),
     proto("message M { string a = 1; int32 b = 2; }"), None),
    (proto("message M { string a = 1; double b = 2; }"),
     proto("message M { string a = 1; int32 b = 2; }"), "FIELD_SCALAR_KIND_CHANGED"),
    (proto("message M { bytes a = 1; }"), proto("message M { string a = 1; }"), None),
    (proto("message M { N a = 1; } message N { int32 x = 1; }"),
     proto("message M { string a = 1; } message N { int32 x = 1; }"), "FIELD_KIND_CHANGED"),
    (proto("message M { O a = 1; } message N {} message O {}"),
     proto("message M { N a = 1; } message N {} message O {}"), "FIELD_NAMED_TYPE_CHANGED"),
    (proto("message M { string a = 1; }", "q"), proto("message M { string a = 1; }"),
     "PACKAGE_CHANGED"),
    (proto("message Other { string a = 1; }"), proto("message M { string a = 1; }"),
     "MESSAGE_REMOVED"),
    (proto("message M { oneof o { string a = 1; int32 b = 2; } }"),
     proto("message M { string a = 1; int32 b = 2; }"), "MULTIPLE_FIELDS_MOVED_TO_ONEOF"),
    (proto("message M { oneof o { string a = 1; } }"),
     proto("message M { oneof o { string a = 1; int32 b = 2; } }"), "ONEOF_FIELD_REMOVED"),
    (proto("message M { map<string, int32> m = 1; }"),
     proto("message M { map<string, int32> m = 1; }"), None),
])
def test_protobuf_rules(new: str, old: str, kind: str | None) -> None:
    found = issues("PROTOBUF", new, old)  # BACKWARD: the new schema reads the old one's data
    if kind is None:
        assert found == []
    else:
        assert any(f"errorType:'{kind}'" in m for m in found), found


def test_protobuf_required_fields_both_ways() -> None:
    old = 'syntax = "proto2";\npackage p;\nmessage M { optional string a = 1; }\n'
    new = 'syntax = "proto2";\npackage p;\nmessage M { optional string a = 1; ' \
          'required int32 b = 2; }\n'
    assert any("REQUIRED_FIELD_ADDED" in m for m in issues("PROTOBUF", new, old))
    assert any("REQUIRED_FIELD_REMOVED" in m for m in issues("PROTOBUF", old, new))


def test_avro_rules() -> None:
    v1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    v2 = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "long"}, {"name": "b", "type": "string", "default": ""}]}
    assert issues("AVRO", v2, v1) == []  # int promotes to long; b has a default
    assert any("READER_FIELD_MISSING_DEFAULT_VALUE" not in m and "TYPE_MISMATCH" in m
               for m in issues("AVRO", v1, v2))  # long does not demote to int


@pytest.mark.parametrize("kind,text", [
    ("AVRO", '{"type": "record", "name": "R"}'),
    ("AVRO", '{"type": "enum", "name": "E", "symbols": ["A", "A"]}'),
    ("JSON", '{"type": "object", "properties": 3}'),
    ("JSON", "[1, 2]"),
    ("PROTOBUF", "message M { string a = ; }"),
    ("PROTOBUF", 'syntax = "proto3";'),
])
def test_invalid_schemas(kind: str, text: str) -> None:
    with pytest.raises(RegistryError) as e:
        parse(kind, text)
    assert e.value.code == 42201
