"""The broker's state as JSON-ready dicts, for the admin API and the console.

Everything here reads; nothing changes state. All of it runs on the broker's loop, so it
sees a consistent picture between two requests.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.protocol.records import decode_batch, iter_batch_headers

#: At most this many messages per request to the message browser.
MAX_MESSAGES = 500
#: At most this many rebalance history entries per group.
MAX_HISTORY = 50


class NotFound(LookupError):
    pass


class BadRequest(ValueError):
    pass


def _text(data: bytes | None) -> dict[str, Any] | None:
    """A key or value as text, JSON (when it parses) and hex."""
    if data is None:
        return None
    out: dict[str, Any] = {"size": len(data), "hex": data[:4096].hex()}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        out["base64"] = base64.b64encode(data[:4096]).decode()
        return out
    out["text"] = text
    if text[:1] in ("{", "[", '"') or text.strip().lstrip("-").isdigit():
        try:
            out["json"] = json.loads(text)
        except ValueError:
            pass
    return out


class BrokerView:
    def __init__(self, broker: Any) -> None:
        self.broker = broker

    # --- cluster and topics ---------------------------------------------------------------

    def cluster(self) -> dict[str, Any]:
        b = self.broker
        clock = getattr(b, "clock_control", None)
        return {
            "cluster_id": b.cluster_id,
            "node_id": b.node_id,
            "bootstrap": b.bootstrap,
            "listeners": [{"name": x.name, "host": x.host, "port": x.port,
                           "advertised": f"{x.advertised_host}:{x.advertised_port}"}
                          for x in b.listeners],
            "data_dir": str(b.data_dir),
            "topics": len(b.topics),
            "clock": clock.to_json() if clock is not None else None,
        }

    def _partition(self, topic: str, p: int) -> dict[str, Any]:
        plog = self.broker.logs.get(topic, p) if self.broker.logs is not None else None
        if plog is None:
            return {"partition": p, "log_start_offset": 0, "log_end_offset": 0,
                    "size_bytes": 0, "segments": 0}
        return {"partition": p, "log_start_offset": plog.log_start_offset,
                "log_end_offset": plog.high_watermark, "size_bytes": plog.size_bytes,
                "segments": len(plog.segments)}

    def topics(self) -> list[dict[str, Any]]:
        out = []
        for info in sorted(self.broker.topics, key=lambda t: t.name):
            parts = [self._partition(info.name, p) for p in range(info.partitions)]
            out.append({
                "name": info.name, "topic_id": str(info.topic_id), "internal": info.internal,
                "partitions": info.partitions,
                "messages": sum(p["log_end_offset"] - p["log_start_offset"] for p in parts),
                "size_bytes": sum(p["size_bytes"] for p in parts),
            })
        return out

    def topic(self, name: str) -> dict[str, Any]:
        info = self.broker.topics.get(name)
        if info is None:
            raise NotFound(f"unknown topic {name!r}")
        return {"name": name, "topic_id": str(info.topic_id), "internal": info.internal,
                "configs": dict(info.configs),
                "partitions": [self._partition(name, p) for p in range(info.partitions)]}

    def messages(self, topic: str, partition: int, offset: int | None, limit: int
                 ) -> dict[str, Any]:
        info = self.broker.topics.get(topic)
        if info is None:
            raise NotFound(f"unknown topic {topic!r}")
        if not 0 <= partition < info.partitions:
            raise NotFound(f"topic {topic!r} has partitions 0..{info.partitions - 1}, "
                           f"not {partition}")
        if not 1 <= limit <= MAX_MESSAGES:
            raise BadRequest(f"limit must be within 1..{MAX_MESSAGES}")
        part = self._partition(topic, partition)
        start, end = part["log_start_offset"], part["log_end_offset"]
        if offset is None:
            offset = max(start, end - limit)
        if not start <= offset <= end:
            raise BadRequest(f"offset {offset} is out of range: partition {partition} of "
                             f"{topic!r} has offsets {start}..{end}")
        records: list[dict[str, Any]] = []
        plog = self.broker.logs.get(topic, partition)
        if plog is not None and offset < end:
            for batch in plog.iter_batches(offset):
                for pos, h in iter_batch_headers(batch):
                    if h.is_control or h.last_offset < offset:
                        continue
                    _h, recs = decode_batch(batch, pos)
                    for r in recs:
                        if r.offset < offset or r.offset >= end:
                            continue
                        records.append({
                            "offset": r.offset, "timestamp": r.timestamp,
                            "key": _text(r.key), "value": _text(r.value),
                            "headers": [{"key": k, "value": _text(v)} for k, v in r.headers],
                        })
                        if len(records) >= limit:
                            break
                    if len(records) >= limit:
                        break
                if len(records) >= limit:
                    break
        return {"topic": topic, "partition": partition, "log_start_offset": start,
                "log_end_offset": end, "offset": offset, "messages": records}

    # --- groups ---------------------------------------------------------------------------

    def _runtime(self) -> Any:
        return self.broker.coordinator

    def _groups(self) -> list[Any]:
        rt = self._runtime()
        if rt is None:
            return []
        return [g for ps in rt.core.partitions.values() for g in ps.groups.values()]

    def group_rows(self) -> list[tuple[str, str, int, int]]:
        """(group, state, members, generation) for the metrics collector."""
        return [(g.group_id, _state(g), len(g.members), g.generation) for g in self._groups()]

    def groups(self) -> list[dict[str, Any]]:
        return [{"group_id": g.group_id, "state": _state(g), "generation": g.generation,
                 "protocol_type": g.protocol_type, "protocol": g.protocol_name,
                 "members": len(g.members), "partition": g.partition}
                for g in sorted(self._groups(), key=lambda g: g.group_id)]

    def find_group(self, group_id: str) -> Any:
        for g in self._groups():
            if g.group_id == group_id:
                return g
        raise NotFound(f"unknown group {group_id!r}")

    def group(self, group_id: str) -> dict[str, Any]:
        g = self.find_group(group_id)
        rt = self._runtime()
        now = rt.now()
        timers = rt.core.timers
        members = []
        for m in g.members.values():
            deadline = timers.deadline(("heartbeat", g.group_id, m.member_id))
            assignment: list[dict[str, Any]] = []
            if m.assignment and g.protocol_type == "consumer":
                try:
                    a = co.decode_assignment(m.assignment)
                    assignment = [{"topic": tp.topic, "partitions": list(tp.partitions)}
                                  for tp in a.assigned_partitions]
                except Exception:
                    assignment = [{"raw": m.assignment.hex()}]
            members.append({
                "member_id": m.member_id, "group_instance_id": m.group_instance_id,
                "client_id": m.client_id, "client_host": m.client_host,
                "session_timeout_ms": m.session_timeout_ms,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "assignment": assignment,
                "leader": g.leader_id == m.member_id,
                "session_deadline_ms": deadline,
                "session_remaining_ms": None if deadline is None else deadline - now,
                "since_heartbeat_ms": None if deadline is None
                else now - (deadline - m.session_timeout_ms),
            })
        return {
            "group_id": g.group_id, "state": _state(g), "generation": g.generation,
            "protocol_type": g.protocol_type, "protocol": g.protocol_name,
            "leader": g.leader_id, "partition": g.partition, "now_ms": now,
            "members": members, "lag": self.lag(g.group_id),
            "history": self.history(g.group_id, g.partition),
        }

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        hook = getattr(self.broker, "committed_offsets", None)
        return hook(group_id) if hook is not None else {}

    def lag(self, group_id: str) -> list[dict[str, Any]]:
        out = []
        for (topic, p), offset in sorted(self.committed(group_id).items()):
            plog = self.broker.logs.get(topic, p) if self.broker.logs is not None else None
            end = plog.high_watermark if plog is not None else None
            out.append({"topic": topic, "partition": p, "committed": offset,
                        "log_end_offset": end,
                        "lag": None if end is None else max(end - offset, 0)})
        return out

    def history(self, group_id: str, partition: int) -> list[dict[str, Any]]:
        """The group's metadata records in ``__consumer_offsets``: one per generation
        change (and each empty or deleted state), newest first."""
        logs = self.broker.logs
        plog = logs.get(OFFSETS_TOPIC, partition) if logs is not None else None
        if plog is None:
            return []
        out: list[dict[str, Any]] = []
        for batch in plog.iter_batches(plog.log_start_offset):
            for pos, h in iter_batch_headers(batch):
                if h.is_control:
                    continue
                try:
                    _h, recs = decode_batch(batch, pos)
                except Exception:
                    continue
                for r in recs:
                    if r.key is None:
                        continue
                    try:
                        key = co.decode_key(r.key)
                    except Exception:
                        continue
                    if not isinstance(key, co.GroupMetadataKey) or key.group != group_id:
                        continue
                    if r.value is None:
                        out.append({"offset": r.offset, "timestamp": r.timestamp,
                                    "deleted": True})
                        continue
                    v = co.decode_group_value(r.value)
                    out.append({"offset": r.offset, "timestamp": r.timestamp,
                                "generation": v.generation, "protocol": v.protocol,
                                "leader": v.leader,
                                "members": [m.member_id for m in v.members]})
        return out[::-1][:MAX_HISTORY]


def _state(group: Any) -> str:
    s = group.state
    name = getattr(s, "value", None)
    if isinstance(name, str) and name and name[0].isupper():
        return name
    raw = getattr(s, "name", str(s))
    return "".join(p.capitalize() for p in raw.lower().split("_"))
