"""Build kio entities across versions: pass every field you know; ones the version lacks
are dropped, so one handler serves every version of an API."""

from __future__ import annotations

import dataclasses
import sys
from functools import cache
from typing import Any


@cache
def _field_names(cls: type[Any]) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def build(cls: type[Any], **kwargs: Any) -> Any:
    names = _field_names(cls)
    return cls(**{k: v for k, v in kwargs.items() if k in names})


def has_field(cls: type[Any], name: str) -> bool:
    return name in _field_names(cls)


@cache
def nested(entity_type: type[Any], name: str) -> type[Any]:
    """The nested entity class ``name`` defined beside ``entity_type`` (same version)."""
    cls: type[Any] = getattr(sys.modules[entity_type.__module__], name)
    return cls
