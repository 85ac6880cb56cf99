"""Pending transactional offsets: what TxnOffsetCommit wrote for each producer and no
marker has ended yet (Kafka's ``OffsetMetadataManager.pendingTransactionalOffsets`` and
``openTransactionsByGroup``). Pure: changed only by the replay of records and markers
(``offsets.transactional``)."""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from kafkalite.protocol import consumer_offsets as co

from .store import TopicPartition

log = structlog.get_logger("kafkalite.offsets")

#: (group, topic, partition)
OffsetKey = tuple[str, str, int]


@dataclass(slots=True)
class PendingOffset:
    value: co.OffsetCommitValue
    #: The offset of its record in ``__consumer_offsets`` (Kafka's ``recordOffset``).
    record_offset: int
    #: An offset of the same partition was committed after this record was written: the
    #: transaction's COMMIT leaves that one in place.
    superseded: bool = False


class PendingTxnOffsets:
    """The pending offsets of every producer, per ``__consumer_offsets`` partition."""

    def __init__(self) -> None:
        #: (coordinator partition, producer id) -> its pending offsets.
        self.by_producer: dict[tuple[int, int], dict[OffsetKey, PendingOffset]] = {}
        #: group -> producer ids with a transaction that wrote offsets for it (Kafka's
        #: ``openTransactionsByGroup``).
        self.open_by_group: dict[str, set[int]] = {}
        #: (coordinator partition, producer id) -> the groups its transaction wrote for
        #: (also those whose pending offsets a tombstone has dropped since).
        self._groups: dict[tuple[int, int], set[str]] = {}

    def add(self, partition: int, producer_id: int, key: co.OffsetCommitKey,
            value: co.OffsetCommitValue, record_offset: int, superseded: bool = False) -> None:
        offsets = self.by_producer.get((partition, producer_id))
        if offsets is None:
            offsets = self.by_producer[(partition, producer_id)] = {}
        offsets[(key.group, key.topic, key.partition)] = PendingOffset(value, record_offset,
                                                                       superseded)
        self.open_by_group.setdefault(key.group, set()).add(producer_id)
        self._groups.setdefault((partition, producer_id), set()).add(key.group)

    def committed(self, partition: int, key: co.OffsetCommitKey,
                  value: co.OffsetCommitValue | None) -> None:
        """A plain offset commit record (or tombstone) of a group with open transactions
        was replayed: it is newer than every pending offset of its partition."""
        k = (key.group, key.topic, key.partition)
        emptied = []
        for pid in self.open_by_group.get(key.group, ()):
            offsets = self.by_producer.get((partition, pid))
            if offsets is None or k not in offsets:
                continue
            if value is not None:
                offsets[k].superseded = True
                continue
            del offsets[k]
            if not any(g == key.group for g, _t, _p in offsets):
                emptied.append(pid)
        # A tombstone that took a producer's last pending offset of the group: the group
        # is no longer in its transaction (what a reload of the log shows too).
        for pid in emptied:
            self._forget(partition, pid, key.group)

    def _forget(self, partition: int, producer_id: int, group: str) -> None:
        groups = self._groups.get((partition, producer_id))
        if groups is not None:
            groups.discard(group)
            if not groups:
                del self._groups[(partition, producer_id)]
                self.by_producer.pop((partition, producer_id), None)
        pids = self.open_by_group.get(group)
        if pids is not None:
            pids.discard(producer_id)
            if not pids:
                del self.open_by_group[group]

    def end(self, partition: int, producer_id: int, commit: bool
            ) -> list[tuple[co.OffsetCommitKey, co.OffsetCommitValue]]:
        """The producer's transaction ended on ``partition``: the offsets to commit."""
        offsets = self.by_producer.pop((partition, producer_id), None)
        if offsets is None:
            return []
        for group in list(self._groups.get((partition, producer_id), ())):
            self._forget(partition, producer_id, group)
        if not commit:
            return []
        out = []
        for (group, topic, p), pending in offsets.items():
            if pending.superseded:
                log.info("offsets.txn_commit_skipped", group=group, topic=topic, partition=p,
                         producer_id=producer_id, offset=pending.value.offset)
                continue
            out.append((co.OffsetCommitKey(group, topic, p), pending.value))
            for other in self.open_by_group.get(group, ()):
                theirs = self.by_producer.get((partition, other), {}).get((group, topic, p))
                if theirs is not None:
                    theirs.superseded = theirs.record_offset < pending.record_offset
        return out

    def has(self, group: str, topic: str, partition: int, coordinator_partition: int) -> bool:
        """Kafka's hasPendingTransactionalOffsets."""
        pids = self.open_by_group.get(group)
        if not pids:
            return False
        k = (group, topic, partition)
        return any(k in self.by_producer.get((coordinator_partition, pid), {}) for pid in pids)

    def keys_of(self, group: str, coordinator_partition: int) -> set[TopicPartition]:
        """The partitions with a pending offset of ``group``."""
        out: set[TopicPartition] = set()
        for pid in self.open_by_group.get(group, ()):
            for g, topic, p in self.by_producer.get((coordinator_partition, pid), {}):
                if g == group:
                    out.add((topic, p))
        return out

    def drop_partition(self, partition: int) -> None:
        """The coordinator gives up ``partition`` (its state is loaded again from the log)."""
        for key in [k for k in self.by_producer if k[0] == partition]:
            self.end(partition, key[1], commit=False)

    def producer(self, partition: int, producer_id: int) -> dict[OffsetKey, PendingOffset]:
        return self.by_producer.get((partition, producer_id), {})
