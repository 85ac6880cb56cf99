"""JSON Schema: checked against its draft's metaschema by ``jsonschema``; compared with
Confluent's ``JsonSchema`` compatibility rules (a reader must accept every document the
writer accepts): ``$ref`` followed, open, closed and partially open content models,
types, bounds, enums, required properties, dependencies, items, combined types
(``allOf``/``anyOf``/``oneOf``), ``not`` and conditionals. Each issue names the Confluent
``Difference`` type it mirrors; docs/compatibility.md lists where the rules differ."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from ..errors import invalid_schema
from . import JSON, Parsed, Resolved
from .json_refs import CYCLE, expand

_NUMERIC_UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties",
                  "maxContains")
_NUMERIC_LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties",
                  "minContains")
_COMBINERS = ("allOf", "anyOf", "oneOf")
#: Keywords that do not constrain documents.
_ANNOTATIONS = frozenset({"$schema", "$id", "id", "title", "description", "default",
                          "examples", "$comment", "definitions", "$defs", "readOnly",
                          "writeOnly", "deprecated", "format"})


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


class JsonFormat:
    def parse(self, text: str, refs: tuple[Resolved, ...], normalize: bool) -> Parsed:
        try:
            data = json.loads(text)
        except (ValueError, TypeError) as e:
            raise invalid_schema(f"{text!r}, details: {e}") from None
        if not isinstance(data, dict | bool):
            raise invalid_schema(f"{text!r}, details: a JSON schema is an object or a boolean")
        try:
            cls = jsonschema.validators.validator_for(data, default=jsonschema.Draft7Validator)
            cls.check_schema(data)
        except jsonschema.exceptions.SchemaError as e:
            raise invalid_schema(f"{text!r}, details: {e.message}") from None
        canonical = json.dumps(_sorted(data) if normalize else data, separators=(",", ":"))
        return Parsed(JSON, canonical, data, refs)

    def incompatibilities(self, reader: Parsed, writer: Parsed) -> list[str]:
        out: list[str] = []
        _compare(expand(reader.model, reader.refs, reader.canonical),
                 expand(writer.model, writer.refs, writer.canonical), "#", out)
        return out


def _issue(out: list[str], kind: str, path: str, detail: str = "") -> None:
    extra = f", additionalInfo:'{detail}'" if detail else ""
    out.append(f"{{errorType:'{kind}', description:'The new schema is incompatible with the "
               f"old schema at path '{path}''{extra}}}")


def _types(schema: dict[str, Any]) -> set[str] | None:
    t = schema.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else set(t)


def _covers(reader: set[str] | None, writer: set[str] | None) -> bool:
    if reader is None:
        return True
    if writer is None:
        return False
    return all(t in reader or (t == "integer" and "number" in reader) for t in writer)


def _open(schema: dict[str, Any]) -> bool | dict[str, Any]:
    """The additionalProperties content model: True (open), False (closed) or the schema
    unlisted properties must match (partially open)."""
    extra = schema.get("additionalProperties", True)
    return extra if isinstance(extra, bool | dict) else True


def _patterns(schema: dict[str, Any]) -> dict[str, Any]:
    pp = schema.get("patternProperties")
    return pp if isinstance(pp, dict) else {}


def _fully_open(schema: dict[str, Any]) -> bool:
    return not _patterns(schema) and _open(schema) is True


def _covering(schema: dict[str, Any], name: str) -> Any:
    """The schema a property not listed in ``properties`` must match: the first matching
    patternProperties schema, else additionalProperties (True, False or a schema)."""
    for pattern, sub in _patterns(schema).items():
        try:
            if re.search(pattern, name):
                return sub
        except re.error:
            continue
    return _open(schema)


def _combiner(schema: dict[str, Any]) -> tuple[str, list[Any]] | None:
    for key in _COMBINERS:
        if isinstance(schema.get(key), list):
            return key, schema[key]
    return None


def _without(schema: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in keys}


def _only(schema: dict[str, Any], key: str) -> bool:
    return all(k == key or k in _ANNOTATIONS for k in schema)


def _accepts(reader: Any, writer: Any) -> bool:
    return not _issues(reader, writer)


def _compare(reader: Any, writer: Any, path: str, out: list[str]) -> None:
    """What of ``writer``'s documents ``reader`` refuses, appended to ``out``."""
    if reader is True or reader == {}:
        return
    if writer is False:
        return
    if reader is False:
        _issue(out, "TYPE_CHANGED", path, "false schema")
        return
    if writer is True:
        writer = {}
    if not isinstance(reader, dict) or not isinstance(writer, dict):
        return
    if CYCLE in reader or CYCLE in writer:
        return  # a recursive reference, compared where it was first met
    if isinstance(reader.get("$ref"), str) or isinstance(writer.get("$ref"), str):
        if reader.get("$ref") != writer.get("$ref"):  # references that did not resolve
            _issue(out, "TYPE_CHANGED", f"{path}/$ref", "unresolved reference changed")
        reader, writer = _without(reader, "$ref"), _without(writer, "$ref")
    if _combiner(reader) is not None or _combiner(writer) is not None:
        _combined(reader, writer, path, out)
        return
    rt, wt = _types(reader), _types(writer)
    if not _covers(rt, wt):
        # Narrowed: the reader takes part of what the writer wrote (number -> integer).
        kind = "TYPE_NARROWED" if _covers(wt, rt) or (rt and wt and rt & wt) else \
            "TYPE_CHANGED"
        _issue(out, kind, f"{path}/type", f"{sorted(wt or [])} -> {sorted(rt or [])}")
        return
    _bounds(reader, writer, path, out)
    for key in ("enum", "const"):
        if key in reader:
            rv = reader[key] if key == "enum" else [reader[key]]
            wv = (writer[key] if key == "enum" else [writer[key]]) if key in writer else None
            if wv is None or any(v not in rv for v in wv):
                _issue(out, "ENUM_ARRAY_NARROWED" if key == "enum" else "ENUM_ARRAY_CHANGED",
                       f"{path}/{key}")
    if reader.get("pattern") is not None and reader.get("pattern") != writer.get("pattern"):
        _issue(out, "PATTERN_ADDED" if "pattern" not in writer else "PATTERN_CHANGED",
               f"{path}/pattern")
    if reader.get("uniqueItems") and not writer.get("uniqueItems"):
        _issue(out, "UNIQUE_ITEMS_ADDED", f"{path}/uniqueItems")
    if "multipleOf" in reader and reader["multipleOf"] != writer.get("multipleOf"):
        _multiple_of(reader["multipleOf"], writer.get("multipleOf"), path, out)
    _not(reader, writer, path, out)
    _conditional(reader, writer, path, out)
    _objects(reader, writer, path, out)
    _dependencies(reader, writer, path, out)
    _arrays(reader, writer, path, out)


