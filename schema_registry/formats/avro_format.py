"""AVRO: parsed by the ``avro`` package (referenced named types first, into the same
names), compared with its ``ReaderWriterCompatibilityChecker``."""

from __future__ import annotations

import json
from typing import Any

import avro.compatibility
import avro.errors
import avro.name
import avro.schema

from ..errors import invalid_schema
from . import AVRO, Parsed, Resolved

_CHECKER = avro.compatibility.ReaderWriterCompatibilityChecker


def _sorted(value: Any) -> Any:
    """Object keys in order, arrays kept (field order is meaningful)."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _load(names: avro.name.Names, ref: Resolved, seen: set[str]) -> None:
    if ref.name in seen:
        return
    seen.add(ref.name)
    for inner in ref.refs:
        _load(names, inner, seen)
    avro.schema.make_avsc_object(json.loads(ref.text), names)


class AvroFormat:
    def parse(self, text: str, refs: tuple[Resolved, ...], normalize: bool) -> Parsed:
        try:
            data = json.loads(text)
        except (ValueError, TypeError) as e:
            raise invalid_schema(f"{text!r}, details: {e}") from None
        try:
            names = avro.name.Names()
            seen: set[str] = set()
            for ref in refs:
                _load(names, ref, seen)
            schema = avro.schema.make_avsc_object(data, names)
        except (avro.errors.AvroException, ValueError, TypeError, KeyError, AttributeError,
                json.JSONDecodeError) as e:
            raise invalid_schema(f"{text!r}, details: {e}") from None
        canonical = json.dumps(_sorted(data) if normalize else data, separators=(",", ":"))
        return Parsed(AVRO, canonical, schema, refs)

    def incompatibilities(self, reader: Parsed, writer: Parsed) -> list[str]:
        checker = _CHECKER()  # type: ignore[no-untyped-call]
        result = checker.get_compatibility(reader.model, writer.model)
        if result.compatibility is avro.compatibility.SchemaCompatibilityType.compatible:
            return []
        out = []
        kinds = list(result.incompatibilities)
        locations = sorted(result.locations) or ["/"]
        messages = sorted(result.messages) or [""]
        for i, kind in enumerate(kinds or [None]):
            name = kind.name.upper() if kind is not None else "INCOMPATIBLE"
            where = locations[min(i, len(locations) - 1)]
            what = messages[min(i, len(messages) - 1)]
            out.append(f"{{errorType:'{name}', description:'The new schema is "
                       f"incompatible with the old schema at path '{where}'', "
                       f"additionalInfo:'{what}'}}")
        return out
