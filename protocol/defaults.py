"""Build a response entity filled with an error code and empty defaults.

Used where a handler cannot produce its own answer (authorization refused, an
unexpected exception): the client gets Kafka's error code rather than a dropped
connection.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from .errors import NO_ERROR, ErrorCode


def _default_for(tp: Any, meta: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp):
        return None
    if origin is tuple:
        return ()
    kafka_type = meta.get("kafka_type") if meta else None
    if kafka_type == "error_code":
        return NO_ERROR
    if kafka_type in ("string",):
        return ""
    if kafka_type in ("bytes", "records"):
        return b""
    if kafka_type == "bool":
        return False
    if kafka_type == "uuid":
        return None
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        import datetime

        return datetime.timedelta(0)
    if kafka_type == "datetime_i64":
        import datetime

        # The epoch: kio cannot write Kafka's -1 "no timestamp" (delegation token errors).
        return datetime.datetime.fromtimestamp(0, datetime.UTC)
    if kafka_type == "float64":
        return 0.0
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return build_default(tp, NO_ERROR)
    return 0


def build_default(entity_type: type[Any], error_code: ErrorCode) -> Any:
    hints = typing.get_type_hints(entity_type)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(entity_type):
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        kind = f.metadata.get("kafka_type")
        # A generated codec whose codes outgrow kio's enum carries a plain int16.
        if kind == "error_code" or (kind == "int16" and f.name == "error_code"):
            kwargs[f.name] = error_code
            continue
        kwargs[f.name] = _default_for(hints[f.name], f.metadata)
    return entity_type(**kwargs)


def error_response(response_type: type[Any], error_code: ErrorCode) -> Any:
    """A response of ``response_type`` whose top-level error code is ``error_code``."""
    return build_default(response_type, error_code)
