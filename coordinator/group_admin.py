"""Offsets and group administration on the core: OffsetCommit, OffsetFetch, OffsetDelete,
DescribeGroups, ListGroups, DeleteGroups and offset retention.

The offset logic itself is ``offsets.OffsetStore`` (pure, clock-free); this family gives it
the group and turns its records into writes. Committed offsets change only when their
records are replayed. One change happens before the append, as in Kafka's
``doCommitOffsets``: a commit from a member of a Stable or PreparingRebalance group
re-arms that member's session timer (a timer, not persisted state).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import structlog

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ErrorCode

from .offsets import CommitRequest, OffsetRow, Record, TopicPartition
from .partitions import Partitions, hb_key
from .results import (
    AFTER_WRITE,
    DescribedGroup,
    DescribedMember,
    ListedGroup,
    Outcome,
    Write,
)
from .states import DEAD, EMPTY, STABLE

log = structlog.get_logger("kafkalite.offsets")

#: (group error, per topic [(partition, error)])
DeleteOffsetsResult = tuple[ErrorCode, list[tuple[str, list[tuple[int, ErrorCode]]]]]
#: (group error, per topic [row])
FetchResult = tuple[ErrorCode, list[tuple[str, list[OffsetRow]]]]


class GroupAdmin(Partitions):
    # --- OffsetCommit ---------------------------------------------------------------

    def commit_offsets(self, now: int, req: CommitRequest) -> Outcome:
        """Response: (topic, partition) -> error, in request order."""
        err = self.group_status(req.group_id)
        if err is not ErrorCode.none:
            return Outcome({(t, p.partition_index): err for t, parts in req.topics for p in parts})
        group = self.group(req.group_id)
        result = self.offsets.commit(group, req, now)
        if result.heartbeat_member is not None and group is not None:
            member = group.members[result.heartbeat_member]
            self.timers.schedule(hb_key(req.group_id, member.member_id),
                                 now + member.session_timeout_ms)
        errors = result.errors
        if not result.records:
            return Outcome(errors)

        def then(append_err: ErrorCode, _now: int) -> Outcome:
            if append_err is ErrorCode.none:
                return Outcome(errors)
            return Outcome({tp: (append_err if e is ErrorCode.none else e)
                            for tp, e in errors.items()})

        return Outcome(AFTER_WRITE, writes=[
            Write(self.partition_for(req.group_id), req.group_id, result.records, then)])

    # --- OffsetFetch ----------------------------------------------------------------

    def fetch_offsets(self, group_id: str, topics: Sequence[tuple[str, Sequence[int]]] | None,
                      require_stable: bool = False) -> Outcome:
        """Response: ``FetchResult``. ``topics`` None: every partition with an offset."""
        err = self.group_status(group_id)
        if err is not ErrorCode.none:
            rows = [] if topics is None else [
                (t, [(p, -1, -1, "", err) for p in parts]) for t, parts in topics]
            return Outcome((err, rows))
        return Outcome((ErrorCode.none,
                        self.offsets.fetch(self.group(group_id), group_id, topics)))

    # --- OffsetDelete ---------------------------------------------------------------

    def delete_offsets(self, now: int, group_id: str,
                       topics: Sequence[tuple[str, Sequence[int]]]) -> Outcome:
        """Response: ``DeleteOffsetsResult``."""
        err = self.group_status(group_id)
        if err is not ErrorCode.none:
            return Outcome((err, []))
        group_err, rows, records = self.offsets.delete_offsets(self.group(group_id), group_id,
                                                               topics)
        if group_err is not ErrorCode.none:
            return Outcome((group_err, []))
        result: DeleteOffsetsResult = (ErrorCode.none, rows)
        if not records:
            return Outcome(result)

        def then(append_err: ErrorCode, _now: int) -> Outcome:
            return Outcome(result if append_err is ErrorCode.none else (append_err, []))

        return Outcome(AFTER_WRITE, writes=[
            Write(self.partition_for(group_id), group_id, records, then)])

    # --- DeleteGroups ---------------------------------------------------------------

    def delete_group(self, now: int, group_id: str) -> Outcome:
        """Response: the group's error. Writes tombstones for its offsets and itself."""
        err = self.group_status(group_id)
        if err is not ErrorCode.none:
            return Outcome(err)
        err = self.offsets.validate_delete_group(self.group(group_id))
        if err is not ErrorCode.none:
            return Outcome(err)

        def then(append_err: ErrorCode, _now: int) -> Outcome:
            if append_err is ErrorCode.none:
                log.info("group.deleted", group=group_id)
            return Outcome(append_err)

        return Outcome(AFTER_WRITE, writes=[Write(
            self.partition_for(group_id), group_id,
            self.offsets.delete_group_records(group_id), then)])

    # --- offset retention -------------------------------------------------------------

    def expire_offsets(self, now: int) -> Outcome:
        """One pass of offset expiration over every loaded group: tombstones for expired
        offsets, and for an Empty group left without offsets."""
        out = Outcome(None)
        for g in self.groups():
            if self.partition_status(g.partition) is not ErrorCode.none:
                continue
            records: list[Record] = []
            expired, remove = self.offsets.expire(g.group_id, g, now)
            records.extend(expired)
            if remove and g.state is EMPTY:
                records.append((co.GroupMetadataKey(g.group_id), None))
            if records:
                out.writes.append(Write(g.partition, g.group_id, records,
                                        _log_expiry(g.group_id, len(expired), remove)))
        return out

    # --- DescribeGroups, ListGroups -----------------------------------------------------

    def describe_group(self, group_id: str) -> DescribedGroup:
        err = self.group_status(group_id)
        if err is not ErrorCode.none:
            return DescribedGroup(err)
        g = self.group(group_id)
        if g is None:
            # Kafka describes an unknown group as Dead, without error.
            return DescribedGroup(ErrorCode.none, DEAD.value)
        stable = g.state is STABLE
        members = tuple(
            DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                            m.metadata(g.protocol_name) if stable else b"",
                            m.assignment if stable else b"")
            for m in g.members.values())
        return DescribedGroup(ErrorCode.none, g.state.value, g.protocol_type or "",
                              (g.protocol_name or "") if stable else "", members)

    def list_groups(self) -> list[ListedGroup]:
        return [ListedGroup(g.group_id, g.protocol_type or "", g.state.value)
                for g in self.groups() if g.state is not DEAD
                and self.partition_status(g.partition) is ErrorCode.none]

    def committed(self, group_id: str) -> dict[TopicPartition, int]:
        """Committed offsets of a group (for views and tools)."""
        return {tp: c.offset for tp, c in self.offsets.offsets(group_id).items()}


def _log_expiry(group_id: str, tombstones: int, removed: bool
                ) -> Callable[[ErrorCode, int], Outcome]:
    def then(err: ErrorCode, _now: int) -> Outcome:
        if err is ErrorCode.none:
            log.info("offsets.expired", group=group_id, tombstones=tombstones,
                     group_removed=removed)
        return Outcome(None)

    return then
