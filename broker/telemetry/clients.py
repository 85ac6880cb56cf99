"""The clients connected to the broker, as the admin API lists them (``/api/v1/clients``)
and ``/metrics`` shows them: each connection's client id, software name and version (from
its ApiVersions v3+ request), address, listener, principal and start, and the metrics its
client instance pushed (KIP-714), if any.

The connections themselves are the broker's (``Broker.connections``); this keeps only what
a connection does not: the software it named, until it closes.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from .instances import Instance, Instances, kafka_uuid, match_attributes, parse_kafka_uuid

if TYPE_CHECKING:
    from prometheus_client.core import Metric


class Connection(Protocol):
    """What is listed of a broker connection (``connection.KafkaConnection``)."""

    connection_id: int
    client_id: str | None
    peer_host: str
    peer_port: int
    listener_name: str
    principal: str
    connected_at: int
    closed: bool


_PROM_NAME = re.compile(r"[^a-zA-Z0-9_]")


def prometheus_name(name: str) -> str:
    """An OTLP metric name as a Prometheus one (``org.apache.kafka.x`` ->
    ``kafkalite_client_org_apache_kafka_x``): the prefix keeps pushed names apart from the
    broker's own."""
    return "kafkalite_client_" + _PROM_NAME.sub("_", name)


class ClientRegistry:
    def __init__(self, instances: Instances) -> None:
        self.instances = instances
        #: connection id -> (software name, software version).
        self.software: dict[int, tuple[str, str]] = {}
        #: One tuple per distinct software, shared by its connections (bounded).
        self._kinds: dict[tuple[str, str], tuple[str, str]] = {}
        #: The broker's open connections (set once the broker is built).
        self.connections: Callable[[], Iterable[Connection]] = tuple

    # --- told by the request path ---------------------------------------------------------

    def named(self, connection_id: int, name: str, version: str) -> None:
        """An ApiVersions v3+ request named the client's software."""
        kind = (name, version)
        shared = self._kinds.get(kind)
        if shared is None and len(self._kinds) < 256:
            shared = self._kinds[kind] = kind
        self.software[connection_id] = shared or kind

    def disconnected(self, connection_id: int) -> None:
        self.software.pop(connection_id, None)
        self.instances.disconnected(connection_id)

    def attributes(self, connection_id: int, client_id: str | None, host: str, port: int
                   ) -> Callable[[uuid.UUID], dict[str, str | None]]:
        """The match attributes of a client instance coming over this connection."""
        def of(iid: uuid.UUID) -> dict[str, str | None]:
            name, version = self.software.get(connection_id, (None, None))
            return match_attributes(iid, client_id, {"name": name, "version": version},
                                    host, port)
        return of

    # --- read by the admin API ------------------------------------------------------------

    def _open(self) -> list[Connection]:
        return sorted((c for c in self.connections() if not c.closed),
                      key=lambda c: (c.connected_at, c.connection_id))

    def rows(self) -> list[dict[str, Any]]:
        self.instances.expire(self.instances.clock_ms())
        out = []
        for conn in self._open():
            inst = self.instances.for_connection(conn.connection_id)
            name, version = self.software.get(conn.connection_id, (None, None))
            out.append({
                "client_id": conn.client_id,
                "client_instance_id": None if inst is None else kafka_uuid(inst.instance_id),
                "software_name": name,
                "software_version": version,
                "address": f"{conn.peer_host}:{conn.peer_port}",
                "listener": conn.listener_name,
                "principal": conn.principal,
                "connected_since": conn.connected_at,
                "metrics": [] if inst is None else latest(inst),
            })
        return out

    def history(self, instance_id: str) -> list[dict[str, Any]] | None:
        """Every series an instance pushed with its kept values (None: no such instance)."""
        iid = parse_kafka_uuid(instance_id)
        inst = None if iid is None else self.instances.by_id.get(iid)
        if inst is None:
            return None
        return [{"name": s.name, **({"unit": s.unit} if s.unit else {}),
                 **({"attributes": dict(s.attributes)} if s.attributes else {}),
                 "values": [[at, v] for at, v in s.values]}
                for s in inst.series.values()]

    def families(self) -> Iterator[Metric]:
        """The connected clients by listener and software, and every pushed metric's latest
        value, labelled with the client instance and client id (``/metrics``)."""
        from prometheus_client.core import GaugeMetricFamily

        conns = self._open()
        connected = GaugeMetricFamily(
            "kafkalite_connected_clients", "Open client connections, by listener and the "
            "software named in ApiVersions", labels=["listener", "software_name",
                                                     "software_version"])
        counts: dict[tuple[str, str, str], int] = {}
        for c in conns:
            name, version = self.software.get(c.connection_id, ("", ""))
            key = (c.listener_name, name, version)
            counts[key] = counts.get(key, 0) + 1
        for key, n in sorted(counts.items()):
            connected.add_metric(list(key), n)
        yield connected
        samples: dict[str, list[tuple[dict[str, str], float]]] = {}
        for c in conns:
            inst = self.instances.for_connection(c.connection_id)
            if inst is None:
                continue
            for s in inst.series.values():
                if not s.values:
                    continue
                labels = {"client_instance_id": kafka_uuid(inst.instance_id),
                          "client_id": c.client_id or ""}
                for k, v in s.attributes:
                    labels.setdefault(_PROM_NAME.sub("_", k), v)
                samples.setdefault(prometheus_name(s.name), []).append(
                    (labels, s.values[-1][1]))
        for family_name, rows in sorted(samples.items()):
            keys = sorted({k for labels, _v in rows for k in labels})
            family = GaugeMetricFamily(family_name, "Pushed by clients (KIP-714)",
                                       labels=keys)
            for labels, value in rows:
                family.add_metric([labels.get(k, "") for k in keys], value)
            yield family


def latest(inst: Instance) -> list[dict[str, Any]]:
    """Each series' newest value: ``{"name", "value", "unit"?, "attributes"?, "at"}``."""
    out = []
    for s in inst.series.values():
        if not s.values:
            continue
        at, value = s.values[-1]
        row: dict[str, Any] = {"name": s.name, "value": value}
        if s.unit:
            row["unit"] = s.unit
        if s.attributes:
            row["attributes"] = dict(s.attributes)
        row["at"] = at
        out.append(row)
    return out
