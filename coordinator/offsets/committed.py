"""Committed offsets, a part of the group coordinator: OffsetCommit, OffsetFetch,
OffsetDelete and offset retention, and the replay of offset commit records.

The offset logic itself is ``offsets.OffsetStore`` (pure, clock-free); this part gives it
the group and turns its records into writes; a KIP-848 consumer group's rules are in
``consumer.admin``. Committed offsets change only when their records are replayed. One
change happens before the append, as in Kafka's ``doCommitOffsets``: a commit from a
member of a Stable or PreparingRebalance group re-arms that member's session timer (a
timer, not persisted state).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import structlog

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import OFFSETS_TOPIC

from ..classic.group import GroupMetadata
from ..classic.states import EMPTY
from ..partitions import GroupPartitions, PartitionState, hb_key
from ..results import AFTER_WRITE, Outcome, Write
from .pending import PendingTxnOffsets
from .store import CommitRequest, CommitResult, OffsetRow, OffsetStore, Record, TopicPartition

if TYPE_CHECKING:
    from ..streams.group import StreamsGroup

log = structlog.get_logger("kafkalite.offsets")

#: (group error, per topic [(partition, error)])
DeleteOffsetsResult = tuple[ErrorCode, list[tuple[str, list[tuple[int, ErrorCode]]]]]
#: (group error, per topic [row])
FetchResult = tuple[ErrorCode, list[tuple[str, list[OffsetRow]]]]


class CommittedOffsets:
    """The committed offsets of every group held here; it replays their records."""

    def __init__(self, registry: GroupPartitions, offsets: OffsetStore,
                 pending: PendingTxnOffsets) -> None:
        self.registry = registry
        #: Bound once: the first lookup of every commit and fetch.
        self._group_partition = registry.group_partition
        self.timers = registry.timers
        #: Committed offsets of every group held here (changed only by replay).
        self.offsets = offsets
        #: Transactional offsets not decided yet (read by fetches and deletions).
        self.pending = pending

    def commit_offsets(self, now: int, req: CommitRequest) -> Outcome:
        """Response: (topic, partition) -> error, in request order."""
        group_id = req.group_id
        err, ps = self._group_partition(group_id)
        if ps is None:
            return Outcome({(t, p.partition_index): err for t, parts in req.topics for p in parts})
        partition = ps.partition
        if group_id in ps.share_groups:  # share groups keep no committed offsets here
            return Outcome({(t, p.partition_index): ErrorCode.group_id_not_found
                            for t, parts in req.topics for p in parts})
        sgroup = ps.streams_groups.get(group_id)
        if sgroup is not None:
            from ..streams.membership import validate_commit

            err = validate_commit(sgroup, req.member_id, req.generation_id, req.instance_id,
                                  transactional=False, api_version=req.api_version,
                                  partitions=((t, p.partition_index) for t, parts in req.topics
                                              for p in parts))
            if err is not NO_ERROR:
                return Outcome({(t, p.partition_index): err for t, parts in req.topics
                                for p in parts})
            return self._commit_result(partition, req, self.offsets.commit_records(req, now))
        cgroup = ps.consumer_groups.get(group_id)
        if cgroup is not None:
            # KIP-848 modules load with the first consumer group
            from ..consumer import admin as consumer_admin

            err = consumer_admin.validate_commit(cgroup, req)
            if err is not NO_ERROR:
                return Outcome({(t, p.partition_index): err for t, parts in req.topics
                                for p in parts})
            return self._commit_result(partition, req, self.offsets.commit_records(req, now))
        group = ps.groups.get(group_id)
        result = self.offsets.commit(group, req, now)
        if result.heartbeat_member is not None and group is not None:
            member = group.members[result.heartbeat_member]
            self.timers.schedule(hb_key(group_id, member.member_id),
                                 now + member.session_timeout_ms)
        return self._commit_result(partition, req, result)

    def _commit_result(self, partition: int, req: CommitRequest,
                       result: CommitResult) -> Outcome:
        errors = result.errors
        if not result.records:
            return Outcome(errors)

        def then(append_err: ErrorCode, _now: int) -> Outcome:
            if append_err is NO_ERROR:
                return Outcome(errors)
            return Outcome({tp: (append_err if e is NO_ERROR else e)
                            for tp, e in errors.items()})

        # Positional (keywords cost more than the rest of this step of a commit): no
        # replies; one write of the records, not transactional (-1, -1), already encoded.
        return Outcome(AFTER_WRITE, [], [Write(partition, req.group_id, result.records, then,
                                               OFFSETS_TOPIC, -1, -1, result.encoded)])

    def fetch_offsets(self, group_id: str, topics: Sequence[tuple[str, Sequence[int]]] | None,
                      require_stable: bool = False, member_id: str | None = None,
                      member_epoch: int = -1) -> Outcome:
        """``fetch_committed`` as an outcome."""
        return Outcome(self.fetch_committed(group_id, topics, require_stable, member_id,
                                            member_epoch))

    def fetch_committed(self, group_id: str,
                        topics: Sequence[tuple[str, Sequence[int]]] | None,
                        require_stable: bool = False, member_id: str | None = None,
                        member_epoch: int = -1) -> FetchResult:
        """OffsetFetch; it writes nothing. ``topics`` None: every partition with an
        offset. ``member_id``/``member_epoch``: OffsetFetch v9's, checked for a consumer
        group."""
        err, ps = self._group_partition(group_id)
        if ps is None:
            rows: list[tuple[str, list[OffsetRow]]] = [] if topics is None else [
                (t, [(p, -1, -1, "", err) for p in parts]) for t, parts in topics]
            return err, rows
        sgroup = ps.streams_groups.get(group_id)
        if sgroup is not None:
            from ..streams.membership import validate_fetch

            err = validate_fetch(sgroup, member_id, member_epoch)
            if err is not NO_ERROR:
                return err, []
            found = self.offsets.fetch(None, group_id, topics)
            if require_stable and group_id in self.pending.open_by_group:
                found = self._unstable(group_id, found)
            return NO_ERROR, found
        cgroup = ps.consumer_groups.get(group_id)
        if cgroup is not None:
            from ..consumer import admin as consumer_admin

            err = consumer_admin.validate_fetch(cgroup, member_id, member_epoch)
            if err is not NO_ERROR:
                return err, []  # the group's error alone, as Kafka
            found = self.offsets.fetch(None, group_id, topics)
            if require_stable and group_id in self.pending.open_by_group:
                found = self._unstable(group_id, found)
            return NO_ERROR, found
        found = self.offsets.fetch(ps.groups.get(group_id), group_id, topics)
        if require_stable and group_id in self.pending.open_by_group:
            found = self._unstable(group_id, found)
        return NO_ERROR, found

    def _unstable(self, group_id: str, rows: list[tuple[str, list[OffsetRow]]]
                  ) -> list[tuple[str, list[OffsetRow]]]:
        """``require_stable``: UNSTABLE_OFFSET_COMMIT for partitions with a pending
        transactional offset, as Kafka's OffsetMetadataManager answers."""
        pending = self.pending.keys_of(group_id, self.registry.partition_for(group_id))
        unstable = ErrorCode.unstable_offset_commit
        return [(t, [(r[0], -1, -1, "", unstable) if (t, r[0]) in pending else r
                     for r in parts]) for t, parts in rows]

    def delete_offsets(self, now: int, group_id: str,
                       topics: Sequence[tuple[str, Sequence[int]]]) -> Outcome:
        """Response: ``DeleteOffsetsResult``."""
        err = self.registry.group_status(group_id)
        if err is not NO_ERROR:
            return Outcome((err, []))
        cgroup = self.registry.consumer_group(group_id)
        sgroup = self.registry.streams_group(group_id)
        if cgroup is not None:
            from ..consumer import admin as consumer_admin

            group_err = NO_ERROR
            rows, records = consumer_admin.delete_offsets(self.offsets, cgroup, topics)
        elif sgroup is not None:
            group_err = NO_ERROR
            rows, records = self._delete_streams_offsets(sgroup, topics)
        else:
            group_err, rows, records = self.offsets.delete_offsets(self.registry.group(group_id),
                                                                   group_id, topics)
        if group_err is not NO_ERROR:
            return Outcome((group_err, []))
        # As Kafka: a partition with only a pending transactional offset gets a tombstone.
        records.extend(self.pending_tombstones(
            group_id, {(t, p) for t, parts in rows for p, e in parts if e is NO_ERROR},
            records))
        result: DeleteOffsetsResult = (NO_ERROR, rows)
        if not records:
            return Outcome(result)

        def then(append_err: ErrorCode, _now: int) -> Outcome:
            return Outcome(result if append_err is NO_ERROR else (append_err, []))

        return Outcome(AFTER_WRITE, writes=[
            Write(self.registry.partition_for(group_id), group_id, records, then)])

    def _delete_streams_offsets(self, group: StreamsGroup,
                                topics: Sequence[tuple[str, Sequence[int]]]
                                ) -> tuple[list[tuple[str, list[tuple[int, ErrorCode]]]],
                                           list[Record]]:
        """OffsetDelete for a streams group: while it has members, the topics its topology
        reads (source and repartition topics) are refused as subscribed, as Kafka's
        ``StreamsGroup.isSubscribedToTopic``; an empty group's offsets all go."""
        read: set[str] = set()
        if group.members and group.topology is not None:
            for s in group.topology.subtopologies:
                read.update(s.source_topics)
                read.update(t.name for t in s.repartition_source_topics)
        gid = group.group_id
        rows: list[tuple[str, list[tuple[int, ErrorCode]]]] = []
        records: list[Record] = []
        for topic, partitions in topics:
            if topic in read:
                rows.append((topic, [(p, ErrorCode.group_subscribed_to_topic)
                                     for p in partitions]))
                continue
            records.extend((co.OffsetCommitKey(gid, topic, p), None) for p in partitions
                           if self.offsets.get(gid, topic, p) is not None)
            rows.append((topic, [(p, NO_ERROR) for p in partitions]))
        return rows, records

    def pending_tombstones(self, group_id: str, only: set[TopicPartition] | None,
                            written: list[Record]) -> list[Record]:
        """Tombstones for partitions of ``group_id`` (of ``only``, when given) that have a
        pending transactional offset and no tombstone in ``written`` yet."""
        if group_id not in self.pending.open_by_group:
            return []
        done = {(k.topic, k.partition) for k, _v in written
                if isinstance(k, co.OffsetCommitKey)}
        return [(co.OffsetCommitKey(group_id, t, p), None)
                for t, p in sorted(self.pending.keys_of(group_id,
                                                        self.registry.partition_for(group_id)))
                if (t, p) not in done and (only is None or (t, p) in only)]

    def expire_offsets(self, now: int) -> Outcome:
        """One pass of offset expiration over every loaded group: tombstones for expired
        offsets, and for an Empty group left without offsets."""
        out = Outcome(None)
        for g in self.registry.groups():
            if self.registry.partition_status(g.partition) is not NO_ERROR:
                continue
            records: list[Record] = []
            expired, remove = self._spare_pending(g.group_id, *self.offsets.expire(
                g.group_id, g, now))
            records.extend(expired)
            if remove and g.state is EMPTY:
                records.append((co.GroupMetadataKey(g.group_id), None))
            if records:
                out.writes.append(Write(g.partition, g.group_id, records,
                                        _log_expiry(g.group_id, len(expired), remove)))
        for cg in self.registry.consumer_groups():
            p = self.registry.partition_for(cg.group_id)
            if self.registry.partition_status(p) is not NO_ERROR:
                continue
            from ..consumer import admin as consumer_admin

            expired, remove = self._spare_pending(cg.group_id, *consumer_admin.expire(
                self.offsets, cg, now))
            records = list(expired)
            if remove:
                records.extend(consumer_admin.group_tombstones(cg))
            if records:
                out.writes.append(Write(p, cg.group_id, records,
                                        _log_expiry(cg.group_id, len(expired), remove)))
        return out

    def _spare_pending(self, group_id: str, expired: list[Record], remove: bool
                       ) -> tuple[list[Record], bool]:
        """As Kafka: an offset with a pending transactional one does not expire, and a
        group with open transactions is not removed."""
        if group_id not in self.pending.open_by_group:
            return expired, remove
        pending = self.pending.keys_of(group_id, self.registry.partition_for(group_id))
        return [(k, v) for k, v in expired
                if not (isinstance(k, co.OffsetCommitKey)
                        and (k.topic, k.partition) in pending)], False

    def committed(self, group_id: str) -> dict[TopicPartition, int]:
        """Committed offsets of a group (for views and tools)."""
        return {tp: c.offset for tp, c in self.offsets.offsets(group_id).items()}

    def replay(self, ps: PartitionState, key: co.OffsetCommitKey,
               value: co.OffsetCommitValue | None) -> None:
        """A committed offset's record (or its tombstone)."""
        assert value is None or type(value) is co.OffsetCommitValue
        self.offsets.apply(key, value)
        if key.group in self.pending.open_by_group:
            self.pending.committed(ps.partition, key, value)
        if value is not None and ps.kind_of(key.group) is None:
            # As Kafka: offsets of a group with no group record make a simple group
            # (Empty, no protocol type).
            ps.groups[key.group] = GroupMetadata(key.group, ps.partition)

    def unload(self, ps: PartitionState) -> None:
        """Forget the committed offsets of a partition's groups."""
        for gid in (*ps.consumer_groups, *ps.groups, *ps.streams_groups):
            for tp in list(self.offsets.offsets(gid)):
                self.offsets.apply(co.OffsetCommitKey(gid, *tp), None)


def _log_expiry(group_id: str, tombstones: int, removed: bool
                ) -> Callable[[ErrorCode, int], Outcome]:
    def then(err: ErrorCode, _now: int) -> Outcome:
        if err is NO_ERROR:
            log.info("offsets.expired", group=group_id, tombstones=tombstones,
                     group_removed=removed)
        return Outcome(None)

    return then
