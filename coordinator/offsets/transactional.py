"""Transactional offset commits on the group coordinator: TxnOffsetCommit, the pending
offsets of each producer, and the end of their transaction.

As Kafka's ``OffsetMetadataManager``: a TxnOffsetCommit writes ordinary offset commit
records, but in a transactional batch of the producer's id and epoch; replaying them puts
the offsets among that producer's *pending* offsets, not the committed ones. The
transaction coordinator's marker on the group's ``__consumer_offsets`` partition (written
through the runtime's ``complete_transaction``) ends them: COMMIT makes each pending
offset the committed one, unless an offset of that partition committed after the pending
record was written is already there (Kafka keeps the most recent: it compares the record
offsets); ABORT drops them. An offset tombstone drops the pending offsets of its partition
too. While an offset is pending, OffsetFetch with ``require_stable`` answers
UNSTABLE_OFFSET_COMMIT for its partition, the offset does not expire and its group is not
removed by retention.

Pending offsets are replayed state like the committed ones: live from the runtime's
transactional write, and on load from the transactions no marker has ended yet
(``state_load``).
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..classic.group import GroupMetadata
from ..partitions import GroupPartitions
from ..results import AFTER_WRITE, Outcome, Write
from ..state_topics import TxnRecord
from .pending import PendingTxnOffsets
from .store import CommitRequest, OffsetStore, Record, TopicPartition

log = structlog.get_logger("kafkalite.offsets")

class TxnOffsetCommits:
    """TxnOffsetCommit and the replay of transactional records and markers: the pending
    transactional offsets are this part's."""

    def __init__(self, registry: GroupPartitions, offsets: OffsetStore,
                 pending: PendingTxnOffsets) -> None:
        self.registry = registry
        self.partitions = registry.partitions
        self.offsets = offsets
        #: Transactional offsets waiting for their transaction's marker (replay only).
        self.pending = pending

    def commit_txn_offsets(self, now: int, req: CommitRequest, producer_id: int,
                           producer_epoch: int) -> Outcome:
        """Response: (topic, partition) -> error, in request order. Validation as Kafka's
        ``validateTransactionalOffsetCommit``: a missing group takes only generation -1
        (it becomes a simple group), and a group's member, instance id and generation are
        checked when given (v3+), but not its state; a consumer group's member and epoch
        (a stale epoch is ILLEGAL_GENERATION)."""
        parts = [(t, p.partition_index) for t, ps in req.topics for p in ps]
        err = self.registry.group_status(req.group_id)
        if err is not NO_ERROR:
            return Outcome(dict.fromkeys(parts, err))
        group = self.registry.group(req.group_id)
        cgroup = self.registry.consumer_group(req.group_id)
        sgroup = self.registry.streams_group(req.group_id)
        if sgroup is not None:
            from ..streams.membership import validate_commit

            err = validate_commit(sgroup, req.member_id, req.generation_id, req.instance_id,
                                  transactional=True, partitions=parts)
        elif cgroup is not None:
            # KIP-848 modules load with the first consumer group
            from ..consumer import admin as consumer_admin

            err = consumer_admin.validate_commit(cgroup, req, transactional=True)
        elif group is None:
            err = NO_ERROR if req.generation_id < 0 else ErrorCode.illegal_generation
        else:
            err = self.offsets.validate_commit(group, req, transactional=True)
        if err is not NO_ERROR:
            return Outcome(dict.fromkeys(parts, err))
        errors: dict[TopicPartition, ErrorCode] = {}
        records: list[Record] = []
        limit = self.offsets.max_metadata_bytes
        for topic, ps in req.topics:
            for p in ps:
                metadata = p.committed_metadata or ""
                if len(metadata) * 4 > limit and len(metadata.encode("utf-8")) > limit:
                    errors[(topic, p.partition_index)] = ErrorCode.offset_metadata_too_large
                    continue
                errors[(topic, p.partition_index)] = NO_ERROR
                records.append((co.OffsetCommitKey(req.group_id, topic, p.partition_index),
                                co.OffsetCommitValue(p.committed_offset, metadata, now,
                                                     p.committed_leader_epoch)))
        if not records:
            return Outcome(errors)

        def then(append_err: ErrorCode, _now: int) -> Outcome:
            if append_err is NO_ERROR:
                log.debug("offsets.txn_committed", group=req.group_id, producer_id=producer_id,
                         epoch=producer_epoch, partitions=len(records))
                return Outcome(errors)
            return Outcome({tp: (append_err if e is NO_ERROR else e)
                            for tp, e in errors.items()})

        return Outcome(AFTER_WRITE, writes=[Write(
            self.registry.partition_for(req.group_id), req.group_id, records, then,
            producer_id=producer_id, producer_epoch=producer_epoch)])

    # --- replay ------------------------------------------------------------------------

    def replay_transactional(self, partition: int, producer_id: int, producer_epoch: int,
                             records: Sequence[TxnRecord]) -> None:
        ps = self.partitions.get(partition)
        if ps is None:
            return
        for r in records:
            key, value = r.key, r.value
            if type(key) is not co.OffsetCommitKey or value is None:
                log.warning("offsets.txn_record_ignored", partition=partition,
                            producer_id=producer_id, key=repr(key))
                continue
            assert isinstance(value, co.OffsetCommitValue)
            if ps.kind_of(key.group) is None:
                # As Kafka: offsets of a group with no group record make a simple group.
                ps.groups[key.group] = GroupMetadata(key.group, partition)
            self.pending.add(partition, producer_id, key, value, r.offset, r.superseded)

    def replay_end_marker(self, partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT or ABORT marker of ``producer_id`` on ``partition`` (appended by the
        runtime's ``complete_transaction``)."""
        if partition not in self.partitions:
            return
        committed = self.pending.end(partition, producer_id, commit)
        apply = self.offsets.apply
        for key, value in committed:
            apply(key, value)
        if committed:
            log.debug("offsets.txn_materialized", partition=partition, producer_id=producer_id,
                     offsets=len(committed))
