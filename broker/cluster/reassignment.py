"""Partition reassignments (AlterPartitionReassignments, ListPartitionReassignments), as
Kafka's controller runs them: the partition's replicas become the union of the current
and the target ones, the added replicas catch up, and once every target replica is in
the ISR the replicas become the target, the ISR loses the removed ones, a leader that is
no longer a replica hands over, and the removed replicas' logs are deleted. A target
replica on a stopped or cut-off node keeps the reassignment going until it is back in
sync; cancelling one (null replicas) reassigns back to where it began.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from .replication import ReplicaManager

log = structlog.get_logger("kafkalite.replication")


@dataclass(frozen=True, slots=True)
class Ongoing:
    topic: str
    partition: int
    #: The replicas now (current and target), the target's added and removed ones.
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


class Reassignments:
    """The reassignments in progress, driven through the replica manager."""

    def __init__(self, manager: ReplicaManager) -> None:
        self.manager = manager
        #: (topic, partition) -> (target replicas, the replicas it began with).
        self._ongoing: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self._scheduled = False
        manager.on_isr_change.append(self.schedule)

    def schedule(self) -> None:
        """``advance`` once the current append or election is done (an ISR grew)."""
        if not self._ongoing or self._scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.advance()
            return
        self._scheduled = True

        def run() -> None:
            self._scheduled = False
            self.advance()

        loop.call_soon(run)

    def reassign(self, topic: str, partition: int, target: list[int] | None) -> ErrorCode:
        """Start (or, with None, cancel) moving a partition to ``target``; the replicas
        are known to be valid node ids without duplicates."""
        key = (topic, partition)
        m = self.manager
        st = m.controller.state(topic, partition)
        if target is None:
            found = self._ongoing.get(key)
            if found is None:
                return ErrorCode.no_reassignment_in_progress
            wanted = found[1]
        else:
            wanted = tuple(target)
        original = self._ongoing[key][1] if key in self._ongoing else st.replicas
        union = tuple(dict.fromkeys([*st.replicas, *wanted]))
        m.controller.set_replicas(topic, partition, union)
        self._ongoing[key] = (wanted, original)
        m.add_replicas(topic, partition)
        log.info("replica.reassigning", topic=topic, partition=partition,
                 target=list(wanted), replicas=list(union))
        self.advance()
        return NO_ERROR

    def advance(self) -> None:
        """Finish every reassignment whose target replicas are all in sync."""
        m = self.manager
        for (topic, partition), (target, _original) in list(self._ongoing.items()):
            st = m.controller.state(topic, partition)
            if not all(n in st.isr for n in target):
                continue
            del self._ongoing[(topic, partition)]
            m.controller.set_isr(topic, partition, [n for n in st.isr if n in target])
            m.controller.set_replicas(topic, partition, target)
            m.storage.catalog.set_replicas(topic, partition, list(target))
            if st.leader not in target:
                m.elect(topic, partition)
            m.drop_replicas(topic, partition)
            log.info("replica.reassigned", topic=topic, partition=partition,
                     replicas=list(target))

    def ongoing(self) -> list[Ongoing]:
        out = []
        for (topic, partition), (target, original) in self._ongoing.items():
            st = self.manager.controller.state(topic, partition)
            out.append(Ongoing(topic, partition, st.replicas,
                               tuple(n for n in target if n not in original),
                               tuple(n for n in original if n not in target)))
        return out
