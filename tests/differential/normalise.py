"""The one normalisation applied to both brokers' responses before they are compared.

What is replaced, and why (docs/compatibility.md repeats this list):

- ``throttle_time``: quota throttling is timing, not behaviour; always 0.
- node ids (``node_id``, ``leader_id``, ``controller_id``, ``broker_id``, replica and ISR
  lists, ``leader`` when a number, ...): each broker has its own; ``<node>``.
- ``host``, ``port``: each broker listens on its own free port; ``<host>``, ``<port>``.
- ``cluster_id``: random per cluster; ``<cluster>``.
- member ids, topic ids, producer ids, fetch session ids, delegation/quorum epochs'
  identities: assigned by the broker; replaced by ``<member-N>`` / ``<topic-id-N>`` /
  ``<producer-id-N>`` / ``<session-N>`` numbered in order of first appearance within one
  scenario, so equal ids stay equal and distinct ones distinct.
- timestamps the broker takes from its clock (``*_timestamp``, ``*_time_ms``,
  ``log_append_time`` when set, ...): ``<time>``.
- ``error_message``: free text, and whether a broker sends one at all (or an empty one)
  is not behaviour: always None. The error codes are compared.
- arrays the protocol does not order (topics, partitions, groups, configs, members) are
  sorted by their identifying fields.
"""

from __future__ import annotations

import re
from typing import Any

NODE_FIELDS = frozenset({
    "node_id", "leader_id", "controller_id", "broker_id", "replica_nodes", "isr_nodes",
    "offline_replicas", "eligible_leader_replicas", "last_known_elr", "replicas",
    "adding_replicas", "removing_replicas", "coordinator_id", "voter_id", "replica_id",
    "leader", "preferred_leader",
})
FIXED = {"host": "<host>", "port": "<port>", "cluster_id": "<cluster>", "throttle_time": 0}
NUMBERED_STR = {"member_id": "member", "leader": "member", "topic_id": "topic-id",
                "protocol_name_member_id": "member"}
NUMBERED_INT = {"producer_id": "producer-id", "session_id": "session"}
TIME_RE = re.compile(r".*(_timestamp|_time_ms|_timestamp_ms)$|^log_append_time$"
                     "|^transaction_start_time$|^last_timestamp$|^commit_timestamp$")
SORT_KEYS = ("api_key", "name", "topic", "topic_name", "topic_id", "partition_index", "partition",
             "group_id", "transactional_id", "resource_name", "resource_type", "key",
             "config_name", "member_id", "producer_id", "principal", "id", "user")
ZERO_UUID = "00000000-0000-0000-0000-000000000000"


class Normaliser:
    """Per scenario and broker: numbering of ids by first appearance."""

    def __init__(self) -> None:
        self.numbers: dict[tuple[str, Any], str] = {}

    def _number(self, kind: str, value: Any) -> str:
        key = (kind, value)
        if key not in self.numbers:
            n = sum(1 for k in self.numbers if k[0] == kind) + 1
            self.numbers[key] = f"<{kind}-{n}>"
        return self.numbers[key]

    def value(self, name: str, v: Any) -> Any:
        if name in FIXED:
            return FIXED[name] if v is not None else None
        if name == "error_message":
            return None
        if name in NODE_FIELDS and isinstance(v, int) and not isinstance(v, bool):
            return "<node>" if v >= 0 else v
        if name in NODE_FIELDS and isinstance(v, list) and all(isinstance(x, int) for x in v):
            return ["<node>" if x >= 0 else x for x in v]
        if name in NUMBERED_STR and isinstance(v, str) and v and v != ZERO_UUID:
            return self._number(NUMBERED_STR[name], v)
        if name in NUMBERED_INT and isinstance(v, int) and v > 0:
            return self._number(NUMBERED_INT[name], v)
        if TIME_RE.match(name) and isinstance(v, int) and v > 0:
            return "<time>"
        return self.walk(v)

    def walk(self, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: self.value(k, v) for k, v in data.items()}
        if isinstance(data, list):
            items = [self.walk(x) for x in data]
            if items and all(isinstance(x, dict) for x in items):
                items.sort(key=_sort_key)
            return items
        return data


def _sort_key(item: dict[str, Any]) -> tuple[str, ...]:
    return tuple(repr(item.get(k)) for k in SORT_KEYS)


def _identity(items: list[Any]) -> str | None:
    """The field that names each entry of a list of entries, if one does uniquely."""
    if not items or not all(isinstance(x, dict) for x in items):
        return None
    for k in SORT_KEYS:
        values = [repr(x.get(k)) for x in items if k in x]
        if len(values) == len(items) and len(set(values)) == len(items):
            return k
    return None


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": [{"name": "x", "b": 1}]}`` -> ``{"a[name=x].name": "x", "a[name=x].b": 1}``:
    entries of a list are addressed by their identifying field where they have one (so
    one missing entry is one difference), else by index. Empty containers are leaves."""
    out: dict[str, Any] = {}
    if isinstance(data, dict) and data:
        for k, v in data.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else k))
    elif isinstance(data, list) and data:
        key = _identity(data)
        for i, v in enumerate(data):
            at = f"{key}={v[key]}" if key is not None else str(i)
            out.update(flatten(v, f"{prefix}[{at}]"))
    else:
        out[prefix] = data
    return out
