"""Fetch on one node of several (KIP-392): which replica log a fetch reads, as Kafka's
``ReplicaManager`` decides it.

- A partition this node leads is read from the leader's log. With a replica selector
  configured, a consumer's fetch (v11+, which carries client metadata) may instead be
  answered with a preferred read replica (``selector.py``).
- A consumer's v11+ fetch for a partition this node follows is read from this node's
  replica, up to the high watermark the follower knows (``replication.py`` keeps it);
  offsets past its log end are OFFSET_OUT_OF_RANGE, and the client goes back to the
  leader, as Kafka's clients do. Kafka's followers serve such fetches whether or not a
  selector is configured; only a fenced or stopped node does not.
- Anything else (older versions, a broker's fetch, a partition not hosted here) is
  NOT_LEADER_OR_FOLLOWER.

The leader epoch a fetch names is checked against the partition's current epoch (the
leader's log), which followers learn from the controller in Kafka.
"""

from __future__ import annotations

from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.storage.log import PartitionLog

from ..handlers.data.leader_epochs import NO_EPOCH
from ..topic_store import Storage
from .controller import LeaderAndIsr
from .identity import Cluster
from .replication import ReplicaManager
from .selector import ReplicaSelector, ReplicaView

E_NONE = NO_ERROR.value
E_NOT_LEADER = ErrorCode.not_leader_or_follower.value
E_UNKNOWN = ErrorCode.unknown_topic_or_partition.value
E_FENCED_EPOCH = ErrorCode.fenced_leader_epoch.value
E_UNKNOWN_EPOCH = ErrorCode.unknown_leader_epoch.value


def _epoch_error(current: int, asked: int) -> int:
    if asked == NO_EPOCH or asked == current:
        return E_NONE
    return E_FENCED_EPOCH if current > asked else E_UNKNOWN_EPOCH


class FetchReplicas:
    """``fetch.Replicas`` for one node."""

    def __init__(self, node: Cluster, manager: ReplicaManager, storage: Storage,
                 selector: ReplicaSelector | None) -> None:
        self.node = node
        self.node_id = node.node_id
        self.manager = manager
        self.storage = storage
        self.selector = selector

    def hosts(self, topic: str, partition: int, consumer: bool) -> bool:
        """Whether a fetch of that kind may read the partition here."""
        st = self.manager.controller.state(topic, partition)
        if st.leader == self.node_id:
            return True
        return consumer and self._follower_log(topic, partition, st) is not None

    def _follower_log(self, topic: str, partition: int,
                      st: LeaderAndIsr) -> PartitionLog | None:
        me = self.node_id
        if me not in st.replicas or not self.manager.controller.alive(me):
            return None
        rs = self.manager.sets.get((topic, partition))
        plog = rs.logs.get(me) if rs is not None else None
        return None if plog is None or plog.closed else plog

    def resolve(self, topic: str, partition: int, offset: int, leader_epoch: int,
                consumer: bool, rack: str) -> tuple[PartitionLog | None, int, int]:
        st = self.manager.controller.state(topic, partition)
        lead = self.storage.logs.get(topic, partition)
        if lead is None:
            return None, E_UNKNOWN, -1
        if st.leader == self.node_id:
            err = _epoch_error(lead.leader_epoch, leader_epoch)
            if err != E_NONE:
                return None, err, -1
            preferred = -1
            if consumer and self.selector is not None:
                preferred = self.preferred(topic, partition, st, lead, offset, rack)
            return lead, E_NONE, preferred
        plog = self._follower_log(topic, partition, st) if consumer else None
        if plog is None:
            return None, E_NOT_LEADER, -1
        err = _epoch_error(lead.leader_epoch, leader_epoch)
        return (plog, E_NONE, -1) if err == E_NONE else (None, err, -1)

    def preferred(self, topic: str, partition: int, st: LeaderAndIsr, lead: PartitionLog,
                  offset: int, rack: str) -> int:
        """Kafka's ``findPreferredReadReplica``: the selector's choice among the leader
        and the live in-sync followers holding ``offset``; -1 for the leader."""
        assert self.selector is not None
        rs = self.manager.sets.get((topic, partition))
        if rs is None:
            return -1
        controller = self.manager.controller
        now = self.manager.now()
        leader = ReplicaView(self.node_id, self.node.rack, lead.log_end_offset, 0)
        candidates = [leader]
        for n in st.isr:
            plog = rs.logs.get(n)
            if n == self.node_id or plog is None or plog.closed or not controller.alive(n):
                continue
            if not plog.log_start_offset <= offset <= plog.log_end_offset:
                continue
            member = self.node.member(n)
            candidates.append(ReplicaView(n, member.rack if member is not None else None,
                                          plog.log_end_offset,
                                          max(now - rs.caught_up.get(n, now), 0)))
        chosen = self.selector.select(rack, leader, candidates)
        return -1 if chosen.node_id == self.node_id else chosen.node_id
