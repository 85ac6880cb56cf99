"""Who this broker is and where it listens: what Metadata, FindCoordinator and
DescribeCluster tell clients."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kafkalite.protocol.errors import ErrorCode


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


class ClusterView(Protocol):
    """The cluster as every node of one process sees it (``controller.Controller``)."""

    @property
    def members(self) -> Sequence[Cluster]: ...

    @property
    def controller_id(self) -> int: ...

    def leader(self, topic: str, partition: int) -> int: ...

    def coordinator(self, key_type: int, key: str) -> int: ...

    def placement(self, topic: str, partition: int) -> Placement: ...

    def alive(self, node: int) -> bool: ...

    def all_alive(self) -> bool: ...

    def liveness(self) -> Hashable: ...

    def registered(self, node: int) -> bool: ...

    def is_fenced(self, node: int) -> bool: ...

    def unregister(self, node: int) -> bool: ...


class Elections(Protocol):
    """ElectLeaders across the nodes (``replication.ReplicaManager``)."""

    def elect_leader(self, topic: str, partition: int, unclean: bool) -> ErrorCode: ...


class Reassigning(Protocol):
    """A reassignment in progress (``reassignment.Ongoing``)."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def replicas(self) -> tuple[int, ...]: ...

    @property
    def adding(self) -> tuple[int, ...]: ...

    @property
    def removing(self) -> tuple[int, ...]: ...


class Reassigner(Protocol):
    """Partition reassignments across the nodes (``reassignment.Reassignments``)."""

    def reassign(self, topic: str, partition: int, target: list[int] | None) -> ErrorCode: ...

    def ongoing(self) -> Sequence[Reassigning]: ...


class Placement(Protocol):
    """A partition's replicas, leader and in-sync replicas (``controller.LeaderAndIsr``)."""

    @property
    def replicas(self) -> tuple[int, ...]: ...

    @property
    def leader(self) -> int: ...

    @property
    def isr(self) -> tuple[int, ...]: ...


@dataclass(slots=True)
class Cluster:
    node_id: int
    cluster_id: str
    data_dir: Path
    #: Filled when the broker binds its listeners (``Broker.start``), in configured order.
    listeners: list[BoundListener] = field(default_factory=list)
    #: ``broker.rack``: what Metadata and DescribeCluster show (None: unset).
    rack: str | None = None
    #: The other nodes and who leads what, when the process runs several nodes; None
    #: for one node, which leads every partition.
    view: ClusterView | None = None
    #: Who runs leader elections and reassignments, when the process runs several nodes.
    elections: Elections | None = None
    reassignments: Reassigner | None = None

    def endpoint(self, listener: str) -> BoundListener:
        """The listener a client connected through (the first one if unknown)."""
        for b in self.listeners:
            if b.name == listener:
                return b
        return self.listeners[0]

    def members(self) -> Sequence[Cluster]:
        """Every node of the cluster, this one included, by node id."""
        return (self,) if self.view is None else self.view.members

    @property
    def controller_id(self) -> int:
        return self.node_id if self.view is None else self.view.controller_id

    def leader(self, topic: str, partition: int) -> int:
        """The node id leading ``topic``-``partition``."""
        return self.node_id if self.view is None else self.view.leader(topic, partition)

    def coordinator(self, key_type: int, key: str) -> int:
        """The node id of the coordinator for a FindCoordinator key (0: group, 1:
        transaction): the leader of the key's state partition."""
        return self.node_id if self.view is None else self.view.coordinator(key_type, key)

    def replicas(self, topic: str, partition: int) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
        """(leader, replicas, in-sync replicas) of ``topic``-``partition``."""
        if self.view is None:
            me = (self.node_id,)
            return self.node_id, me, me
        st = self.view.placement(topic, partition)
        return st.leader, st.replicas, st.isr

    def offline(self, replicas: tuple[int, ...]) -> tuple[int, ...]:
        """Those of ``replicas`` on nodes that are stopped or fenced."""
        view = self.view
        if view is None or view.all_alive():
            return ()
        return tuple(r for r in replicas if not view.alive(r))

    def liveness(self) -> Hashable:
        """Changes whenever a node stops, starts, is fenced or unfenced (one node: never)."""
        return () if self.view is None else self.view.liveness()

    def registered(self, node_id: int) -> bool:
        """Whether ``node_id`` has a broker registration (UnregisterBroker drops one)."""
        return node_id == self.node_id if self.view is None else self.view.registered(node_id)

    def fenced(self, node_id: int) -> bool:
        """Whether ``node_id``'s registration is fenced (a controlled stop, or the session
        timeout after a crash): Metadata leaves it out, DescribeCluster v2 lists it only
        when asked, with ``is_fenced``."""
        return False if self.view is None else self.view.is_fenced(node_id)

    def unregister(self, node_id: int) -> bool:
        """UnregisterBroker: False when ``node_id`` has no registration."""
        if self.view is None:
            # One running node: it registers again at once, as a live Kafka broker does.
            return node_id == self.node_id
        return self.view.unregister(node_id)

    def member(self, node_id: int) -> Cluster | None:
        for m in self.members():
            if m.node_id == node_id:
                return m
        return None
