"""JSON Schema compatibility, rule by rule: each case names the Confluent ``Difference``
type (json-schema-provider's ``Difference.Type``) the check mirrors. ``reader`` is the new
schema under BACKWARD, ``writer`` the registered one; ``None`` means compatible."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kafkalite.schema_registry.formats import Resolved, format_for, parse

STR, INT, NUM = {"type": "string"}, {"type": "integer"}, {"type": "number"}


def issues(reader: Any, writer: Any, refs: tuple[Resolved, ...] = ()) -> list[str]:
    r = parse("JSON", json.dumps(reader), refs)
    w = parse("JSON", json.dumps(writer), refs)
    return format_for("JSON").incompatibilities(r, w)


def check(reader: Any, writer: Any, kind: str | None,
          refs: tuple[Resolved, ...] = ()) -> None:
    found = issues(reader, writer, refs)
    if kind is None:
        assert found == [], found
    else:
        assert any(f"errorType:'{kind}'" in m for m in found), found


def obj(props: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, **more}


def defs(root: dict[str, Any], **definitions: Any) -> dict[str, Any]:
    return {**root, "definitions": definitions}


LOCAL = [
    # The referred schema is compared (ReferenceSchemaDiff -> SchemaDiff on the target).
    (defs(obj({"a": {"$ref": "#/definitions/A"}}), A=NUM),
     defs(obj({"a": {"$ref": "#/definitions/A"}}), A=INT), None),
    (defs(obj({"a": {"$ref": "#/definitions/A"}}), A=INT),
     defs(obj({"a": {"$ref": "#/definitions/A"}}), A=NUM), "TYPE_NARROWED"),
    # A reference replaced by its inline schema is no change at all.
    (obj({"a": STR}), defs(obj({"a": {"$ref": "#/definitions/A"}}), A=STR), None),
    ({"$defs": {"A": obj({"x": STR}, additionalProperties=False)},
      **obj({"a": {"$ref": "#/$defs/A"}})},
     {"$defs": {"A": obj({"x": STR, "y": INT}, additionalProperties=False)},
      **obj({"a": {"$ref": "#/$defs/A"}})}, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
]


@pytest.mark.parametrize("reader,writer,kind", LOCAL)
def test_local_references_followed(reader: Any, writer: Any, kind: str | None) -> None:
    check(reader, writer, kind)


def test_recursive_reference_terminates() -> None:
    node = defs({"$ref": "#/definitions/Node"}, Node=obj(
        {"value": INT, "next": {"$ref": "#/definitions/Node"}}))
    wider = defs({"$ref": "#/definitions/Node"}, Node=obj(
        {"value": NUM, "next": {"$ref": "#/definitions/Node"}}))
    check(wider, node, None)
    check(node, wider, "TYPE_NARROWED")


def test_references_to_other_subjects_followed() -> None:
    old_ref = (Resolved("address.json", json.dumps(obj({"city": STR}))),)
    new_ref = (Resolved("address.json", json.dumps(obj({"city": INT}))),)
    person = obj({"home": {"$ref": "address.json"}})
    r = parse("JSON", json.dumps(person), new_ref)
    w = parse("JSON", json.dumps(person), old_ref)
    found = format_for("JSON").incompatibilities(r, w)
    assert any("TYPE_CHANGED" in m and "home/properties/city" in m for m in found), found
    # A pointer into another document, matched by its $id as well as its reference name.
    doc = {"$id": "https://example.com/common.json", "definitions": {"Id": INT}}
    ref = (Resolved("common", json.dumps(doc)),)
    uses = obj({"id": {"$ref": "https://example.com/common.json#/definitions/Id"}})
    check(obj({"id": NUM}), uses, None, ref)
    check(obj({"id": STR}), uses, "TYPE_CHANGED", ref)


COMBINED = [
    # CombinedSchemaDiff: same criterion, subschemas matched one to one.
    ({"anyOf": [STR, INT, {"type": "boolean"}]}, {"anyOf": [STR, INT]}, None),  # SUM_TYPE_EXTENDED
    ({"anyOf": [STR]}, {"anyOf": [STR, INT]}, "SUM_TYPE_NARROWED"),
    ({"allOf": [obj({"a": STR}), obj({"b": INT})]}, {"allOf": [obj({"a": STR})]},
     "PRODUCT_TYPE_EXTENDED"),
    ({"allOf": [obj({"a": STR})]}, {"allOf": [obj({"a": STR}), obj({"b": INT})]},
     None),  # PRODUCT_TYPE_NARROWED
    ({"oneOf": [NUM, {"type": "boolean"}]}, {"oneOf": [INT, STR]},
     "COMBINED_TYPE_SUBSCHEMAS_CHANGED"),
    ({"oneOf": [NUM, STR]}, {"oneOf": [STR, INT]}, None),  # matched out of order
    # Criterion changes: to anyOf is COMBINED_TYPE_EXTENDED; allOf -> oneOf is not.
    ({"anyOf": [STR, INT]}, {"oneOf": [STR, INT]}, None),
    ({"oneOf": [STR, INT]}, {"allOf": [STR, INT]}, "COMBINED_TYPE_CHANGED"),
    ({"oneOf": [STR]}, {"allOf": [STR]}, None),  # singleton
    # A plain schema against a union: singleton or sum type extended, else TYPE_CHANGED.
    ({"oneOf": [STR, INT]}, STR, None),
    ({"allOf": [STR]}, STR, None),
    ({"allOf": [STR, {"maxLength": 3}]}, STR, "TYPE_CHANGED"),
    ({"anyOf": [INT]}, STR, "TYPE_CHANGED"),
    ({"type": ["string", "integer"]}, {"anyOf": [STR, INT]}, None),
    (STR, {"oneOf": [STR, INT]}, "TYPE_CHANGED"),
]


@pytest.mark.parametrize("reader,writer,kind", COMBINED)
def test_combined_types(reader: Any, writer: Any, kind: str | None) -> None:
    check(reader, writer, kind)


NOT_AND_CONDITIONALS = [
    # NotSchemaDiff compares the forbidden schemas with the roles reversed.
    ({"not": INT}, {"not": NUM}, None),  # NOT_TYPE_NARROWED
    ({"not": NUM}, {"not": INT}, "NOT_TYPE_EXTENDED"),
    ({"not": STR}, {}, "NOT_TYPE_EXTENDED"),
    (obj({"a": STR}), obj({"a": STR}, **{"not": {"required": ["b"]}}), None),
    # if/then/else: branches compared when the condition is unchanged.
    (obj({"a": STR}, **{"if": {"required": ["a"]}, "then": {"required": ["b"]}}),
     obj({"a": STR}, **{"if": {"required": ["a"]}, "then": {"required": ["b", "c"]}}),
     None),
    (obj({"a": STR}, **{"if": {"required": ["a"]}, "then": {"required": ["b", "c"]}}),
     obj({"a": STR}, **{"if": {"required": ["a"]}, "then": {"required": ["b"]}}),
     "REQUIRED_ATTRIBUTE_ADDED"),
    (obj({"a": STR}, **{"if": {"required": ["a"]}, "then": {"required": ["b"]}}),
     obj({"a": STR}), "PRODUCT_TYPE_EXTENDED"),
    (obj({"a": STR}), obj({"a": STR}, **{"if": {"required": ["a"]},
                                         "then": {"required": ["b"]}}), None),
]


@pytest.mark.parametrize("reader,writer,kind", NOT_AND_CONDITIONALS)
def test_not_and_conditionals(reader: Any, writer: Any, kind: str | None) -> None:
    check(reader, writer, kind)


OBJECTS = [
    # Partially open content models (patternProperties / additionalProperties schema).
    (obj({"a": STR, "x_1": NUM}, patternProperties={"^x_": INT}, additionalProperties=False),
     obj({"a": STR}, patternProperties={"^x_": INT}, additionalProperties=False),
     None),  # PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    (obj({"a": STR, "x_1": STR}, patternProperties={"^x_": NUM}, additionalProperties=False),
     obj({"a": STR}, patternProperties={"^x_": NUM}, additionalProperties=False),
     "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"),
    (obj({"a": STR}, patternProperties={"^x_": INT}, additionalProperties=False),
     obj({"a": STR, "x_1": INT}, additionalProperties=False),
     None),  # PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    (obj({"a": STR}, patternProperties={"^x_": INT}, additionalProperties=False),
     obj({"a": STR, "x_1": NUM}, additionalProperties=False),
     "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"),
    (obj({}, patternProperties={"^x_": INT}), obj({}, patternProperties={"^x_": NUM}),
     "TYPE_NARROWED"),
    (obj({}, patternProperties={"^x_": INT}), obj({}), "ADDITIONAL_PROPERTIES_NARROWED"),
    (obj({}), obj({}, patternProperties={"^x_": INT}), None),
    # Dependencies (ObjectSchemaDiff.compareDependencies).
    (obj({}), obj({}, dependencies={"a": ["b"]}), None),  # DEPENDENCY_ARRAY_REMOVED
    (obj({}, dependencies={"a": ["b"]}), obj({}), "DEPENDENCY_ARRAY_ADDED"),
    (obj({}, dependencies={"a": ["b", "c"]}), obj({}, dependencies={"a": ["b"]}),
     "DEPENDENCY_ARRAY_EXTENDED"),
    (obj({}, dependencies={"a": ["b"]}), obj({}, dependencies={"a": ["b", "c"]}),
     None),  # DEPENDENCY_ARRAY_NARROWED
    (obj({}, dependencies={"a": ["c"]}), obj({}, dependencies={"a": ["b"]}),
     "DEPENDENCY_ARRAY_CHANGED"),
    (obj({}, dependencies={"a": {"required": ["b"]}}), obj({}), "DEPENDENCY_SCHEMA_ADDED"),
    (obj({}), obj({}, dependencies={"a": {"required": ["b"]}}),
     None),  # DEPENDENCY_SCHEMA_REMOVED
    ({"$schema": "https://json-schema.org/draft/2020-12/schema", **obj(
        {}, dependentRequired={"a": ["b", "c"]})},
     {"$schema": "https://json-schema.org/draft/2020-12/schema", **obj(
         {}, dependentRequired={"a": ["b"]})}, "DEPENDENCY_ARRAY_EXTENDED"),
    ({"$schema": "https://json-schema.org/draft/2020-12/schema", **obj(
        {}, dependentSchemas={"a": obj({"b": INT})})},
     {"$schema": "https://json-schema.org/draft/2020-12/schema", **obj(
         {}, dependentSchemas={"a": obj({"b": NUM})})}, "TYPE_NARROWED"),
    # propertyNames: names are strings the reader's schema must accept.
    (obj({}, propertyNames={"maxLength": 5}), obj({}), "MAX_LENGTH_ADDED"),
    (obj({}, propertyNames={"maxLength": 9}), obj({}, propertyNames={"maxLength": 5}), None),
    (obj({}), obj({}, propertyNames={"pattern": "^a"}), None),
]


@pytest.mark.parametrize("reader,writer,kind", OBJECTS)
def test_object_keywords(reader: Any, writer: Any, kind: str | None) -> None:
    check(reader, writer, kind)


ARRAYS = [
    ({"type": "array", "contains": NUM}, {"type": "array", "contains": INT}, None),
    ({"type": "array", "contains": INT}, {"type": "array", "contains": NUM},
     "MIN_CONTAINS_ADDED"),
    ({"type": "array", "contains": INT}, {"type": "array"}, "MIN_CONTAINS_ADDED"),
    ({"type": "array"}, {"type": "array", "contains": INT}, None),
    ({"type": "array", "contains": INT, "maxContains": 2},
     {"type": "array", "contains": INT, "maxContains": 3}, "MAX_CONTAINS_DECREASED"),
    ({"type": "array", "contains": INT, "minContains": 2},
     {"type": "array", "contains": INT, "minContains": 1}, "MIN_CONTAINS_INCREASED"),
]


@pytest.mark.parametrize("reader,writer,kind", ARRAYS)
def test_contains(reader: Any, writer: Any, kind: str | None) -> None:
    check(reader, writer, kind)


def tup(*items: Any, rest: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "array", "items": list(items)}
    if rest is not None:
        out["additionalItems"] = rest
    return out


D2020 = "https://json-schema.org/draft/2020-12/schema"
TUPLES = [
    # ArraySchemaDiff.compareItemSchemaArray / compareAdditionalItems.
    (tup(STR, NUM), tup(STR, INT), None),
    (tup(STR, INT), tup(STR, NUM), "TYPE_NARROWED"),
    (tup(STR), tup(STR, INT), None),  # ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL
    (tup(STR, rest=False), tup(STR, INT, rest=False), "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    (tup(STR, rest=NUM), tup(STR, INT, rest=False),
     None),  # ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    (tup(STR, rest=INT), tup(STR, NUM, rest=False),
     "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"),
    (tup(STR, INT), tup(STR), "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"),
    (tup(STR, INT, rest=False), tup(STR, rest=False), None),  # ITEM_ADDED_TO_CLOSED_...
    (tup(STR, NUM), tup(STR, rest=INT), None),  # ITEM_ADDED_IS_COVERED_BY_PARTIALLY_...
    (tup(STR, INT), tup(STR, rest=NUM), "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"),
    (tup(STR, rest=False), tup(STR), "ADDITIONAL_ITEMS_REMOVED"),
    (tup(STR, rest=INT), tup(STR), "ADDITIONAL_ITEMS_NARROWED"),
    (tup(STR), tup(STR, rest=INT), None),  # ADDITIONAL_ITEMS_ADDED / EXTENDED
    # 2020-12 prefixItems with items as the rest.
    ({"$schema": D2020, "type": "array", "prefixItems": [STR], "items": False},
     {"$schema": D2020, "type": "array", "prefixItems": [STR, INT], "items": False},
     "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    # unevaluatedProperties / unevaluatedItems.
    ({"$schema": D2020, **obj({"a": STR}, unevaluatedProperties=False)},
     {"$schema": D2020, **obj({"a": STR})}, "UNEVALUATED_PROPERTIES_REMOVED"),
    ({"$schema": D2020, **obj({"a": STR}, unevaluatedProperties=INT)},
     {"$schema": D2020, **obj({"a": STR})}, "UNEVALUATED_PROPERTIES_NARROWED"),
    ({"$schema": D2020, **obj({"a": STR})},
     {"$schema": D2020, **obj({"a": STR}, unevaluatedProperties=False)}, None),
    ({"$schema": D2020, "type": "array", "prefixItems": [STR], "unevaluatedItems": INT},
     {"$schema": D2020, "type": "array", "prefixItems": [STR], "unevaluatedItems": NUM},
     "TYPE_NARROWED"),
]


@pytest.mark.parametrize("reader,writer,kind", TUPLES)
def test_tuples_and_unevaluated(reader: Any, writer: Any, kind: str | None) -> None:
    check(reader, writer, kind)


def test_every_schema_here_reads_itself() -> None:
    for table in (LOCAL, COMBINED, NOT_AND_CONDITIONALS, OBJECTS, ARRAYS, TUPLES):
        for reader, writer, _ in table:
            for schema in (reader, writer):
                assert issues(schema, schema) == [], schema
