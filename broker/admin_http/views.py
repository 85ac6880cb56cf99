"""The broker's state as JSON-ready dicts, for the admin API, the console and ``/metrics``.

Everything here reads; nothing changes state. All of it runs on the broker's loop, so it
sees a consistent picture between two requests. The group coordinator's state (its
groups, members, session deadlines and committed offsets) is read through the runtime's
query entry point, as the request handlers read it.
"""

from __future__ import annotations

import base64
import json
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from kafkalite.coordinator.classic.group import GroupMetadata
from kafkalite.coordinator.results import DescribedConsumerGroup, DescribedTopicPartitions
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import NO_ERROR, ProtocolError
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.protocol.records import Record, decode_batch, iter_batch_headers

from ..cluster import Cluster
from ..control.clock import ClockControl
from ..metrics import GroupRow
from ..topic_store import Storage
from .streams_view import streams_group

if TYPE_CHECKING:
    from kafkalite.schema_registry.decode import ValueDecoder

    from ..auth import Access
    from ..telemetry.clients import ClientRegistry
    from .share_view import ShareView

#: At most this many messages per request to the message browser.
MAX_MESSAGES = 500
#: At most this many rebalance history entries per group.
MAX_HISTORY = 50
#: Bytes of a key, value or header shown (the size is always given).
MAX_SHOWN = 4096


class NotFound(LookupError):
    pass


class BadRequest(ValueError):
    pass


def shown(data: bytes | None) -> dict[str, Any] | None:
    """A key, value or header value as hex, and as text and JSON where it decodes."""
    if data is None:
        return None
    head = data[:MAX_SHOWN]
    out: dict[str, Any] = {"size": len(data), "hex": head.hex()}
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        out["base64"] = base64.b64encode(head).decode()
        return out
    out["text"] = text
    if len(data) <= MAX_SHOWN and (text[:1] in ("{", "[", '"')
                                   or text.strip().lstrip("-").isdigit()):
        try:
            out["json"] = json.loads(text)
        except ValueError:
            pass
    return out


def message_json(r: Record, decoded: dict[str, Any] | None) -> dict[str, Any]:
    """One record as the message browser and the search show it."""
    return {"offset": r.offset, "timestamp": r.timestamp, "key": shown(r.key),
            "value": shown(r.value), "decoded": decoded,
            "headers": [{"key": k, "value": shown(v)} for k, v in r.headers]}


class _History:
    """Group metadata records of one ``__consumer_offsets`` partition, read incrementally:
    each look decodes only what was appended since the last."""

    __slots__ = ("by_group", "next_offset")

    def __init__(self) -> None:
        self.next_offset = 0
        self.by_group: dict[str, deque[dict[str, Any]]] = {}


class NodeSwitch(Protocol):
    """Stopping, starting, isolating and healing the nodes of the process (the
    ``Broker``, when it runs several)."""

    async def stop_node(self, node_id: int, controlled: bool = True) -> None: ...

    async def start_node(self, node_id: int) -> None: ...

    def isolate_node(self, node_id: int) -> None: ...

    def heal_node(self, node_id: int) -> None: ...

    def node_status(self, node_id: int) -> str: ...


