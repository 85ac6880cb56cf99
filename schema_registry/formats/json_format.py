"""JSON Schema: checked against its draft's metaschema by ``jsonschema``; compared with
the main rules of Confluent's ``JsonSchema`` compatibility (a reader must accept every
document the writer accepts: open and closed content models, types, bounds, enums,
required properties, items and combined types). docs/compatibility.md lists the rules
left out."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from ..errors import invalid_schema
from . import JSON, Parsed, Resolved

_NUMERIC_UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_NUMERIC_LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_COMPARED_EQUAL = ("not", "if", "then", "else", "allOf", "patternProperties",
                   "dependencies", "dependentRequired", "dependentSchemas", "$ref",
                   "propertyNames", "contains")


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
        _compare(reader.model, writer.model, "#", out)
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
    """The content model for properties not listed: True (open), False (closed) or the
    schema they must match (partially open)."""
    extra = schema.get("additionalProperties", True)
    return extra if isinstance(extra, bool | dict) else True


def _compare(reader: Any, writer: Any, path: str, out: list[str]) -> None:
    """What of ``writer``'s documents ``reader`` refuses, appended to ``out``."""
    if reader is True or reader == {}:
        return
    if writer is False:
        return
    if reader is False:
        _issue(out, "SCHEMA_NARROWED", path)
        return
    if writer is True:
        writer = {}
    if not isinstance(reader, dict) or not isinstance(writer, dict):
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
                _issue(out, "ENUM_ARRAY_NARROWED" if key == "enum" else "CONST_CHANGED",
                       f"{path}/{key}")
    if reader.get("pattern") is not None and reader.get("pattern") != writer.get("pattern"):
        _issue(out, "PATTERN_ADDED" if "pattern" not in writer else "PATTERN_CHANGED",
               f"{path}/pattern")
    if reader.get("uniqueItems") and not writer.get("uniqueItems"):
        _issue(out, "UNIQUE_ITEMS_ADDED", f"{path}/uniqueItems")
    if "multipleOf" in reader and reader["multipleOf"] != writer.get("multipleOf"):
        _issue(out, "MULTIPLE_OF_CHANGED", f"{path}/multipleOf")
    for key in _COMPARED_EQUAL:
        if reader.get(key) != writer.get(key):
            _issue(out, f"{key.upper().lstrip('$')}_CHANGED", f"{path}/{key}")
    _objects(reader, writer, path, out)
    _arrays(reader, writer, path, out)
    _combined(reader, writer, path, out)


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
    r_open, w_open = _open(reader), _open(writer)
    for name, wschema in wprops.items():
        where = f"{path}/properties/{name}"
        if name in rprops:
            _compare(rprops[name], wschema, where, out)
        elif r_open is False:
            _issue(out, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", where)
        elif isinstance(r_open, dict):
            _compare(r_open, wschema, where, out)
    for name, rschema in rprops.items():
        if name in wprops or rschema is True or rschema == {}:
            continue
        where = f"{path}/properties/{name}"
        if w_open is True:
            _issue(out, "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", where)
        elif isinstance(w_open, dict):
            _compare(rschema, w_open, where, out)
    if r_open is False and w_open is not False:
        _issue(out, "ADDITIONAL_PROPERTIES_REMOVED", f"{path}/additionalProperties")
    elif isinstance(r_open, dict):
        if w_open is True:
            _issue(out, "ADDITIONAL_PROPERTIES_NARROWED", f"{path}/additionalProperties")
        elif isinstance(w_open, dict):
            _compare(r_open, w_open, f"{path}/additionalProperties", out)
    wreq = set(writer.get("required") or [])
    for name in reader.get("required") or []:
        if name in wreq:
            continue
        prop = rprops.get(name)
        if isinstance(prop, dict) and "default" in prop:
            continue
        _issue(out, "REQUIRED_ATTRIBUTE_ADDED", f"{path}/required", str(name))


def _arrays(reader: dict[str, Any], writer: dict[str, Any], path: str, out: list[str]) -> None:
    ri, wi = reader.get("items"), writer.get("items")
    if ri is None:
        return
    if isinstance(ri, list) or isinstance(wi, list):
        if ri != wi:
            _issue(out, "ITEMS_CHANGED", f"{path}/items")
        return
    _compare(ri, wi if wi is not None else True, f"{path}/items", out)


def _combined(reader: dict[str, Any], writer: dict[str, Any], path: str, out: list[str]) -> None:
    for key in ("oneOf", "anyOf"):
        rs, ws = reader.get(key), writer.get(key)
        if rs is None:
            continue
        if not isinstance(rs, list):
            continue
        if ws is None:
            ws = [{k: v for k, v in writer.items() if k not in ("oneOf", "anyOf")}]
        for i, w in enumerate(ws):
            if not any(not _issues(r, w) for r in rs):
                _issue(out, "COMBINED_TYPE_SUBSCHEMAS_CHANGED", f"{path}/{key}/{i}")


def _issues(reader: Any, writer: Any) -> list[str]:
    found: list[str] = []
    _compare(reader, writer, "#", found)
    return found
