"""Build kio entities across versions: pass every field you know; ones the version lacks
are dropped, so one handler serves every version of an API."""

from __future__ import annotations

import dataclasses
import datetime
import sys
from typing import Any

_MS = datetime.timedelta(milliseconds=1)

_names: dict[type[Any], frozenset[str]] = {}
_nested: dict[tuple[type[Any], str], type[Any]] = {}


def _field_names(cls: type[Any]) -> frozenset[str]:
    found = _names.get(cls)
    if found is None:
        found = _names[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return found


def build(cls: type[Any], **kwargs: Any) -> Any:
    names = _field_names(cls)
    return cls(**{k: v for k, v in kwargs.items() if k in names})


def nested(entity_type: type[Any], name: str) -> type[Any]:
    """The nested entity class ``name`` defined beside ``entity_type`` (same version)."""
    key = (entity_type, name)
    cls = _nested.get(key)
    if cls is None:
        cls = _nested[key] = getattr(sys.modules[entity_type.__module__], name)
    return cls


def millis(value: Any, default: int = -1) -> int:
    """A duration field as kio gives it (a ``timedelta``, or ms as an int) in ms; None
    (an absent field) as ``default``."""
    if value is None:
        return default
    if isinstance(value, datetime.timedelta):
        return value // _MS
    return int(value)