class BrokerView:
    def __init__(self, cluster: Cluster, storage: Storage, runtime: CoordinatorRuntime,
                 clock: ClockControl) -> None:
        self.cluster_info = cluster
        self.storage = storage
        #: The group coordinator's reads, through the runtime as the request handlers
        #: make them.
        self.groups_query = runtime.groups.query
        #: Its writes (the console's offset reset), as the OffsetCommit handler makes them.
        self.groups_write = runtime.groups.write
        self.clock = clock
        self._history: dict[int, _History] = {}
        #: The Schema Registry's subjects and versions for the console (set when it is on).
        self.schemas: Callable[[], list[dict[str, Any]]] | None = None
        #: The share-partitions of share groups (set when the share fetch path is built).
        self.share: ShareView | None = None
        #: The nodes' switches (set by the composition root when the process runs several).
        self.nodes: NodeSwitch | None = None
        #: The connected clients and what they pushed (``telemetry.clients``).
        self.clients_registry: ClientRegistry | None = None
        #: Values in the Confluent wire format decoded (set when the registry is served).
        self.decoder: ValueDecoder | None = None
        #: The broker's ACLs and the principal the admin listener acts as (``admin.principal``).
        self.access: Access | None = None
        self.principal = "User:ANONYMOUS"

    # --- cluster and topics ---------------------------------------------------------------

    def cluster(self) -> dict[str, Any]:
        c = self.cluster_info
        first = c.listeners[0] if c.listeners else None
        return {
            "cluster_id": c.cluster_id,
            "node_id": c.node_id,
            "bootstrap": (f"{first.advertised_host}:{first.advertised_port}"
                          if first is not None else None),
            "listeners": [{"name": x.name, "host": x.host, "port": x.port,
                           "advertised": f"{x.advertised_host}:{x.advertised_port}",
                           "security_protocol": x.security_protocol}
                          for x in c.listeners],
            "data_dir": str(c.data_dir),
            "topics": len(self.storage.catalog),
            "clock": self.clock.to_json(),
        }

    def brokers(self) -> list[dict[str, Any]]:
        """Every node of the process (``kafkalite.nodes``) and the partitions it leads."""
        c = self.cluster_info
        leads: dict[int, int] = {}
        for info in self.storage.catalog:
            for p in range(info.partitions):
                leader = c.leader(info.name, p)
                leads[leader] = leads.get(leader, 0) + 1
        return [{"node_id": m.node_id, "rack": m.rack, "controller": m.node_id == c.controller_id,
                 "listeners": [{"name": x.name,
                                "advertised": f"{x.advertised_host}:{x.advertised_port}"}
                               for x in m.listeners],
                 "data_dir": str(m.data_dir), "leader_partitions": leads.get(m.node_id, 0),
                 "status": self.nodes.node_status(m.node_id) if self.nodes else "running"}
                for m in c.members()]

    async def switch_node(self, node_id: int, action: str, controlled: bool = True
                          ) -> dict[str, Any]:
        """stop, start, isolate or heal one node; its row of ``brokers`` after."""
        nodes = self.nodes
        if nodes is None:
            raise BadRequest("one node: start with --nodes N to stop and start brokers")
        if self.cluster_info.member(node_id) is None:
            raise NotFound(f"no broker {node_id}")
        if action == "stop":
            await nodes.stop_node(node_id, controlled)
        elif action == "start":
            await nodes.start_node(node_id)
        elif action == "isolate":
            nodes.isolate_node(node_id)
        elif action == "heal":
            nodes.heal_node(node_id)
        else:
            raise NotFound(f"unknown action {action!r}: stop, start, isolate or heal")
        return next(b for b in self.brokers() if b["node_id"] == node_id)

    def _partition(self, topic: str, p: int) -> dict[str, Any]:
        leader, replicas, isr = self.cluster_info.replicas(topic, p)
        placed = {"leader": leader, "replicas": list(replicas), "isr": list(isr)}
        plog = self.storage.logs.get(topic, p)
        if plog is None:
            return {"partition": p, "log_start_offset": 0, "log_end_offset": 0,
                    "size_bytes": 0, "segments": 0, **placed}
        return {"partition": p, "log_start_offset": plog.log_start_offset,
                "log_end_offset": plog.high_watermark, "size_bytes": plog.size_bytes,
                "segments": len(plog.segments), **placed}

    def topics(self) -> list[dict[str, Any]]:
        out = []
        for info in sorted(self.storage.catalog, key=lambda t: t.name):
            parts = [self._partition(info.name, p) for p in range(info.partitions)]
            out.append({
                "name": info.name, "topic_id": str(info.topic_id), "internal": info.internal,
                "partitions": info.partitions,
                "messages": sum(p["log_end_offset"] - p["log_start_offset"] for p in parts),
                "size_bytes": sum(p["size_bytes"] for p in parts),
            })
        return out

    def topic(self, name: str) -> dict[str, Any]:
        info = self.storage.catalog.get(name)
        if info is None:
            raise NotFound(f"unknown topic {name!r}")
        return {"name": name, "topic_id": str(info.topic_id), "internal": info.internal,
                "configs": dict(info.configs),
                "partitions": [self._partition(name, p) for p in range(info.partitions)]}

    def messages(self, topic: str, partition: int, offset: int | None, limit: int
                 ) -> dict[str, Any]:
        """Up to ``limit`` records from ``offset`` (default: the last ``limit``)."""
        info = self.storage.catalog.get(topic)
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
        plog = self.storage.logs.get(topic, partition)
        if plog is not None and offset < end:
            for batch in plog.iter_batches(offset):
                for pos, h in iter_batch_headers(batch):
                    if h.is_control or h.last_offset < offset:
                        continue
                    _h, recs = decode_batch(batch, pos)
                    for r in recs:
                        if offset <= r.offset < end:
                            records.append(message_json(r, (
                                self.decoder.decode(r.value)
                                if self.decoder is not None else None)))
                            if len(records) >= limit:
                                break
                    if len(records) >= limit:
                        break
                if len(records) >= limit:
                    break
        return {"topic": topic, "partition": partition, "log_start_offset": start,
                "log_end_offset": end, "offset": offset, "messages": records}

    # --- groups ---------------------------------------------------------------------------

    def group_rows(self) -> list[GroupRow]:
        """(group, state, members, generation) of every group, for ``/metrics`` (a KIP-848
        consumer group's generation is its group epoch). Share and streams groups are not
        among them: Kafka counts them in gauges of their own."""
        return [GroupRow(o.group_id, o.state, o.members, o.generation)
                for o in self.groups_query(lambda g: g.overview())
                if o.group_type not in ("share", "streams")]

    def groups(self) -> list[dict[str, Any]]:
        return [{"group_id": o.group_id, "type": o.group_type, "state": o.state,
                 "generation": o.generation, "protocol_type": o.protocol_type,
                 "protocol": o.protocol, "members": o.members, "partition": o.partition}
                for o in self.groups_query(lambda g: g.overview())]

    def consumer_group(self, group: DescribedConsumerGroup) -> dict[str, Any]:
        """A KIP-848 consumer group as ConsumerGroupDescribe describes it: its epochs, and
        each member's epoch, state, protocol and partitions (assigned, being revoked,
        target)."""

        def parts(assignment: tuple[DescribedTopicPartitions, ...]) -> list[dict[str, Any]]:
            return [{"topic": t.topic_name, "partitions": list(t.partitions)}
                    for t in assignment]

        members = [{
            "member_id": m.member_id, "instance_id": m.instance_id,
            "client_id": m.client_id, "client_host": m.client_host,
            "member_epoch": m.member_epoch, "state": m.state,
            "protocol": "classic" if m.member_type == 0 else "consumer",
            "subscribed_topics": list(m.subscribed_topic_names),
            "subscribed_regex": m.subscribed_topic_regex,
            "assignment": parts(m.assignment),
            "revoking": parts(m.revoking),
            "target": parts(m.target_assignment),
        } for m in group.members]
        return {
            "group_id": group.group_id, "type": "consumer", "state": group.state,
            "group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
            "assignor": group.assignor, "now_ms": self.clock.now_ms(),
            "members": members, "lag": self.lag(group.group_id, members),
        }

    def group(self, group_id: str) -> dict[str, Any]:
        query = self.groups_query
        g = query(lambda c: c.group(group_id))
        if g is None:
            return self._other_group(group_id)
        now = self.clock.now_ms()
        deadlines = query(lambda c: c.session_deadlines(group_id))
        members = []
        for m in g.members.values():
            deadline = deadlines.get(m.member_id)
            members.append({
                "member_id": m.member_id, "group_instance_id": m.group_instance_id,
                "client_id": m.client_id, "client_host": m.client_host,
                "session_timeout_ms": m.session_timeout_ms,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "assignment": _assignment(g, m.assignment),
                "leader": g.leader_id == m.member_id,
                "session_deadline_ms": deadline,
                "session_remaining_ms": None if deadline is None else deadline - now,
                # The session timer is re-armed to now + session timeout on every
                # heartbeat, so the deadline tells when the last one came.
                "since_heartbeat_ms": None if deadline is None
                else now - (deadline - m.session_timeout_ms),
            })
        return {
            "group_id": g.group_id, "state": g.state.value, "generation": g.generation,
            "protocol_type": g.protocol_type, "protocol": g.protocol_name,
            "leader": g.leader_id, "partition": g.partition, "now_ms": now,
            "members": members, "lag": self.lag(g.group_id, members),
            "history": self.history(g.group_id, g.partition),
        }

    def clients(self) -> list[dict[str, Any]]:
        """The connected clients (``telemetry.clients``), each with the groups it is a
        member of: those whose members have its client id and host."""
        if self.clients_registry is None:
            return []
        rows = self.clients_registry.rows()
        wanted = {(r["client_id"], r["address"].rsplit(":", 1)[0]) for r in rows}
        member_of: dict[tuple[str | None, str], list[str]] = {}
        for o in self.groups():
            try:
                members = self.group(o["group_id"]).get("members", [])
            except NotFound:
                continue
            for m in members:
                key = (m.get("client_id"), str(m.get("client_host", "")).lstrip("/"))
                if key in wanted:
                    member_of.setdefault(key, []).append(o["group_id"])
        for r in rows:
            r["groups"] = sorted(set(member_of.get(
                (r["client_id"], r["address"].rsplit(":", 1)[0]), [])))
        return rows

    def _other_group(self, group_id: str) -> dict[str, Any]:
        """A KIP-848 consumer group, a streams group or a share group."""
        query = self.groups_query
        described = query(lambda c: c.describe_consumer_groups([group_id]))[0]
        if described.error is NO_ERROR:
            return self.consumer_group(described)
        streams = query(lambda c: streams_group(c.streams_group(group_id),
                                                c.streams_session_deadlines(group_id)))
        if streams is not None:
            streams["now_ms"] = self.clock.now_ms()
            streams["lag"] = self.lag(group_id, streams["members"])
            return streams
        sg = query(lambda c: c.share_group(group_id))
        if sg is not None:
            from .share_view import share_group

            return share_group(sg, query(lambda c: c.topics).name_of, self.share,
                               self.clock.now_ms())
        raise NotFound(f"unknown group {group_id!r}")

    def lag(self, group_id: str, members: list[dict[str, Any]] | None = None
            ) -> list[dict[str, Any]]:
        """Per partition the group commits to or is assigned: committed offset, log end
        offset, lag (None without a commit, as kafka-consumer-groups shows "-") and the
        member that owns it."""
        owners: dict[tuple[str, int], str] = {}
        for m in members or ():
            for a in m["assignment"]:
                for p in a.get("partitions", ()):
                    owners[(a["topic"], p)] = m["client_id"]
        committed = self.groups_query(lambda g: g.committed(group_id))
        out = []
        for topic, p in sorted(set(committed) | set(owners)):
            plog = self.storage.logs.get(topic, p)
            end = plog.high_watermark if plog is not None else None
            offset = committed.get((topic, p))
            out.append({"topic": topic, "partition": p, "committed": offset,
                        "log_end_offset": end, "owner": owners.get((topic, p)),
                        "lag": None if end is None or offset is None
                        else max(end - offset, 0)})
        return out

    def history(self, group_id: str, partition: int) -> list[dict[str, Any]]:
        """The group's metadata records in ``__consumer_offsets``: one per generation
        (and per emptied or deleted group), newest first."""
        plog = self.storage.logs.get(OFFSETS_TOPIC, partition)
        if plog is None:
            return []
        h = self._history.get(partition)
        if h is None or h.next_offset > plog.high_watermark:
            h = self._history[partition] = _History()  # new, or the log was replaced
        if h.next_offset < plog.high_watermark:
            self._read_history(h, plog.iter_batches(h.next_offset))
            h.next_offset = plog.high_watermark
        return list(h.by_group.get(group_id, ()))[::-1]

    @staticmethod
    def _read_history(h: _History, batches: Any) -> None:
        for batch in batches:
            for pos, header in iter_batch_headers(batch):
                if header.is_control or header.last_offset < h.next_offset:
                    continue
                try:
                    _h, recs = decode_batch(batch, pos)
                except ProtocolError:
                    continue
                for r in recs:
                    if r.offset < h.next_offset or r.key is None:
                        continue
                    try:
                        key = co.decode_key(r.key)
                        if not isinstance(key, co.GroupMetadataKey):
                            continue
                        entry: dict[str, Any] = {"offset": r.offset, "timestamp": r.timestamp}
                        if r.value is None:
                            entry["deleted"] = True
                        else:
                            v = co.decode_group_value(r.value)
                            entry.update(generation=v.generation, protocol=v.protocol,
                                         leader=v.leader,
                                         members=[m.member_id for m in v.members])
                    except (ProtocolError, co.UnknownRecordType):
                        continue
                    found = h.by_group.get(key.group)
                    if found is None:
                        found = h.by_group[key.group] = deque(maxlen=MAX_HISTORY)
                    found.append(entry)


def _assignment(g: GroupMetadata, raw: bytes) -> list[dict[str, Any]]:
    if not raw:
        return []
    if g.protocol_type != "consumer":
        return [{"raw": raw.hex()}]
    try:
        a = co.decode_assignment(raw)
    except (ProtocolError, ValueError, IndexError):
        return [{"raw": raw.hex()}]
    return [{"topic": tp.topic, "partitions": list(tp.partitions)}
            for tp in a.assigned_partitions]
