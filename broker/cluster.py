"""Who this broker is and where it listens: what Metadata, FindCoordinator and
DescribeCluster tell clients."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class BoundListener:
    name: str
    host: str
    port: int
    #: What Metadata tells clients to connect to.
    advertised_host: str
    advertised_port: int
    #: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
    security_protocol: str = "PLAINTEXT"


@dataclass(slots=True)
class Cluster:
    node_id: int
    cluster_id: str
    data_dir: Path
    #: Filled when the broker binds its listeners (``Broker.start``), in configured order.
    listeners: list[BoundListener] = field(default_factory=list)

    def endpoint(self, listener: str) -> BoundListener:
        """The listener a client connected through (the first one if unknown)."""
        for b in self.listeners:
            if b.name == listener:
                return b
        return self.listeners[0]
