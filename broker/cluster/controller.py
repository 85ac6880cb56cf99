"""The cluster-wide partition state that every node of one process shares: for each
partition its replicas, leader, in-sync replicas and leader epoch, as Kafka's controller
keeps them in the metadata log, and which nodes are stopped or fenced.

Replicas come from the topic catalogue (``placement.place`` chose them); leaders and ISRs
are kept in ``<log.dirs>/nodes/partitions.json`` whenever they change, so a restarted
process leads each partition from the replica that led it. Elections pick the first live
in-sync replica in replica order (Kafka's), or with ``unclean.leader.election.enable`` any
live replica; with neither the partition has no leader (-1) until an in-sync replica is
back. The replica manager (``replication.py``) applies what changes here to the logs.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from kafkalite.storage.fsutil import atomic_write

from .identity import Cluster

NO_LEADER = -1


class LeaderAndIsr(NamedTuple):
    """A partition's state (a tuple: one is built per partition on first use, and a
    frozen dataclass costs three times as much to build)."""

    replicas: tuple[int, ...]
    leader: int
    isr: tuple[int, ...]
    leader_epoch: int


class Controller:
    """Who leads what, for the nodes of one process (``ClusterView``)."""

    def __init__(self, members: Sequence[Cluster],
                 state_partition: Callable[[int, str], tuple[str, int]],
                 replicas: Callable[[str, int], tuple[int, ...] | None],
                 leader_epoch: Callable[[str, int], int], store: Path | None = None) -> None:
        """``state_partition``: a coordinator key's state partition (key type 0, a
        group: ``__consumer_offsets``; 1, a transactional id: ``__transaction_state``);
        ``replicas``: a partition's replicas from the catalogue (None: no such topic
        yet, whose placement is not kept until it exists); ``leader_epoch``: its
        leader log's epoch, where a partition's state starts."""
        self._state_partition = state_partition
        self._members = tuple(sorted(members, key=lambda m: m.node_id))
        self._ids = tuple(m.node_id for m in self._members)
        self._replicas = replicas
        self._epoch = leader_epoch
        self._states: dict[tuple[str, int], LeaderAndIsr] = {}
        self._store = store
        self._saved: dict[str, tuple[int, list[int]]] = {}
        if store is not None and store.exists():
            try:
                doc = json.loads(store.read_text())
                self._saved = {k: (int(v[0]), [int(x) for x in v[1]]) for k, v in doc.items()}
            except (ValueError, TypeError, IndexError, KeyError):
                self._saved = {}
        #: Nodes that are stopped, and nodes the controller has fenced (cut off).
        self.stopped: set[int] = set()
        self.fenced: set[int] = set()
        #: Stopped or fenced nodes whose registration UnregisterBroker dropped; a node
        #: registers again when it starts or its fence is lifted.
        self.unregistered: set[int] = set()
        #: Told of a node whose registration was dropped (the replica manager fences a
        #: crashed one at once, as Kafka's controller moves its leaderships and ISRs).
        self.on_unregister: list[Callable[[int], None]] = []
        #: Told of a topic one of whose partitions changed replicas, leader, ISR or epoch
        #: (the kept Metadata entries forget it).
        self.on_change: list[Callable[[str], None]] = []

    @property
    def members(self) -> Sequence[Cluster]:
        return self._members

    @property
    def node_ids(self) -> tuple[int, ...]:
        return self._ids

    @property
    def controller_id(self) -> int:
        # KRaft brokers tell clients a live broker's id here; the lowest live id.
        for i in self._ids:
            if self.alive(i):
                return i
        return self._ids[0]

    def alive(self, node: int) -> bool:
        """Registered and unfenced: may lead and be in an ISR."""
        return node not in self.stopped and node not in self.fenced

    def all_alive(self) -> bool:
        """No node stopped or fenced (a partition then has no offline replica)."""
        return not self.stopped and not self.fenced

    def liveness(self) -> tuple[frozenset[int], frozenset[int]]:
        """The stopped and the fenced nodes: what a partition's offline replicas follow."""
        return frozenset(self.stopped), frozenset(self.fenced)

    def registered(self, node: int) -> bool:
        return node in self._ids and node not in self.unregistered

    def is_fenced(self, node: int) -> bool:
        """Fenced as Kafka's controller fences: at a controlled stop's end, or when the
        session timeout passes after a crash (a crashed node stays unfenced till then)."""
        return node in self.fenced

    def unregister(self, node: int) -> bool:
        if not self.registered(node):
            return False
        # A running node's registration comes back with its next heartbeat, as in Kafka.
        if not self.alive(node):
            self.unregistered.add(node)
            for listener in self.on_unregister:
                listener(node)
        return True

    def leader(self, topic: str, partition: int) -> int:
        return self.state(topic, partition).leader

    def coordinator(self, key_type: int, key: str) -> int:
        return self.leader(*self._state_partition(key_type, key))

    def state(self, topic: str, partition: int) -> LeaderAndIsr:
        key = (topic, partition)
        found = self._states.get(key)
        if found is None:
            replicas = self._replicas(topic, partition)
            if replicas is None:
                # A topic not created yet (FindCoordinator before the internal topic):
                # where its first replica will go.
                lead = self._ids[(zlib.crc32(topic.encode()) + partition) % len(self._ids)]
                return LeaderAndIsr((lead,), lead, (lead,), 0)
            # A new partition's replicas on stopped or fenced nodes join the ISR once
            # they have caught up, as in Kafka.
            isr = sorted(r for r in replicas if self.alive(r))
            leader = next((r for r in replicas if r in isr), NO_LEADER)
            saved = self._saved.get(f"{topic}\t{partition}")
            if saved is not None and saved[0] in replicas:
                leader = saved[0]
                isr = [r for r in saved[1] if r in replicas] or [leader]
            found = self._states[key] = LeaderAndIsr(
                replicas, leader, tuple(isr), self._epoch(topic, partition))
        return found

    def placement(self, topic: str, partition: int) -> LeaderAndIsr:
        return self.state(topic, partition)

    def states(self) -> list[tuple[str, int, LeaderAndIsr]]:
        return [(t, p, s) for (t, p), s in self._states.items()]

    def set_replicas(self, topic: str, partition: int, replicas: Iterable[int]) -> LeaderAndIsr:
        """A reassignment's replica list (the catalogue keeps it)."""
        st = self.state(topic, partition)._replace(replicas=tuple(replicas))
        self._put(topic, partition, st)
        return st

    def set_isr(self, topic: str, partition: int, isr: Iterable[int]) -> LeaderAndIsr:
        st = self.state(topic, partition)._replace(isr=tuple(sorted(set(isr))))
        self._put(topic, partition, st)
        return st

    def elect(self, topic: str, partition: int, unclean: bool,
              prefer: int | None = None) -> LeaderAndIsr:
        """A new leader (and epoch) from the live in-sync replicas, ``prefer`` first when
        it is one of them; with ``unclean``, any live replica when no in-sync one is."""
        st = self.state(topic, partition)
        isr = [r for r in st.isr if self.alive(r)]
        order = ([prefer] if prefer is not None else []) + list(st.replicas)
        leader = next((r for r in order if r in isr), NO_LEADER)
        if leader == NO_LEADER and unclean:
            leader = next((r for r in st.replicas if self.alive(r)), NO_LEADER)
            if leader != NO_LEADER:
                isr = [leader]
        if leader == NO_LEADER:
            # KRaft keeps the last in-sync replica so that it can lead when it is back.
            new = st._replace(leader=NO_LEADER, leader_epoch=st.leader_epoch + 1,
                          isr=st.isr if not isr else tuple(isr))
        else:
            new = LeaderAndIsr(st.replicas, leader, tuple(sorted(set(isr))),
                                 st.leader_epoch + 1)
        self._put(topic, partition, new)
        return new

    def _put(self, topic: str, partition: int, st: LeaderAndIsr) -> None:
        self._states[(topic, partition)] = st
        self._saved[f"{topic}\t{partition}"] = (st.leader, list(st.isr))
        if self._store is not None:
            atomic_write(self._store, json.dumps(self._saved, sort_keys=True).encode())
        for fn in self.on_change:
            fn(topic)

    def forget(self, topic: str) -> None:
        """A deleted topic: a topic created again under its name is placed anew."""
        for key in [k for k in self._states if k[0] == topic]:
            del self._states[key]
        for name in [k for k in self._saved if k.split("\t")[0] == topic]:
            del self._saved[name]
        for fn in self.on_change:
            fn(topic)
