"""The group coordinator's share group part (KIP-932): ShareGroupHeartbeat, the member
session timeout, ShareGroupDescribe and the share groups' records in
``__consumer_offsets``, over the pure logic of ``share.group``.

A heartbeat's records are appended and replayed by the runtime before it is answered, as
the other parts' are; a member's session deadline is a ``share-session`` timer that
removes the member (``share.group.leave``) when it fires. A group id names one group of
one kind: a share group heartbeat for a classic or consumer group's id, and the other
kinds' requests for a share group's id, answer GROUP_ID_NOT_FOUND, as Kafka's do.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import structlog

from kafkalite.protocol import share_group_records as sg
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..partitions import GroupPartitions, PartitionState, share_session_key
from ..results import AFTER_WRITE, Outcome, Write
from . import group as share
from .group import (
    AssignableTopic,
    DescribedShareGroup,
    ShareGroup,
    ShareHeartbeat,
    ShareHeartbeatResult,
)

log = structlog.get_logger("kafkalite.coordinator")


@dataclass(frozen=True, slots=True)
class ShareGroupDescription:
    """One group of a ShareGroupDescribe answer: ``group`` is None on error."""

    group_id: str
    error: ErrorCode = NO_ERROR
    message: str | None = None
    group: DescribedShareGroup | None = None


class ShareMembership:
    def __init__(self, registry: GroupPartitions) -> None:
        self.registry = registry
        self.config = registry.config
        self.timers = registry.timers
        self.partitions = registry.partitions
        #: Told (group, member) once an expired member's removal is written, so that the
        #: broker ends its share session and releases its records (registered at build).
        #: A member that leaves itself closes its share session first, as Kafka's do.
        self.member_expired: list[Callable[[str, str], None]] = []

    def _topics(self) -> dict[str, AssignableTopic]:
        return {name: AssignableTopic(t.topic_id, t.num_partitions)
                for name, t in self.registry.topics.by_name.items()}

    # --- ShareGroupHeartbeat ----------------------------------------------------------

    def share_group_heartbeat(self, now: int, req: ShareHeartbeat) -> Outcome:
        """Response: a ``ShareHeartbeatResult``; the group changes when its records are
        replayed, after the append."""
        gid, mid = req.group_id, req.member_id
        # Kafka checks the request's fields (an empty group id: INVALID_REQUEST) before
        # the group's coordinator.
        invalid = share.validate(req)
        if invalid is not None:
            return Outcome(invalid)
        err, ps = self.registry.group_partition(gid)
        if ps is None:
            return Outcome(ShareHeartbeatResult(err, None, None))
        if gid in ps.groups or gid in ps.consumer_groups or gid in ps.streams_groups:
            return Outcome(ShareHeartbeatResult(
                ErrorCode.group_id_not_found, f"Group {gid} is not a share group.", None))
        group = ps.share_groups.get(gid)
        records, result = share.heartbeat(
            group, req, self._topics(), self.config.share_heartbeat_interval(gid),
            self.config.share_max_size)
        if result.error is NO_ERROR:
            key = share_session_key(gid, mid)
            if req.member_epoch == share.LEAVE_EPOCH:
                self.timers.cancel(key)
                log.info("share_group.member_left", group=gid, member=mid)
            else:
                if req.member_epoch == 0 and (group is None or mid not in group.members):
                    log.info("share_group.member_joined", group=gid, member=mid)
                self.timers.schedule(key, now + self.config.share_session_timeout(gid))
        if not records:
            return Outcome(result)

        def then(append_err: ErrorCode, _now: int) -> Outcome:
            if append_err is not NO_ERROR:
                return Outcome(ShareHeartbeatResult(append_err, None, None))
            return Outcome(result)

        return Outcome(AFTER_WRITE, writes=[Write(ps.partition, gid, records, then)])

    def on_session_timer(self, key: tuple[Hashable, ...], _deadline: int, now: int
                         ) -> Outcome:
        """A member's session expired: it leaves, the others get a new assignment."""
        gid, mid = str(key[1]), str(key[2])
        _err, ps = self.registry.group_partition(gid)
        group = None if ps is None else ps.share_groups.get(gid)
        if ps is None or group is None or mid not in group.members:
            return Outcome(None)
        log.info("share_group.member_expired", group=gid, member=mid)

        def then(err: ErrorCode, _now: int) -> Outcome:
            if err is NO_ERROR:
                for listener in self.member_expired:
                    listener(gid, mid)
            return Outcome(None)

        return Outcome(None, writes=[Write(ps.partition, gid,
                                           share.leave(group, mid, self._topics()), then)])

    def expire_member(self, now: int, gid: str, mid: str) -> Outcome:
        """Test control (the ``expire-member`` scenario): the member's session expires
        now, as its timer firing would have it."""
        err, ps = self.registry.group_partition(gid)
        if ps is None:
            return Outcome(err)
        group = ps.share_groups.get(gid)
        if group is None:
            return Outcome(ErrorCode.group_id_not_found)
        if mid not in group.members:
            return Outcome(ErrorCode.unknown_member_id)
        key = share_session_key(gid, mid)
        self.timers.cancel(key)
        out = self.on_session_timer(key, now, now)
        out.response = NO_ERROR
        return out

    # --- ShareGroupDescribe -------------------------------------------------------------

    def describe_share_groups(self, group_ids: Sequence[str]) -> list[ShareGroupDescription]:
        """GROUP_ID_NOT_FOUND for a missing group or one of another kind, as Kafka."""
        out = []
        for gid in group_ids:
            err, ps = self.registry.group_partition(gid)
            if ps is None:
                out.append(ShareGroupDescription(gid, err))
                continue
            group = ps.share_groups.get(gid)
            if group is None:
                msg = (f"Group {gid} is not a share group." if ps.kind_of(gid) is not None
                       else f"Group {gid} not found.")
                out.append(ShareGroupDescription(gid, ErrorCode.group_id_not_found, msg))
                continue
            out.append(ShareGroupDescription(gid, group=share.describe(group)))
        return out

    # --- share-partition state metadata (record 15) ------------------------------------

    def _share_group(self, gid: str) -> tuple[PartitionState, share.ShareGroup] | None:
        _err, ps = self.registry.group_partition(gid)
        group = None if ps is None else ps.share_groups.get(gid)
        return None if ps is None or group is None else (ps, group)

    def partition_initializing(self, now: int, gid: str, topic_id: uuid.UUID,
                               topic_name: str, partition: int) -> Outcome:
        """A share-partition's first state is about to be written to
        ``__share_group_state``: record 15 names it initializing, as Kafka's coordinator
        does before it asks the share coordinator. Nothing for a group not here."""
        found = self._share_group(gid)
        if found is None:
            return Outcome(NO_ERROR)
        ps, group = found
        if partition in group.initialized.get(topic_id, ("", frozenset()))[1] \
                or partition in group.initializing.get(topic_id, ("", frozenset()))[1]:
            return Outcome(NO_ERROR)
        _name, parts = group.initializing.get(topic_id, (topic_name, frozenset()))
        initializing = {**group.initializing, topic_id: (topic_name, parts | {partition})}
        return self._write(ps, group, initializing=initializing)

    def partition_initialized(self, now: int, gid: str, topic_id: uuid.UUID,
                              topic_name: str, partition: int) -> Outcome:
        """A share-partition's state was first written to ``__share_group_state``: record
        15 moves it from initializing to initialized, as Kafka's coordinator does once
        the share coordinator has initialized it. Nothing for a group that is not here."""
        found = self._share_group(gid)
        if found is None:
            return Outcome(NO_ERROR)
        ps, group = found
        _name, parts = group.initialized.get(topic_id, (topic_name, frozenset()))
        _n, pending = group.initializing.get(topic_id, (topic_name, frozenset()))
        if partition in parts and partition not in pending:
            return Outcome(NO_ERROR)
        initializing = {**group.initializing, topic_id: (topic_name, pending - {partition})}
        initialized = {**group.initialized, topic_id: (topic_name, parts | {partition})}
        return self._write(ps, group, initialized, _nonempty(initializing))

    def state_deleting(self, now: int, gid: str | None, topic_ids: set[uuid.UUID]
                       ) -> Outcome:
        """The state of ``topic_ids``' share-partitions is about to be deleted (of group
        ``gid``, or of every group for a deleted topic): record 15 names the topics
        deleting, out of initialized and initializing, as Kafka's coordinator does."""
        writes: list[Write] = []
        for ps, g in self._groups(gid, topic_ids):
            names = {t: v[0] for t, v in (*g.initialized.items(), *g.initializing.items())
                     if t in topic_ids}
            writes += self._write(
                ps, g, {t: v for t, v in g.initialized.items() if t not in topic_ids},
                {t: v for t, v in g.initializing.items() if t not in topic_ids},
                {**g.deleting, **names}).writes
        return Outcome(NO_ERROR, writes=writes)

    def state_deleted(self, now: int, gid: str | None, topic_ids: set[uuid.UUID]) -> Outcome:
        """The state of ``topic_ids``' share-partitions was deleted (of group ``gid``, or of
        every group for a deleted topic): record 15 leaves them out."""
        writes: list[Write] = []
        for ps, g in self._groups(gid, topic_ids):
            writes += self._write(
                ps, g, {t: v for t, v in g.initialized.items() if t not in topic_ids},
                {t: v for t, v in g.initializing.items() if t not in topic_ids},
                {t: n for t, n in g.deleting.items() if t not in topic_ids}).writes
        return Outcome(NO_ERROR, writes=writes)

    def _groups(self, gid: str | None, topic_ids: set[uuid.UUID]
                ) -> list[tuple[PartitionState, share.ShareGroup]]:
        """The share groups (``gid`` or all) whose record 15 names any of ``topic_ids``."""
        return [(ps, g) for ps in list(self.partitions.values())
                for g in list(ps.share_groups.values())
                if (gid is None or g.group_id == gid) and topic_ids & (
                    g.initialized.keys() | g.initializing.keys() | g.deleting.keys())]

    @staticmethod
    def _write(ps: PartitionState, group: share.ShareGroup,
               initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] | None = None,
               initializing: dict[uuid.UUID, tuple[str, frozenset[int]]] | None = None,
               deleting: dict[uuid.UUID, str] | None = None) -> Outcome:
        record = share.state_partition_metadata(
            group.group_id, group.initialized if initialized is None else initialized,
            group.initializing if initializing is None else initializing,
            group.deleting if deleting is None else deleting)
        return Outcome(AFTER_WRITE, writes=[Write(ps.partition, group.group_id, [record],
                                                  lambda err, _now: Outcome(err))])

    # --- replay and loading ---------------------------------------------------------------

    def replay(self, ps: PartitionState, key: sg.ShareGroupKey,
               value: sg.ShareGroupValue | None) -> None:
        share.replay(ps.share_groups, key, value)

    def schedule_loaded(self, ps: PartitionState, now: int) -> None:
        """Every loaded member's session starts again, as Kafka's ``onLoaded``."""
        for gid, group in ps.share_groups.items():
            timeout = self.config.share_session_timeout(gid)
            for mid in group.members:
                self.timers.schedule(share_session_key(gid, mid), now + timeout)

    def unload(self, ps: PartitionState) -> None:
        for gid, group in ps.share_groups.items():
            for mid in group.members:
                self.timers.cancel(share_session_key(gid, mid))


def delete_records(group: ShareGroup) -> tuple[ErrorCode, list[share.Record]]:
    """DeleteGroups of a share group, as Kafka's: only an empty group; its records
    tombstoned, the group epoch last."""
    if group.members:
        return ErrorCode.non_empty_group, []
    gid = group.group_id
    return NO_ERROR, [
        *((sg.ShareGroupTargetAssignmentMemberKey(gid, m), None) for m in sorted(group.target)),
        (sg.ShareGroupTargetAssignmentMetadataKey(gid), None),
        (sg.ShareGroupStatePartitionMetadataKey(gid), None),
        (sg.ShareGroupMetadataKey(gid), None),
    ]


def _nonempty(topics: dict[uuid.UUID, tuple[str, frozenset[int]]]
              ) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
    return {t: v for t, v in topics.items() if v[1]}
