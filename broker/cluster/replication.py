"""Replicas of the partitions of a process running several nodes: each replica a
``PartitionLog`` of its own under its node's directory, followers filled from the
leader's log in-process, the high watermark moved by the in-sync replicas, the ISR shrunk
after ``replica.lag.time.max.ms`` and grown when a follower has caught up, and the logs
changed as the controller's elections say (truncation to the new leader's epoch
boundary, the group and transaction coordinators unloaded and loaded from the new
leader's replica).

A follower that replicates copies the leader's new batches right after each append
(``ReplicaSet.__call__``, the leader log's ``replicator``), before the fetch watchers
run, so with every follower live the high watermark moves with the append. A follower
that does not replicate (its node isolated) falls behind; the lag check drops it from the
ISR on the broker clock. A partition with one replica has no ``ReplicaSet`` at all: its
append path is the one-node path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import structlog

from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.storage.catalog import TopicInfo
from kafkalite.storage.errors import OffsetOutOfRangeError
from kafkalite.storage.log import PartitionLog

from ..topic_store import Storage
from .controller import NO_LEADER, Controller, LeaderAndIsr
from .nodes import replica_dir

log = structlog.get_logger("kafkalite.replication")

#: How much one copy step reads from the leader.
_COPY_BYTES = 8 << 20


class ReplicaSet:
    """One partition's open replicas; the leader log calls it after each append."""

    __slots__ = ("caught_up", "logs", "manager", "partition", "topic", "waiters")

    def __init__(self, manager: ReplicaManager, topic: str, partition: int) -> None:
        self.manager = manager
        self.topic = topic
        self.partition = partition
        #: node id -> its replica's log (open ones only: a stopped node's are closed).
        self.logs: dict[int, PartitionLog] = {}
        #: node id -> when (broker clock, ms) its replica last reached the leader's end.
        self.caught_up: dict[int, int] = {}
        #: acks=all appends waiting for the high watermark: (offset, future).
        self.waiters: list[tuple[int, asyncio.Future[ErrorCode]]] = []

    @property
    def state(self) -> LeaderAndIsr:
        return self.manager.controller.state(self.topic, self.partition)

    @property
    def in_sync(self) -> int:
        return len(self.state.isr)

    def __call__(self) -> None:
        self.manager.replicate(self)

    def acked(self, offset: int, timeout_ms: int) -> asyncio.Future[ErrorCode]:
        """Resolves when the high watermark passes ``offset`` (NONE, or
        NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR is then below
        min.insync.replicas) or after ``timeout_ms`` (REQUEST_TIMED_OUT)."""
        fut: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self.waiters.append((offset, fut))
        def timed_out() -> None:
            if not fut.done():
                fut.set_result(ErrorCode.request_timed_out)

        handle = asyncio.get_running_loop().call_later(timeout_ms / 1000, timed_out)
        fut.add_done_callback(lambda _f: handle.cancel())
        self.release()
        return fut

    def release(self) -> None:
        """Answer the acks=all waiters the high watermark has passed."""
        if not self.waiters:
            return
        lead = self.logs.get(self.state.leader)
        hw = lead.high_watermark if lead is not None else -1
        need = lead.config.min_insync_replicas if lead is not None else 1
        keep = []
        for offset, fut in self.waiters:
            if fut.done():
                continue
            if lead is None:
                fut.set_result(ErrorCode.not_leader_or_follower)
            elif hw > offset:
                fut.set_result(ErrorCode.not_enough_replicas_after_append
                               if self.in_sync < need else NO_ERROR)
            else:
                keep.append((offset, fut))
        self.waiters = keep


