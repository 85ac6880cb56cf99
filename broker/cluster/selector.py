"""Fetch from followers (KIP-392): which replica a consumer should read a partition from.

``replica.selector.class`` names Kafka's selector: unset (Kafka's default) or
``LeaderSelector``, every consumer reads from the leader;
``RackAwareReplicaSelector``, a consumer whose Fetch (v11+) carries a ``rack_id`` is sent
to a replica in its rack. The leader answers such a fetch with ``preferred_read_replica``
and no records, as Kafka's ``ReplicaManager.findPreferredReadReplica`` does: the
candidates are the leader and the followers that are in the ISR, live, and hold the
fetch offset (log start <= offset <= log end); the selector picks among them, and the
leader itself is never sent as the preferred replica.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..config.properties import (
    LEADER_SELECTOR,
    RACK_AWARE_SELECTOR,
    Config,
    validate_replica_selector,
)


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One candidate replica (Kafka's ``ReplicaView``)."""

    node_id: int
    rack: str | None
    log_end_offset: int
    #: How long ago (ms) the replica was last at the leader's log end (0: the leader).
    time_since_caught_up_ms: int


class ReplicaSelector(Protocol):
    def select(self, client_rack: str, leader: ReplicaView,
               replicas: Sequence[ReplicaView]) -> ReplicaView: ...


class LeaderSelector:
    """Kafka's ``LeaderSelector``: always the leader."""

    def select(self, client_rack: str, leader: ReplicaView,
               replicas: Sequence[ReplicaView]) -> ReplicaView:
        return leader


class RackAwareReplicaSelector:
    """Kafka's ``RackAwareReplicaSelector``: the leader when the client names no rack, no
    candidate is in its rack, or the leader is; else the most caught-up candidate in the
    client's rack (highest log end, then the most recently caught up)."""

    def select(self, client_rack: str, leader: ReplicaView,
               replicas: Sequence[ReplicaView]) -> ReplicaView:
        if not client_rack:
            return leader
        same = [r for r in replicas if r.rack == client_rack]
        if not same or any(r.node_id == leader.node_id for r in same):
            return leader
        return max(same, key=lambda r: (r.log_end_offset, -r.time_since_caught_up_ms,
                                        -r.node_id))


def selector_for(config: Config) -> ReplicaSelector | None:
    """The configured selector; None when unset (every fetch is the leader's). An unknown
    class stops the broker with one line naming the setting."""
    validate_replica_selector(config)
    name = (config.raw_or_none("replica.selector.class") or "").strip()
    if name == RACK_AWARE_SELECTOR:
        return RackAwareReplicaSelector()
    return LeaderSelector() if name == LEADER_SELECTOR else None