def _multiple_of(r: Any, w: Any, path: str, out: list[str]) -> None:
    if w is None:
        _issue(out, "MULTIPLE_OF_ADDED", f"{path}/multipleOf")
    elif _num(r) and _num(w) % _num(r) != 0:
        # Every multiple of the writer's is one of the reader's when r divides w.
        _issue(out, "MULTIPLE_OF_CHANGED" if _num(r) <= _num(w) else "MULTIPLE_OF_EXPANDED",
               f"{path}/multipleOf")


def _not(reader: dict[str, Any], writer: dict[str, Any], path: str, out: list[str]) -> None:
    """``not``: the reader may forbid less than the writer (NOT_TYPE_NARROWED), never more
    (NOT_TYPE_EXTENDED); the forbidden schemas are compared with the roles reversed."""
    if "not" not in reader:
        return
    if "not" not in writer or not _accepts(writer["not"], reader["not"]):
        _issue(out, "NOT_TYPE_EXTENDED", f"{path}/not")


def _conditional(reader: dict[str, Any], writer: dict[str, Any], path: str,
                 out: list[str]) -> None:
    """``if``/``then``/``else``: with the same ``if``, each branch of the reader must
    accept the writer's branch; otherwise both reader branches must accept the writer."""
    if "if" not in reader:
        return
    r_then, r_else = reader.get("then", True), reader.get("else", True)
    if "if" in writer and writer["if"] == reader["if"]:
        _compare(r_then, writer.get("then", True), f"{path}/then", out)
        _compare(r_else, writer.get("else", True), f"{path}/else", out)
        return
    base = _without(writer, "if", "then", "else")
    if not (_accepts(r_then, base) and _accepts(r_else, base)):
        _issue(out, "PRODUCT_TYPE_EXTENDED", f"{path}/if")


