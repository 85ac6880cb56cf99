"""PROTOBUF compatibility, rule by rule: each case names the protobuf-provider
``Difference.Type`` it mirrors. ``new`` is the schema being registered under BACKWARD,
``old`` the registered one; ``None`` means Confluent counts the change as compatible."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kafkalite.schema_registry.formats import Resolved, format_for, parse
from kafkalite.schema_registry.formats.proto_descriptor import to_descriptor


def proto(body: str, package: str = "p", syntax: str = "proto3") -> str:
    return f'syntax = "{syntax}";\npackage {package};\n{body}\n'


def check(new: str, old: str, kind: str | None) -> None:
    found = format_for("PROTOBUF").incompatibilities(parse("PROTOBUF", new),
                                                     parse("PROTOBUF", old))
    if kind is None:
        assert found == [], found
    else:
        assert any(f"errorType:'{kind}'" in m for m in found), found


ENUM = "enum Color { RED = 0; GREEN = 1; }"
ENUMS = [
    # ENUM_CONST_ADDED, ENUM_CONST_REMOVED, ENUM_CONST_CHANGED: compatible in Confluent.
    (proto("enum Color { RED = 0; GREEN = 1; BLUE = 2; } message M { Color c = 1; }"),
     proto(f"{ENUM} message M {{ Color c = 1; }}"), None),
    (proto("enum Color { RED = 0; } message M { Color c = 1; }"),
     proto(f"{ENUM} message M {{ Color c = 1; }}"), None),
    (proto("enum Color { RED = 0; VERT = 1; } message M { Color c = 1; }"),
     proto(f"{ENUM} message M {{ Color c = 1; }}"), None),
    # ENUM_ADDED / ENUM_REMOVED: compatible.
    (proto("message M { int32 c = 1; }"), proto(f"{ENUM} message M {{ int32 c = 1; }}"),
     None),
    # An enum is a scalar of the general-number group: int32 <-> enum is compatible...
    (proto(f"{ENUM} message M {{ int32 c = 1; }}"),
     proto(f"{ENUM} message M {{ Color c = 1; }}"), None),
    # ...an enum to a string is FIELD_SCALAR_KIND_CHANGED, to a message FIELD_KIND_CHANGED.
    (proto(f"{ENUM} message M {{ string c = 1; }}"),
     proto(f"{ENUM} message M {{ Color c = 1; }}"), "FIELD_SCALAR_KIND_CHANGED"),
    (proto(f"{ENUM} message N {{}} message M {{ N c = 1; }}"),
     proto(f"{ENUM} message N {{}} message M {{ Color c = 1; }}"), "FIELD_KIND_CHANGED"),
]


@pytest.mark.parametrize("new,old,kind", ENUMS)
def test_enums(new: str, old: str, kind: str | None) -> None:
    check(new, old, kind)


NAMES = [
    # Named types compared by their package-local full name, not the last component.
    (proto("message A { message T {} } message B { message T {} } message M { B.T t = 1; }"),
     proto("message A { message T {} } message B { message T {} } message M { A.T t = 1; }"),
     "FIELD_NAMED_TYPE_CHANGED"),
    # The same type written fully qualified, package-qualified or relative: no change.
    (proto("message N {} message M { .p.N n = 1; }"), proto("message N {} message M { N n = 1; }"),
     None),
    (proto("message N {} message M { p.N n = 1; }"), proto("message N {} message M { N n = 1; }"),
     None),
    # A nested type found by protobuf's scoping (the enclosing message first).
    (proto("message N {} message M { message N {} N n = 1; }"),
     proto("message N {} message M { message N {} .p.N n = 1; }"), "FIELD_NAMED_TYPE_CHANGED"),
    # Imported types (not defined here) are compared by the name as written.
    (proto("message M { other.Money m = 1; }"), proto("message M { other.Money m = 1; }"), None),
    (proto("message M { other.Money m = 1; }"), proto("message M { third.Money m = 1; }"),
     "FIELD_NAMED_TYPE_CHANGED"),
    # Map values are compared as field types (FieldSchemaDiff.compareMapTypes).
    (proto("message A {} message B {} message M { map<string, B> m = 1; }"),
     proto("message A {} message B {} message M { map<string, A> m = 1; }"),
     "FIELD_NAMED_TYPE_CHANGED"),
    (proto("message M { map<string, int64> m = 1; }"),
     proto("message M { map<string, int32> m = 1; }"), None),
    (proto("message M { map<string, string> m = 1; }"),
     proto("message M { map<string, int32> m = 1; }"), "FIELD_SCALAR_KIND_CHANGED"),
    (proto("message M { map<string, int32> m = 1; }"),
     proto("message M { int32 m = 1; }"), "FIELD_KIND_CHANGED"),
    # A nested message removed is MESSAGE_REMOVED; one added is compatible.
    (proto("message M { }"), proto("message M { message In {} }"), "MESSAGE_REMOVED"),
    (proto("message M { message In {} }"), proto("message M { }"), None),
]


@pytest.mark.parametrize("new,old,kind", NAMES)
def test_named_types(new: str, old: str, kind: str | None) -> None:
    check(new, old, kind)


P2 = "proto2"
LABELS = [
    # FIELD_NUMERIC_LABEL_CHANGED (refused) vs FIELD_STRING_OR_BYTES_LABEL_CHANGED (not).
    (proto("message M { repeated int32 a = 1; }", syntax=P2),
     proto("message M { optional int32 a = 1; }", syntax=P2), "FIELD_NUMERIC_LABEL_CHANGED"),
    (proto("message M { repeated string a = 1; }", syntax=P2),
     proto("message M { optional string a = 1; }", syntax=P2), None),
    (proto("message M { repeated bytes a = 1; }", syntax=P2),
     proto("message M { optional string a = 1; }", syntax=P2), None),
    # Messages: a label change is not checked by Confluent.
    (proto("message N {} message M { repeated N a = 1; }", syntax=P2),
     proto("message N {} message M { optional N a = 1; }", syntax=P2), None),
    # proto3 implicit presence has no label, so nothing is compared (as Confluent).
    (proto("message M { repeated int32 a = 1; }"), proto("message M { int32 a = 1; }"), None),
    # Kind changes: scalar <-> message <-> map (FIELD_KIND_CHANGED).
    (proto("message N {} message M { N a = 1; }"), proto("message M { int32 a = 1; }"),
     "FIELD_KIND_CHANGED"),
    (proto("message M { float a = 1; }"), proto("message M { double a = 1; }"),
     "FIELD_SCALAR_KIND_CHANGED"),
    (proto("message M { sfixed64 a = 1; }"), proto("message M { fixed64 a = 1; }"), None),
    (proto("message M { sint64 a = 1; }"), proto("message M { int64 a = 1; }"),
     "FIELD_SCALAR_KIND_CHANGED"),
]


@pytest.mark.parametrize("new,old,kind", LABELS)
def test_kinds_and_labels(new: str, old: str, kind: str | None) -> None:
    check(new, old, kind)


ONEOFS = [
    # ONEOF_ADDED / ONEOF_REMOVED / ONEOF_FIELD_ADDED: compatible.
    (proto("message M { string a = 1; oneof o { int32 b = 2; } }"),
     proto("message M { string a = 1; }"), None),
    (proto("message M { string a = 1; }"),
     proto("message M { string a = 1; oneof o { int32 b = 2; } }"), None),
    (proto("message M { oneof o { int32 b = 2; string c = 3; } }"),
     proto("message M { oneof o { int32 b = 2; } }"), None),
    # ONEOF_FIELD_REMOVED only when the tag left the message altogether.
    (proto("message M { oneof o { int32 b = 2; } }"),
     proto("message M { oneof o { int32 b = 2; string c = 3; } }"), "ONEOF_FIELD_REMOVED"),
    (proto("message M { string c = 3; oneof o { int32 b = 2; } }"),
     proto("message M { oneof o { int32 b = 2; string c = 3; } }"), None),
    # One field moved into a new oneof is fine; two are MULTIPLE_FIELDS_MOVED_TO_ONEOF.
    (proto("message M { oneof o { int32 b = 2; } }"), proto("message M { int32 b = 2; }"),
     None),
    (proto("message M { oneof o { int32 b = 2; string c = 3; } }"),
     proto("message M { int32 b = 2; string c = 3; }"), "MULTIPLE_FIELDS_MOVED_TO_ONEOF"),
    # A field moved into a oneof that holds fields of an old oneof.
    (proto("message M { oneof n { int32 b = 2; string c = 3; } }"),
     proto("message M { int32 b = 2; oneof o { string c = 3; } }"),
     "FIELD_MOVED_TO_EXISTING_ONEOF"),
    # A field's type is still compared when it changes oneof (renamed oneof here).
    (proto("message M { oneof n { string b = 2; } }"),
     proto("message M { oneof o { int32 b = 2; } }"), "FIELD_SCALAR_KIND_CHANGED"),
]


@pytest.mark.parametrize("new,old,kind", ONEOFS)
def test_oneofs(new: str, old: str, kind: str | None) -> None:
    check(new, old, kind)


def test_descriptor_and_text_schemas_compare_alike() -> None:
    """A base64 FileDescriptorProto (what confluent-kafka's serializer registers) holds
    fully qualified type names; they resolve to the same types as the text's."""
    text = proto("message A { message T {} } message B { message T {} } "
                 "message M { A.T t = 1; }")
    old = base64.b64encode(to_descriptor(text.replace("A.T t", ".p.A.T t"))).decode()
    check(text, old, None)
    moved = text.replace("A.T t", "B.T t")
    check(moved, old, "FIELD_NAMED_TYPE_CHANGED")


MONEY = 'syntax = "proto3";\npackage q;\nmessage Money {{ {units} units = 1; }}\n' \
        "message Cash {{ int64 units = 1; }}\n"
USES = 'syntax = "proto3";\npackage p;\nimport "money.proto";\nmessage M {{ {t} m = 1; }}\n'


def check_imports(new_type: str, new_units: str, old_type: str, old_units: str,
                  kinds: list[str]) -> None:
    def schema(t: str, units: str) -> Any:
        ref = Resolved("money.proto", MONEY.format(units=units))
        return parse("PROTOBUF", USES.format(t=t), (ref,))

    found = format_for("PROTOBUF").incompatibilities(schema(new_type, new_units),
                                                     schema(old_type, old_units))
    assert [k for k in kinds if not any(f"errorType:'{k}'" in m for m in found)] == [], found
    if not kinds:
        assert found == [], found


@pytest.mark.parametrize("new_type,new_units,old_type,old_units,kinds", [
    ("q.Money", "int64", "q.Money", "int64", []),
    ("q.Money", "int64", ".q.Money", "int64", []),  # the same type, qualified differently
    ("q.Money", "uint64", "q.Money", "int64", []),  # same scalar group inside the import
    # A referenced message changed incompatibly: its difference, then the field's.
    ("q.Money", "string", "q.Money", "int64",
     ["FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"]),
    ("q.Cash", "int64", "q.Money", "int64", ["FIELD_NAMED_TYPE_CHANGED"]),
])
def test_imported_types_resolved_and_diffed(new_type: str, new_units: str, old_type: str,
                                            old_units: str, kinds: list[str]) -> None:
    check_imports(new_type, new_units, old_type, old_units, kinds)


def test_every_schema_here_reads_itself() -> None:
    for table in (ENUMS, NAMES, LABELS, ONEOFS):
        for new, old, _ in table:
            for schema in (new, old):
                check(schema, schema, None)
