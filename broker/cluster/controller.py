"""The cluster-wide partition state that every node of one process shares: for each
partition its replicas, leader, in-sync replicas and leader epoch, as Kafka's controller
keeps them in the metadata log.

Placement follows Kafka's for replication factor 1 without racks: partition ``p`` of a
topic goes to the node at ``(start + p) mod N`` of the nodes in id order, which spreads
leaders round robin. Kafka picks ``start`` at random and remembers it in the metadata log;
here it is derived from the topic name (CRC-32), so the placement needs no store of its
own and is the same after a restart. Replication is not there yet: every partition has one
replica, its leader, and the leader epoch is the log's.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .identity import Cluster


@dataclass(frozen=True, slots=True)
class PartitionState:
    replicas: tuple[int, ...]
    leader: int
    isr: tuple[int, ...]
    leader_epoch: int


class Controller:
    """Who leads what, for the nodes of one process (``ClusterView``)."""

    def __init__(self, members: Sequence[Cluster],
                 state_partition: Callable[[int, str], tuple[str, int]],
                 leader_epoch: Callable[[str, int], int] | None = None) -> None:
        """``state_partition``: a coordinator key's state partition (key type 0, a
        group: ``__consumer_offsets``; 1, a transactional id: ``__transaction_state``)."""
        self._state_partition = state_partition
        self._members = tuple(sorted(members, key=lambda m: m.node_id))
        self._ids = tuple(m.node_id for m in self._members)
        self._epoch = leader_epoch or (lambda _t, _p: 0)
        self._leaders: dict[tuple[str, int], int] = {}

    @property
    def members(self) -> Sequence[Cluster]:
        return self._members

    @property
    def node_ids(self) -> tuple[int, ...]:
        return self._ids

    @property
    def controller_id(self) -> int:
        # KRaft brokers tell clients a live broker's id here; the lowest id is stable.
        return self._ids[0]

    def leader(self, topic: str, partition: int) -> int:
        key = (topic, partition)
        found = self._leaders.get(key)
        if found is None:
            found = self._leaders[key] = self._ids[
                (zlib.crc32(topic.encode()) + partition) % len(self._ids)]
        return found

    def coordinator(self, key_type: int, key: str) -> int:
        return self.leader(*self._state_partition(key_type, key))

    def state(self, topic: str, partition: int) -> PartitionState:
        leader = self.leader(topic, partition)
        return PartitionState((leader,), leader, (leader,), self._epoch(topic, partition))

    def forget(self, topic: str) -> None:
        """A deleted topic: a topic created again under its name is placed anew."""
        for key in [k for k in self._leaders if k[0] == topic]:
            del self._leaders[key]