def _combined(reader: dict[str, Any], writer: dict[str, Any], path: str,
              out: list[str]) -> None:
    """Confluent's ``CombinedSchemaDiff`` and its singleton and sum-type special cases;
    the keywords beside the combiner are compared as a plain schema."""
    rc, wc = _combiner(reader), _combiner(writer)
    if rc is not None and wc is None:
        key, subs = rc
        if len(subs) == 1 or key != "allOf":
            matched = any(_accepts(s, writer) for s in subs)  # SUM_TYPE_EXTENDED
        else:
            matched = False
        if not matched:
            _issue(out, "TYPE_CHANGED", f"{path}/{key}")
            return
        _compare(_without(reader, key), writer, path, out)
        return
    if wc is not None and rc is None:
        key, subs = wc
        if len(subs) == 1 or key != "allOf":
            # Every branch of the writer read by the reader (a type list is a sum type).
            if all(_accepts(reader, s) for s in subs):
                return
        if _only(writer, key):
            _issue(out, "TYPE_CHANGED", f"{path}/{key}")
            return
        # The combiner only narrows the writer's documents: compare what is beside it.
        _compare(reader, _without(writer, key), path, out)
        return
    assert rc is not None and wc is not None
    (rkey, rsubs), (wkey, wsubs) = rc, wc
    where = f"{path}/{wkey}"
    if rkey != wkey:
        if (rkey == "oneOf" and len(wsubs) != 1) or \
                (rkey == "allOf" and not (len(wsubs) == 1 and len(rsubs) == 1)):
            _issue(out, "COMBINED_TYPE_CHANGED", where)
            return
    rs, ws = _distinct(rsubs), _distinct(wsubs)
    if len(ws) < len(rs) and rkey == "allOf":
        _issue(out, "PRODUCT_TYPE_EXTENDED", where)
    elif len(ws) > len(rs) and rkey != "allOf":
        _issue(out, "SUM_TYPE_NARROWED", where)
    edges = {i: [j for j, r in enumerate(rs) if _accepts(r, w)] for i, w in enumerate(ws)}
    if _matching(edges, len(rs)) < min(len(ws), len(rs)):
        _issue(out, "COMBINED_TYPE_SUBSCHEMAS_CHANGED", where)
    _compare(_without(reader, rkey), _without(writer, wkey), path, out)


def _distinct(subs: list[Any]) -> list[Any]:
    seen: dict[str, Any] = {}
    for s in subs:
        seen.setdefault(json.dumps(s, sort_keys=True), s)
    return list(seen.values())


def _matching(edges: dict[int, list[int]], right: int) -> int:
    """The size of a maximum matching of the bipartite graph ``edges`` (Kuhn's)."""
    owner: list[int | None] = [None] * right

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges[i]:
            if j in seen:
                continue
            seen.add(j)
            held = owner[j]
            if held is None or augment(held, seen):
                owner[j] = i
                return True
        return False

    return sum(1 for i in edges if augment(i, set()))


def _bounds(reader: dict[str, Any], writer: dict[str, Any], path: str, out: list[str]) -> None:
    for key in _NUMERIC_UPPER:
        if key in reader:
            if key not in writer:
                _issue(out, f"{_snake(key)}_ADDED", f"{path}/{key}")
            elif _num(reader[key]) < _num(writer[key]):
                _issue(out, f"{_snake(key)}_DECREASED", f"{path}/{key}")
    for key in _NUMERIC_LOWER:
        if key in reader:
            if key not in writer:
                _issue(out, f"{_snake(key)}_ADDED", f"{path}/{key}")
            elif _num(reader[key]) > _num(writer[key]):
                _issue(out, f"{_snake(key)}_INCREASED", f"{path}/{key}")


def _num(v: Any) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def _snake(key: str) -> str:
    return "".join(f"_{c}" if c.isupper() else c.upper() for c in key)


