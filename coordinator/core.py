"""The group coordinator's pure core: one object per broker holding every group (classic
and KIP-848 consumer groups) and committed offset of the ``__consumer_offsets`` partitions
it owns.

Every operation is a method taking ``now`` (ms) and returning an ``Outcome`` (records to
write, the response, replies for parked requests; see ``results``): membership (join,
sync, leave; heartbeat answers its error code directly, it never writes or parks), offsets
and group administration (commit, fetch, delete offsets, delete groups, retention), and
deadline expiry (``on_timer``). Nothing here reads a clock, touches a file or awaits: the
runtime (``runtime.CoordinatorRuntime``) appends the records, replays them into this core
with ``replay`` and only then answers. Replay is also how a partition is loaded, so live
writes and recovery are one path. The exceptions, where state changes before the append
as in Kafka, are documented in ``membership`` (classic group membership),
``group_admin`` (a commit re-arms its member's session timer) and ``consumer_migration``
(a classic group's parked requests answered when it is converted, and the rebalance a
downgraded group starts).

KIP-848 consumer groups (``consumer_membership``) live in the same core and the same
group namespace: a group id names a classic group or a consumer group, and the
conversions between them (``consumer_migration``) are written as Kafka writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kafkalite.protocol import consumer_group_records as cg
from kafkalite.protocol.consumer_offsets import (
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordKey,
    RecordValue,
)
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from . import consumer_records as cr
from .consumer_group import ConsumerGroup, ReplayError
from .consumer_group import replay as replay_consumer_group
from .consumer_migration import ConsumerMigration
from .group import GroupMetadata
from .group_admin import GroupAdmin
from .group_records import group_from_record
from .membership import Membership
from .partitions import (
    HEARTBEAT_TIMER,
    JOIN_TIMER,
    MEMBER_JOIN_TIMER,
    MEMBER_SYNC_TIMER,
    REBALANCE_TIMER,
    SESSION_TIMER,
    SYNC_TIMER,
    PartitionState,
    hb_key,
    join_key,
    sync_key,
)
from .rebalance import log
from .results import AFTER_WRITE, JoinResult, Outcome, SyncResult, Write
from .scenarios import Scenarios
from .state_topics import TimerHandler
from .states import DEAD
from .txn_offsets import TxnOffsetCommits

_CONSUMER_KEYS = cg.KEY_CLASSES


class GroupCoordinatorCore(Scenarios, GroupAdmin, ConsumerMigration, TxnOffsetCommits):
    # --- replay and loading ------------------------------------------------------------

    def begin_load(self, partition: int) -> PartitionState:
        self.pending.drop_partition(partition)
        ps = self.partitions[partition] = PartitionState(partition, loading=True)
        return ps

    def replay_all(self, partition: int,
                   records: Sequence[tuple[RecordKey, RecordValue | None]]) -> None:
        """``replay`` each record in order (a commit's offsets in one loop)."""
        ps = self.partitions.get(partition)
        if ps is None:
            return
        apply = self.offsets.apply
        groups = ps.groups
        open_txns = self.pending.open_by_group
        for key, value in records:
            if type(key) is OffsetCommitKey and (value is None or key.group in groups):
                apply(key, value)  # type: ignore[arg-type]
                if open_txns and key.group in open_txns:
                    self.pending.committed(partition, key, value)  # type: ignore[arg-type]
            else:
                self.replay(partition, key, value)

    def replay(self, partition: int, key: RecordKey, value: RecordValue | None) -> None:
        """Apply one ``__consumer_offsets`` record: the only way persisted state changes."""
        ps = self.partitions.get(partition)
        if ps is None:
            return
        if type(key) is OffsetCommitKey:
            assert value is None or type(value) is OffsetCommitValue
            self.offsets.apply(key, value)
            if key.group in self.pending.open_by_group:
                self.pending.committed(partition, key, value)
            if (value is not None and key.group not in ps.groups
                    and key.group not in ps.consumer_groups):
                # As Kafka: offsets of a group with no group record make a simple group
                # (Empty, no protocol type).
                ps.groups[key.group] = GroupMetadata(key.group, partition)
            return
        if isinstance(key, _CONSUMER_KEYS):
            assert value is None or isinstance(value, cg.VALUE_CLASSES)
            self._replay_consumer_group(ps, key, value)
            return
        assert value is None or isinstance(value, GroupMetadataValue)
        gid = key.group
        if value is not None:
            # A classic group's record replaces a consumer group that a conversion ended
            # (its tombstones came first).
            ps.consumer_groups.pop(gid, None)
        if value is None:
            group = ps.groups.pop(gid, None)
            if group is not None:
                group.transition(DEAD, group.current_state_timestamp)
            return
        group = ps.groups.get(gid)
        if ps.loading or group is None:
            ps.groups[gid] = group_from_record(gid, partition, value)
            return
        # A live write: the in-memory group already holds everything but assignments.
        for rec in value.members:
            m = group.members.get(rec.member_id)
            if m is not None:
                m.assignment = rec.assignment

    def _replay_consumer_group(self, ps: PartitionState, key: cg.ConsumerGroupKey,
                               value: cg.ConsumerGroupValue | None) -> None:
        gid = key.group
        if value is not None and gid not in ps.consumer_groups:
            classic = ps.groups.get(gid)
            if classic is not None:
                if classic.protocol_type or classic.members:
                    log.error("consumer_group.record_for_classic_group", group=gid,
                              record=type(key).__name__)
                    return
                # A simple group (offsets only, no record) gives way, as in Kafka.
                del ps.groups[gid]
        try:
            replay_consumer_group(ps.consumer_groups, key, value)
        except ReplayError as e:
            if not ps.loading:
                raise
            # Kafka fails the partition's load; one bad group must not stop the broker.
            log.error("consumer_group.replay_failed", group=gid, error=str(e))
        if value is None and gid not in ps.consumer_groups:
            self._metadata_epochs.pop(gid, None)

    def finish_load(self, partition: int, now: int) -> None:
        ps = self.partitions[partition]
        ps.loading = False
        for group in ps.groups.values():
            for m in group.members.values():
                self.timers.schedule(hb_key(group.group_id, m.member_id),
                                     now + m.session_timeout_ms)
        self.schedule_loaded_consumer_groups(ps, now)
        log.info("partition.loaded", partition=partition, groups=len(ps.groups),
                 consumer_groups=len(ps.consumer_groups))

    # --- classic requests for a consumer group (``consumer_migration``) ---------------------

    def join(
        self,
        now: int,
        waiter: Any,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        reason: str | None = None,
        version: int = 9,
    ) -> Outcome:
        """JoinGroup: a classic group's, or a classic-protocol member's of a consumer group
        (an empty consumer group is deleted first and a classic group formed)."""
        cgroup = self._consumer_group_for_classic(group_id)
        c = self.config
        if cgroup is not None and c.min_session_timeout_ms <= session_timeout_ms \
                <= c.max_session_timeout_ms:
            if rebalance_timeout_ms < 0:
                rebalance_timeout_ms = session_timeout_ms
            if cgroup.members:
                return self.classic_join_to_consumer_group(
                    now, waiter, cgroup, member_id=member_id, instance_id=group_instance_id,
                    client_id=client_id, client_host=client_host,
                    rebalance_timeout_ms=rebalance_timeout_ms,
                    session_timeout_ms=session_timeout_ms, protocol_type=protocol_type,
                    protocols=protocols, require_known_member_id=require_known_member_id)

            def then(err: ErrorCode, t: int) -> Outcome:
                if err is not NO_ERROR:
                    return Outcome(JoinResult(err, member_id))
                return Membership.join(
                    self, t, waiter, group_id=group_id, member_id=member_id,
                    group_instance_id=group_instance_id,
                    require_known_member_id=require_known_member_id, client_id=client_id,
                    client_host=client_host, rebalance_timeout_ms=rebalance_timeout_ms,
                    session_timeout_ms=session_timeout_ms, protocol_type=protocol_type,
                    protocols=protocols, reason=reason, version=version)

            log.info("consumer_group.replaced_by_classic_group", group=group_id)
            return Outcome(AFTER_WRITE, writes=[Write(
                self.partition_for(group_id), group_id,
                list(cr.group_tombstone_records(cgroup)), then)])
        return super().join(
            now, waiter, group_id=group_id, member_id=member_id,
            group_instance_id=group_instance_id,
            require_known_member_id=require_known_member_id, client_id=client_id,
            client_host=client_host, rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms, protocol_type=protocol_type,
            protocols=protocols, reason=reason, version=version)

    def sync(
        self,
        now: int,
        waiter: Any,
        *,
        group_id: str,
        generation: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> Outcome:
        cgroup = self._consumer_group_for_classic(group_id)
        if cgroup is not None:
            if not cgroup.members:
                return Outcome(SyncResult(ErrorCode.unknown_member_id))
            return self.classic_sync_to_consumer_group(
                now, cgroup, member_id=member_id, instance_id=group_instance_id,
                generation=generation, protocol_type=protocol_type,
                protocol_name=protocol_name)
        return super().sync(now, waiter, group_id=group_id, generation=generation,
                            member_id=member_id, group_instance_id=group_instance_id,
                            protocol_type=protocol_type, protocol_name=protocol_name,
                            assignments=assignments)

    def heartbeat(self, now: int, group_id: str, member_id: str,
                  group_instance_id: str | None, generation: int) -> ErrorCode:
        err = super().heartbeat(now, group_id, member_id, group_instance_id, generation)
        if err is ErrorCode.unknown_member_id:
            cgroup = self._consumer_group_for_classic(group_id)
            if cgroup is not None:
                return self.classic_heartbeat_to_consumer_group(
                    now, cgroup, member_id, group_instance_id, generation)
        return err

    def leave(self, now: int, group_id: str,
              members: list[tuple[str, str | None, str | None]]) -> Outcome:
        cgroup = self._consumer_group_for_classic(group_id)
        if cgroup is not None:
            return self.classic_leave_to_consumer_group(now, cgroup, members)
        return super().leave(now, group_id, members)

    def _consumer_group_for_classic(self, group_id: str) -> ConsumerGroup | None:
        if self.group_status(group_id) is not NO_ERROR:
            return None
        return self.consumer_group(group_id)

    def timer_handlers(self) -> dict[str, TimerHandler]:
        """Each timer kind's handler: a classic group's deadlines (``rebalance``) and a
        consumer group's (``consumer_lifecycle``)."""
        return {
            HEARTBEAT_TIMER: self.on_heartbeat_timer,
            JOIN_TIMER: self.on_join_timer,
            SYNC_TIMER: self.on_sync_timer,
            SESSION_TIMER: self.on_session_timer,
            REBALANCE_TIMER: self.on_rebalance_timer,
            MEMBER_JOIN_TIMER: self.on_member_join_timer,
            MEMBER_SYNC_TIMER: self.on_member_sync_timer,
        }

    def unload(self, partition: int) -> Outcome:
        """Give up a partition (the broker stops, or a test moves it away): its parked
        JoinGroup and SyncGroup requests are answered NOT_COORDINATOR, as Kafka does."""
        out = Outcome(None)
        ps = self.partitions.pop(partition, None)
        if ps is None:
            return out
        self.unload_consumer_groups(ps)
        for gid in ps.consumer_groups:
            for tp in list(self.offsets.offsets(gid)):
                self.offsets.apply(OffsetCommitKey(gid, *tp), None)
        for gid, group in ps.groups.items():
            for m in group.members.values():
                if m.join_waiter is not None:
                    out.replies.append((m.join_waiter,
                                        JoinResult(ErrorCode.not_coordinator, m.member_id)))
                    m.join_waiter = None
                if m.sync_waiter is not None:
                    out.replies.append((m.sync_waiter, SyncResult(ErrorCode.not_coordinator)))
                    m.sync_waiter = None
            self.timers.cancel(join_key(gid))
            self.timers.cancel(sync_key(gid))
            for mid in list(group.members) + list(group.pending_members):
                self.timers.cancel(hb_key(gid, mid))
            for tp in list(self.offsets.offsets(gid)):
                self.offsets.apply(OffsetCommitKey(gid, *tp), None)
        self.pending.drop_partition(partition)
        return out