class ReplicaManager:
    """Every replica of the process's multi-replica partitions, and what elections do."""

    def __init__(self, controller: Controller, storage: Storage, root: Path,
                 now: Callable[[], int],
                 coordinators: Callable[[], dict[str, Callable[[int, bool], None]]]) -> None:
        """``coordinators``: internal topic name -> (partition, load?) that loads or
        unloads a partition of its coordinator (the runtime's)."""
        self.controller = controller
        self.storage = storage
        self.root = root
        self.now = now
        self.coordinators = coordinators
        self.sets: dict[tuple[str, int], ReplicaSet] = {}
        #: Nodes cut off from the others: they neither replicate nor are replicated to.
        self.isolated: set[int] = set()
        #: Node -> when (broker clock) it was cut off or crashed; the controller fences it
        #: after broker.session.timeout.ms.
        self.fence_due: dict[int, int] = {}
        self.started = False
        #: Called after the ISRs may have grown (a reassignment finishes then).
        self.on_isr_change: list[Callable[[], None]] = []
        controller.on_unregister.append(self._unregistered)

    # --- settings --------------------------------------------------------------------

    def _int(self, name: str) -> int:
        return self.storage.config.int(name)

    def _unclean(self, topic: str) -> bool:
        return self.storage.topic_configs.value(topic, "unclean.leader.election.enable") == "true"

    def status(self, node: int) -> str:
        """running, stopped, fenced or isolated."""
        if node in self.controller.stopped:
            return "stopped"
        if node in self.controller.fenced:
            return "fenced"
        return "isolated" if node in self.isolated else "running"

    def replicating(self, node: int) -> bool:
        return node not in self.controller.stopped and node not in self.isolated

    # --- topics ------------------------------------------------------------------------

    def on_topic_event(self, event: str, info: TopicInfo) -> None:
        """Catalogue listener, after storage's (which opened the leaders' logs)."""
        if event == "deleted":
            for key in [k for k in self.sets if k[0] == info.name]:
                for plog in self.sets.pop(key).logs.values():
                    plog.delete()
            return
        if not self.started:
            return
        for p in range(info.partitions):
            rs = self.sets.get((info.name, p))
            if rs is None:
                self._open(info.name, p)
            else:
                cfg = self.storage.logs.config_for(info.name)
                for plog in rs.logs.values():
                    plog.config = cfg

    async def start(self) -> None:
        """After storage has opened the leaders' logs: open the followers' replicas."""
        self.started = True
        for info in self.storage.catalog:
            for p in range(info.partitions):
                self._open(info.name, p)

    async def stop(self) -> None:
        for rs in self.sets.values():
            for plog in rs.logs.values():
                if plog is not self.storage.logs.get(rs.topic, rs.partition):
                    plog.flush()
                    plog.close()
        self.sets.clear()
        self.started = False

    def _open(self, topic: str, partition: int) -> None:
        st = self.controller.state(topic, partition)
        if len(st.replicas) < 2:
            return
        rs = self.sets[(topic, partition)] = ReplicaSet(self, topic, partition)
        lead = self.storage.logs.get_or_create(topic, partition)
        holder = st.leader if st.leader >= 0 else st.replicas[0]
        rs.logs[holder] = lead
        for node in st.replicas:
            if node != holder and node not in self.controller.stopped:
                rs.logs[node] = self._replica_log(node, topic, partition)
        if st.leader >= 0:
            lead.replicator = rs
            lead.hw = min(plog.log_end_offset for plog in rs.logs.values())
            self._follow(rs)
        else:
            lead.lead = False

    def _replica_log(self, node: int, topic: str, partition: int) -> PartitionLog:
        logs = self.storage.logs
        return PartitionLog(replica_dir(self.root, node, topic, partition), topic, partition,
                            logs.config_for(topic), clock=logs.clock, lead=False)

    def add_replicas(self, topic: str, partition: int) -> None:
        """Open the replicas the partition's replica list gained, and catch them up."""
        st = self.controller.state(topic, partition)
        rs = self.sets.get((topic, partition))
        if rs is None:
            self._open(topic, partition)
            return
        for node in st.replicas:
            if node not in rs.logs and node not in self.controller.stopped:
                rs.logs[node] = self._replica_log(node, topic, partition)
        self._follow(rs)

    def drop_replicas(self, topic: str, partition: int) -> None:
        """Delete the replicas no longer in the partition's replica list."""
        st = self.controller.state(topic, partition)
        rs = self.sets.get((topic, partition))
        if rs is None:
            return
        for node in [n for n in rs.logs if n not in st.replicas]:
            plog = rs.logs.pop(node)
            rs.caught_up.pop(node, None)
            if plog is not self.storage.logs.get(topic, partition):
                plog.delete()

    # --- replication -------------------------------------------------------------------

    def replicate(self, rs: ReplicaSet) -> None:
        st = rs.state
        lead = rs.logs.get(st.leader)
        if lead is None or not self.replicating(st.leader):
            return
        now = self.now()
        end = lead.log_end_offset
        for node, plog in rs.logs.items():
            if node == st.leader or not self.replicating(node):
                continue
            if plog.log_end_offset < end:
                self._copy(rs, node, lead, plog)
            if plog.log_end_offset >= end:
                rs.caught_up[node] = now
        self._advance(rs, st, lead)

    def _copy(self, rs: ReplicaSet, node: int, lead: PartitionLog, plog: PartitionLog) -> None:
        try:
            for _ in range(10_000):
                if plog.log_end_offset >= lead.log_end_offset:
                    return
                data = lead.read(plog.log_end_offset, _COPY_BYTES)
                if not data:
                    return
                plog.append_as_follower(data)
        except OffsetOutOfRangeError:
            # Behind the leader's log start: start the replica again from there.
            log.warning("replica.reset", topic=rs.topic, partition=rs.partition, node=node)
            plog.delete()
            fresh = PartitionLog(plog.dir, rs.topic, rs.partition, plog.config,
                                 lead.log_start_offset, clock=plog.clock, lead=False)
            rs.logs[node] = fresh
            if lead.log_end_offset > fresh.log_end_offset:
                self._copy(rs, node, lead, fresh)

    def _advance(self, rs: ReplicaSet, st: LeaderAndIsr, lead: PartitionLog) -> None:
        """Grow the ISR with caught-up followers, then move the high watermark."""
        isr = set(st.isr)
        hw = lead.high_watermark
        grown = [n for n, plog in rs.logs.items()
                 if n not in isr and n in st.replicas and self.replicating(n)
                 and self.controller.alive(n) and plog.log_end_offset >= hw]
        if grown:
            st = self.controller.set_isr(rs.topic, rs.partition, isr | set(grown))
            log.info("replica.isr_expanded", topic=rs.topic, partition=rs.partition,
                     isr=list(st.isr))
            for fn in self.on_isr_change:
                fn()
        low = min((rs.logs[n].log_end_offset for n in st.isr if n in rs.logs),
                  default=lead.log_end_offset)
        if lead.hw is None or low > lead.hw:
            lead.hw = low
        self._tell_followers(rs, st, lead)
        rs.release()

    def _tell_followers(self, rs: ReplicaSet, st: LeaderAndIsr, lead: PartitionLog) -> None:
        """Each replicating follower learns the leader's high watermark, as a Kafka
        follower does from its fetch responses (capped at its own log end); consumers
        reading from it (KIP-392) read below that. A cut-off follower keeps what it knew."""
        hw = lead.high_watermark
        for node, plog in rs.logs.items():
            if node != st.leader and self.replicating(node):
                plog.hw = min(hw, plog.log_end_offset)

    def check_lag(self, now: int) -> None:
        """The leaders' ISR shrink (a scheduler task): a follower not at the leader's end
        for ``replica.lag.time.max.ms`` leaves the ISR; then the fences due."""
        lag = self._int("replica.lag.time.max.ms")
        for rs in list(self.sets.values()):
            st = rs.state
            lead = rs.logs.get(st.leader)
            if lead is None or not self.replicating(st.leader):
                continue
            out = []
            for node in st.isr:
                if node == st.leader:
                    continue
                plog = rs.logs.get(node)
                if plog is not None and plog.log_end_offset >= lead.log_end_offset:
                    rs.caught_up[node] = now
                elif now - rs.caught_up.get(node, now) > lag or plog is None:
                    out.append(node)
                else:
                    rs.caught_up.setdefault(node, now)
            if out:
                st = self.controller.set_isr(rs.topic, rs.partition,
                                             [n for n in st.isr if n not in out])
                log.info("replica.isr_shrunk", topic=rs.topic, partition=rs.partition,
                         isr=list(st.isr), removed=out)
                self._advance(rs, st, lead)
        session = self._int("broker.session.timeout.ms")
        for node, since in list(self.fence_due.items()):
            if now - since >= session:
                del self.fence_due[node]
                self.fence(node)

    # --- leadership ----------------------------------------------------------------------

    def _follow(self, rs: ReplicaSet) -> None:
        """Every replica but the leader's truncated to the leader's epoch boundary and
        caught up (Kafka's follower: OffsetForLeaderEpoch, truncate, fetch)."""
        st = rs.state
        lead = rs.logs.get(st.leader)
        if lead is None:
            return
        for node, plog in list(rs.logs.items()):
            if node == st.leader or not self.replicating(node):
                continue
            plog.lead = False
            plog.replicator = None
            plog.hw = min(lead.high_watermark, plog.log_end_offset)
            mine = plog.epochs.latest_epoch
            epoch, end = lead.epochs.end_offset_for(mine, lead.log_end_offset)
            cut = end if epoch >= 0 and end >= 0 else min(plog.log_end_offset,
                                                           lead.log_start_offset)
            if cut < plog.log_end_offset:
                log.info("replica.truncated", topic=rs.topic, partition=rs.partition,
                         node=node, offset=cut, dropped=plog.log_end_offset - cut)
                plog.truncate_to(cut)
                plog.hw = min(plog.hw, cut)
        self.replicate(rs)

    def elect(self, topic: str, partition: int, prefer: int | None = None,
              unclean: bool | None = None) -> LeaderAndIsr:
        """A new leader for the partition (controller), then its logs follow."""
        old = self.controller.state(topic, partition)
        use = self._unclean(topic) if unclean is None else unclean
        st = self.controller.elect(topic, partition, use, prefer)
        self._lead(topic, partition, old, st)
        return st

    def _lead(self, topic: str, partition: int, old: LeaderAndIsr,
              st: LeaderAndIsr) -> None:
        rs = self.sets.get((topic, partition))
        loader = self.coordinators().get(topic)
        log.info("replica.leader_elected", topic=topic, partition=partition,
                 leader=st.leader, epoch=st.leader_epoch, isr=list(st.isr),
                 previous=old.leader)
        if loader is not None and old.leader != NO_LEADER:
            loader(partition, False)
        if rs is None:
            # One replica: the same log, in a new epoch when it leads again.
            plog = self.storage.logs.get(topic, partition)
            if st.leader != NO_LEADER and plog is not None:
                plog.become_leader(max(st.leader_epoch, plog.leader_epoch + 1))
                if loader is not None:
                    loader(partition, True)
            return
        prev = rs.logs.get(old.leader)
        if prev is not None:
            prev.replicator = None
            prev.hw = None
            prev.lead = False
        for _offset, fut in rs.waiters:
            if not fut.done():
                fut.set_result(ErrorCode.not_leader_or_follower)
        rs.waiters.clear()
        lead = rs.logs.get(st.leader)
        if lead is None:
            return
        lead.lead = True
        # Every election a new epoch, above any a replica has seen.
        lead.become_leader(max(st.leader_epoch,
                               max(lg.leader_epoch for lg in rs.logs.values()) + 1))
        lead.hw = min((rs.logs[n].log_end_offset for n in st.isr if n in rs.logs),
                      default=lead.log_end_offset)
        if prev is not None and prev is not lead:
            lead.watchers |= prev.watchers
            prev.watchers.clear()
        self.storage.logs.logs[(topic, partition)] = lead
        lead.replicator = rs
        self._follow(rs)
        if loader is not None:
            loader(partition, True)

    def elect_leader(self, topic: str, partition: int, unclean: bool) -> ErrorCode:
        """ElectLeaders for one partition, as Kafka's controller answers it: preferred
        (``unclean`` False) makes the first replica the leader when it is live and in
        sync; unclean elects only where there is no leader, from the live in-sync
        replicas first, then any live one."""
        st = self.controller.state(topic, partition)
        if not unclean:
            preferred = st.replicas[0]
            if st.leader == preferred:
                return ErrorCode.election_not_needed
            if preferred not in st.isr or not self.controller.alive(preferred):
                return ErrorCode.preferred_leader_not_available
            self.elect(topic, partition, prefer=preferred, unclean=False)
            return NO_ERROR
        if st.leader != NO_LEADER and self.controller.alive(st.leader):
            return ErrorCode.election_not_needed
        new = self.elect(topic, partition, unclean=True)
        return (NO_ERROR if new.leader != NO_LEADER
                else ErrorCode.eligible_leaders_not_available)

    def rebalance_leaders(self) -> int:
        """``auto.leader.rebalance.enable``: every partition whose preferred replica is
        live and in sync but does not lead gets it as leader again (KRaft's controller
        balancing leaders each ``leader.imbalance.check.interval.seconds``); how many
        moved."""
        moved = 0
        for t, p, st in self.controller.states():
            if st.leader != st.replicas[0] and self.replicating(st.replicas[0]):
                moved += self.elect_leader(t, p, unclean=False) is NO_ERROR
        return moved

    def leaderless(self, node: int) -> list[tuple[str, int]]:
        return [(t, p) for t, p, st in self.controller.states()
                if st.leader == NO_LEADER and node in st.replicas]

    # --- nodes -------------------------------------------------------------------------

    def _move_off(self, node: int, controlled: bool) -> None:
        """Leadership leaves ``node``; a controlled stop also leaves every ISR."""
        for t, p, st in self.controller.states():
            if node not in st.replicas:
                continue
            if st.leader == node:
                self.elect(t, p)
            elif controlled and node in st.isr and len(st.isr) > 1:
                st = self.controller.set_isr(t, p, [n for n in st.isr if n != node])
                rs = self.sets.get((t, p))
                lead = rs.logs.get(st.leader) if rs is not None else None
                if rs is not None and lead is not None:
                    self._advance(rs, st, lead)

    def stop_node(self, node: int, controlled: bool = True) -> None:
        """The node stops: with ``controlled`` its leadership and ISR places move now (a
        controlled shutdown), else when the controller fences it (the session timeout).
        Its replicas close."""
        self.controller.stopped.add(node)
        if controlled:
            self._move_off(node, True)
            # A controlled shutdown ends with the controller fencing the broker.
            self.controller.fenced.add(node)
        else:
            self.fence_due[node] = self.now()
        for (t, p), rs in self.sets.items():
            plog = rs.logs.get(node)
            # The log the handlers and storage use stays open (a partition left without
            # a leader keeps it until a replica leads again); nothing writes to it.
            if plog is None or rs.state.leader == node or plog is self.storage.logs.get(t, p):
                continue
            del rs.logs[node]
            plog.flush()
            plog.close()

    def start_node(self, node: int) -> None:
        """The node is back: its replicas recover from their logs, truncate to their
        leaders' epoch boundaries, catch up and rejoin the ISR; leaderless partitions it
        was in sync for get it as leader."""
        self.controller.stopped.discard(node)
        self.controller.fenced.discard(node)
        self.controller.unregistered.discard(node)
        self.fence_due.pop(node, None)
        for (t, p), rs in self.sets.items():
            st = rs.state
            if node not in st.replicas:
                continue
            plog = rs.logs.get(node)
            if plog is None or plog.closed:
                rs.logs[node] = self._replica_log(node, t, p)
        self._rejoin(node)

    def _rejoin(self, node: int) -> None:
        # Partitions left without a leader whose last in-sync replica this is (those of
        # one replica too) get it as leader; the others' replicas here catch up.
        for t, p, st in self.controller.states():
            if st.leader == NO_LEADER and node in st.isr:
                self.elect(t, p, prefer=node)
        for rs in list(self.sets.values()):
            st = rs.state
            if node in st.replicas and st.leader != node:
                self._follow(rs)

    def isolate_node(self, node: int) -> None:
        """Cut off: the node neither replicates nor is replicated to; the ISRs it is in
        shrink after replica.lag.time.max.ms, and the controller fences it (leadership
        moves) after broker.session.timeout.ms."""
        self.isolated.add(node)
        self.fence_due[node] = self.now()

    def heal_node(self, node: int) -> None:
        self.isolated.discard(node)
        self.fence_due.pop(node, None)
        self.controller.fenced.discard(node)
        self.controller.unregistered.discard(node)
        self._rejoin(node)

    def _unregistered(self, node: int) -> None:
        """A crashed node unregistered before its session timed out: fenced now, its
        leaderships and ISR places moved (Kafka's controller does so as it removes the
        registration)."""
        if self.fence_due.pop(node, None) is not None:
            self.fence(node)

    def fence(self, node: int) -> None:
        self.controller.fenced.add(node)
        log.info("broker.fenced", node_id=node)
        for t, p, st in self.controller.states():
            if node in st.isr and st.leader != node and len(st.isr) > 1:
                self.controller.set_isr(t, p, [n for n in st.isr if n != node])
        self._move_off(node, False)