def _objects(reader: dict[str, Any], writer: dict[str, Any], path: str, out: list[str]) -> None:
    rprops: dict[str, Any] = reader.get("properties") or {}
    wprops: dict[str, Any] = writer.get("properties") or {}
    if not isinstance(rprops, dict) or not isinstance(wprops, dict):
        return
    for name, wschema in wprops.items():
        where = f"{path}/properties/{name}"
        if name in rprops:
            _compare(rprops[name], wschema, where, out)
            continue
        cover = _covering(reader, name)
        if cover is False:
            if wschema is not False:
                _issue(out, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", where)
        elif isinstance(cover, dict) and not _accepts(cover, wschema):
            _issue(out, "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
    for name, rschema in rprops.items():
        if name in wprops or rschema is True or rschema == {}:
            continue
        where = f"{path}/properties/{name}"
        if _fully_open(writer):
            _issue(out, "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", where)
            continue
        cover = _covering(writer, name)
        if cover is True:
            _issue(out, "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", where)
        elif isinstance(cover, dict) and not _accepts(rschema, cover):
            _issue(out, "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
    _content_models(reader, writer, path, out)
    _unevaluated(reader, writer, "unevaluatedProperties", path, out)
    if isinstance(reader.get("propertyNames"), dict | bool):
        _compare(reader["propertyNames"], writer.get("propertyNames", {"type": "string"}),
                 f"{path}/propertyNames", out)
    wreq = set(writer.get("required") or [])
    for name in reader.get("required") or []:
        if name in wreq:
            continue
        prop = rprops.get(name)
        if isinstance(prop, dict) and "default" in prop:
            continue
        kind = "REQUIRED_ATTRIBUTE_ADDED" if name in wprops or _fully_open(writer) else \
            "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
        _issue(out, kind, f"{path}/required", str(name))


def _content_models(reader: dict[str, Any], writer: dict[str, Any], path: str,
                    out: list[str]) -> None:
    """additionalProperties and patternProperties: what unlisted properties may hold."""
    r_open, w_open = _open(reader), _open(writer)
    if r_open is False and w_open is not False:
        _issue(out, "ADDITIONAL_PROPERTIES_REMOVED", f"{path}/additionalProperties")
    elif isinstance(r_open, dict):
        if w_open is True:
            _issue(out, "ADDITIONAL_PROPERTIES_NARROWED", f"{path}/additionalProperties")
        elif isinstance(w_open, dict):
            _compare(r_open, w_open, f"{path}/additionalProperties", out)
    rpp, wpp = _patterns(reader), _patterns(writer)
    for pattern, rschema in rpp.items():
        where = f"{path}/patternProperties/{pattern}"
        if pattern in wpp:
            _compare(rschema, wpp[pattern], where, out)
        elif w_open is not False and not _accepts(rschema, w_open):
            _issue(out, "ADDITIONAL_PROPERTIES_NARROWED", where)
    for pattern, wschema in wpp.items():
        if pattern not in rpp and not _accepts(r_open, wschema):
            _issue(out, "ADDITIONAL_PROPERTIES_NARROWED" if r_open is not False else
                   "ADDITIONAL_PROPERTIES_REMOVED", f"{path}/patternProperties/{pattern}")


def _dependency_maps(schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    arrays: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for key in ("dependencies", "dependentRequired", "dependentSchemas"):
        value = schema.get(key)
        if not isinstance(value, dict):
            continue
        for name, dep in value.items():
            (arrays if isinstance(dep, list) else schemas)[name] = dep
    return arrays, schemas


def _dependencies(reader: dict[str, Any], writer: dict[str, Any], path: str,
                  out: list[str]) -> None:
    """Property dependencies: the reader may drop or narrow them, not add or widen."""
    r_arrays, r_schemas = _dependency_maps(reader)
    w_arrays, w_schemas = _dependency_maps(writer)
    for name, deps in r_arrays.items():
        where = f"{path}/dependencies/{name}"
        if name not in w_arrays:
            _issue(out, "DEPENDENCY_ARRAY_ADDED", where)
            continue
        r, w = set(map(str, deps)), set(map(str, w_arrays[name]))
        if r > w:
            _issue(out, "DEPENDENCY_ARRAY_EXTENDED", where)
        elif not r <= w:
            _issue(out, "DEPENDENCY_ARRAY_CHANGED", where)
    for name, dep in r_schemas.items():
        where = f"{path}/dependencies/{name}"
        if name not in w_schemas:
            _issue(out, "DEPENDENCY_SCHEMA_ADDED", where)
        else:
            _compare(dep, w_schemas[name], where, out)


def _tuple(schema: dict[str, Any]) -> tuple[list[Any], Any]:
    """An array's positional item schemas and the schema of the items past them (an
    ``items`` schema alone is no positions and that schema for every item)."""
    items, prefix = schema.get("items"), schema.get("prefixItems")
    if isinstance(prefix, list):
        return prefix, items if isinstance(items, dict | bool) else True
    if isinstance(items, list):
        extra = schema.get("additionalItems", True)
        return items, extra if isinstance(extra, dict | bool) else True
    return [], items if isinstance(items, dict | bool) else True


def _arrays(reader: dict[str, Any], writer: dict[str, Any], path: str, out: list[str]) -> None:
    ri, wi = reader.get("items"), writer.get("items")
    rpos, r_rest = _tuple(reader)
    wpos, w_rest = _tuple(writer)
    if not rpos and not wpos:
        if ri is not None:
            _compare(ri, wi if wi is not None else True, f"{path}/items", out)
    else:
        _positions(rpos, r_rest, wpos, w_rest, path, out)
    _unevaluated(reader, writer, "unevaluatedItems", path, out)
    if "contains" in reader:
        # An array the writer wrote holds an item of its own ``contains`` schema; the
        # reader's must accept that item.
        if "contains" not in writer or not _accepts(reader["contains"], writer["contains"]):
            _issue(out, "MIN_CONTAINS_ADDED", f"{path}/contains")


def _positions(rpos: list[Any], r_rest: Any, wpos: list[Any], w_rest: Any, path: str,
               out: list[str]) -> None:
    """Tuple items (ArraySchemaDiff.compareItemSchemaArray and compareAdditionalItems)."""
    for i in range(max(len(rpos), len(wpos))):
        where = f"{path}/items/{i}"
        if i < len(rpos) and i < len(wpos):
            _compare(rpos[i], wpos[i], where, out)
        elif i < len(wpos):  # the writer's item falls in the reader's rest
            if r_rest is False and wpos[i] is not False:
                _issue(out, "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", where)
            elif isinstance(r_rest, dict) and not _accepts(r_rest, wpos[i]):
                _issue(out, "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
        elif w_rest is True:
            if rpos[i] is not True and rpos[i] != {}:
                _issue(out, "ITEM_ADDED_TO_OPEN_CONTENT_MODEL", where)
        elif isinstance(w_rest, dict) and not _accepts(rpos[i], w_rest):
            _issue(out, "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", where)
    if r_rest is False and w_rest is not False:
        _issue(out, "ADDITIONAL_ITEMS_REMOVED", f"{path}/additionalItems")
    elif isinstance(r_rest, dict):
        if w_rest is True:
            _issue(out, "ADDITIONAL_ITEMS_NARROWED", f"{path}/additionalItems")
        elif isinstance(w_rest, dict):
            _compare(r_rest, w_rest, f"{path}/additionalItems", out)


def _unevaluated(reader: dict[str, Any], writer: dict[str, Any], key: str, path: str,
                 out: list[str]) -> None:
    """unevaluatedProperties/unevaluatedItems: the reader may not close or narrow them."""
    r, w = reader.get(key), writer.get(key)
    kind = "UNEVALUATED_PROPERTIES" if key == "unevaluatedProperties" else "UNEVALUATED_ITEMS"
    if r is False and w is not False:
        _issue(out, f"{kind}_REMOVED", f"{path}/{key}")
    elif isinstance(r, dict):
        if not isinstance(w, dict | bool) or w is True:
            _issue(out, f"{kind}_NARROWED", f"{path}/{key}")
        elif isinstance(w, dict):
            _compare(r, w, f"{path}/{key}", out)


def _issues(reader: Any, writer: Any) -> list[str]:
    found: list[str] = []
    _compare(reader, writer, "#", found)
    return found
