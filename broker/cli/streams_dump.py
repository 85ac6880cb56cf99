"""``kafkalite offsets dump``'s view of the KIP-1071 streams group records in
``__consumer_offsets`` (types 17, 19-23), field names as Kafka's JSON converters write
them."""

from __future__ import annotations

import dataclasses
from typing import Any

from kafkalite.protocol import streams_group_records as st
from kafkalite.protocol.schema_io import Reader


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _tasks(tasks: st.TaskIds) -> list[dict[str, Any]]:
    return [{"subtopologyId": s, "partitions": list(ps)} for s, ps in tasks]


def _json(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {_camel(f.name): _json(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, tuple):
        return [_json(x) for x in v]
    return v


def key_json(key: st.StreamsGroupKey) -> dict[str, Any]:
    data: dict[str, Any] = {"groupId": key.group}
    if isinstance(key, st.MEMBER_KEY_CLASSES):
        data["memberId"] = key.member_id
    return {"type": str(key.record_type), "data": data}


def value_json(v: st.StreamsGroupValue) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for f in dataclasses.fields(v):
        value = getattr(v, f.name)
        if f.name.endswith(("_tasks", "_revocation")):
            data[_camel(f.name)] = _tasks(value)
        elif f.name == "user_endpoint":
            data["userEndpoint"] = (None if value is None
                                    else {"host": value[0], "port": value[1]})
        elif f.name in ("client_tags",):
            data["clientTags"] = [{"key": k, "value": x} for k, x in value]
        else:
            data[_camel(f.name)] = _json(value)
    return {"version": str(st.VALUE_VERSION), "data": data}


def record_json(record_type: int, key_bytes: bytes, value_bytes: bytes | None
                ) -> dict[str, Any]:
    try:
        r = Reader(key_bytes)
        r.i16()
        key = st.decode_key_fields(record_type, r)
    except Exception as e:
        return {"key": None, "value": None, "error": str(e)}
    out: dict[str, Any] = {"key": key_json(key), "value": None}
    if value_bytes is not None:
        try:
            out["value"] = value_json(st.decode_value(key, value_bytes))
        except Exception as e:
            out["error"] = str(e)
    return out
