"""An error response shaped after its request, as Kafka's ``getErrorResponse`` builds one:
for injected faults, for a request a node does not coordinate, and for a handler that
failed.

Kafka puts an error where the API keeps it: APIs with topics and partitions answer per
partition (Produce, Fetch, OffsetCommit, ListOffsets ...), per topic or per group where
that is the unit (CreateTopics, DescribeGroups), at the top otherwise (Heartbeat,
JoinGroup). The response mirrors the request's topics, partitions and groups, with the
error at the deepest level that has an error code, and the top-level code left at none
when a deeper level carries it.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from kafkalite.protocol.defaults import _default_for, build_default
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

#: Fields that name the element of a list, from the most to the least specific
#: (``key``: FindCoordinator v4+'s coordinator keys).
_TOPIC_IDS = ("name", "topic", "topic_name", "group_id", "topic_id", "key")
_PARTITION_IDS = ("partition_index", "index", "partition")
_IDENT = (*_TOPIC_IDS, *_PARTITION_IDS)
#: Strings a response repeats from its request (JoinGroup's member id, ...).
_COPIED = ("member_id", "group_id", "group_instance_id", "transactional_id", "name", "topic",
           "topic_name")


#: Fields Kafka answers -1 in an error response (FindCoordinator's node and port too).
_MINUS_ONE = frozenset({"generation_id", "base_offset", "committed_offset", "offset",
                        "high_watermark", "last_stable_offset", "node_id", "port"})
#: Errors about the coordinator, the group or the share session as a whole: Kafka reports
#: them at the top where the response has a top-level code (OffsetFetch v2+, ShareFetch),
#: so they go on every level.
_EVERY_LEVEL = frozenset({
    ErrorCode.not_coordinator, ErrorCode.coordinator_not_available,
    ErrorCode.coordinator_load_in_progress, ErrorCode.group_authorization_failed,
    ErrorCode.share_session_not_found, ErrorCode.invalid_share_session_epoch,
    ErrorCode.share_session_limit_reached,
})


def _elem_type(tp: Any) -> type[Any] | None:
    if typing.get_origin(tp) is tuple:
        args = typing.get_args(tp)
        if args and dataclasses.is_dataclass(args[0]) and isinstance(args[0], type):
            return args[0]
    return None


def _ident_of(obj: Any) -> dict[str, Any]:
    """The naming fields of a request element (a str or int element names itself)."""
    if isinstance(obj, str):
        return {k: obj for k in ("name", "topic", "topic_name", "group_id", "key")}
    if isinstance(obj, int):
        return {k: obj for k in _PARTITION_IDS}
    out: dict[str, Any] = {}
    for k in _IDENT:
        v = getattr(obj, k, None)
        if v is not None:
            out[k] = v
    # Requests and responses name the same thing differently (Fetch: topic / name,
    # the share-group offsets APIs: topic_name).
    for group in (_TOPIC_IDS[:3], _PARTITION_IDS):
        value = next((out[k] for k in group if k in out), None)
        if value is not None:
            for k in group:
                out.setdefault(k, value)
    return out


def _request_lists(req: Any) -> list[tuple[str, tuple[Any, ...]]]:
    if req is None or not dataclasses.is_dataclass(req):
        return []
    out = []
    for f in dataclasses.fields(req):
        v = getattr(req, f.name)
        if isinstance(v, tuple) and v:
            out.append((f.name, v))
    return out


def _pick_list(name: str, elem_t: type[Any], req: Any) -> tuple[Any, ...] | None:
    """The request list a response list mirrors: same field name, else the request's
    first list whose elements name things the response element has a field for."""
    lists = _request_lists(req)
    wanted = {f.name for f in dataclasses.fields(elem_t)} & set(_IDENT)
    if not wanted:
        return None
    for lname, items in lists:
        if lname == name:
            return items
    for _lname, items in lists:
        if set(_ident_of(items[0])) & wanted:
            return items
    return None


def _mirror(resp_t: type[Any], req: Any, error: ErrorCode, top: bool) -> tuple[Any, bool]:
    """Build ``resp_t`` after ``req``; returns (entity, whether a nested level took the
    error)."""
    hints = typing.get_type_hints(resp_t)
    ident = _ident_of(req) if req is not None and not top else {}
    kwargs: dict[str, Any] = {}
    nested_took = False
    error_fields: list[str] = []
    for f in dataclasses.fields(resp_t):
        if f.metadata.get("kafka_type") == "error_code":
            error_fields.append(f.name)
            continue
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        tp = hints[f.name]
        elem_t = _elem_type(tp)
        if elem_t is not None:
            items = _pick_list(f.name, elem_t, req)
            built = []
            for item in items or ():
                entity, took = _mirror(elem_t, item, error, False)
                built.append(entity)
                nested_took = True if took else nested_took
            kwargs[f.name] = tuple(built)
            continue
        if f.name in ident and type(ident[f.name]) is type(_default_for(tp, f.metadata)):
            kwargs[f.name] = ident[f.name]
            continue
        if f.name in _COPIED and req is not None and not isinstance(req, str | int):
            v = getattr(req, f.name, None)
            if isinstance(v, str) or (v is None and _default_for(tp, f.metadata) is None):
                kwargs[f.name] = v
                continue
        if f.name in _MINUS_ONE:
            kwargs[f.name] = -1
            continue
        kwargs[f.name] = _default_for(tp, f.metadata)
    here = not nested_took or error in _EVERY_LEVEL
    for name in error_fields:
        kwargs[name] = error if here else NO_ERROR
    return resp_t(**kwargs), nested_took or bool(error_fields)


def shaped_error_response(response_type: type[Any], request: Any, error: ErrorCode) -> Any:
    """A response of ``response_type`` answering ``request`` with ``error`` in its place."""
    if request is None:
        return build_default(response_type, error)
    try:
        entity, _took = _mirror(response_type, request, error, True)
        return entity
    except (TypeError, ValueError):
        # A shape the mirror does not know: the top-level error is still Kafka's answer.
        return build_default(response_type, error)
