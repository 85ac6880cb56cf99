"""Rebalancing, shared by every request of the classic-group core: starting a rebalance
(with KIP-134's initial delay), completing a join, removing members, and what happens when
a member's session, a join or a sync deadline passes."""

from __future__ import annotations

from collections.abc import Hashable

import structlog

from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..partitions import GroupPartitions, hb_key, join_key, sync_key
from ..results import JoinResult, Outcome, SyncResult, Write
from .group import ClassicGroupMember, GroupMetadata
from .records import group_record
from .states import CAN_REBALANCE, COMPLETING, EMPTY, PREPARING, STABLE

log = structlog.get_logger("kafkalite.coordinator")



class Rebalancing:
    """A classic group's rebalances; ``membership.Membership`` adds the requests."""

    def __init__(self, registry: GroupPartitions) -> None:
        self.registry = registry
        self.config = registry.config
        self.timers = registry.timers
        self.partitions = registry.partitions
        self.partition_of = registry.partition_of

    # --- rebalance ---------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: GroupMetadata, now: int, reason: str) -> Outcome:
        if group.state in CAN_REBALANCE:
            return self.prepare_rebalance(group, now, reason)
        return Outcome()

    def prepare_rebalance(self, group: GroupMetadata, now: int, reason: str) -> Outcome:
        out = Outcome()
        if group.state is COMPLETING:
            out.add(self._reset_assignment(group, ErrorCode.rebalance_in_progress))
        self.timers.cancel(sync_key(group.group_id))
        group.pending_sync.clear()
        timeout = group.rebalance_timeout_ms()
        delay = self.config.initial_rebalance_delay_ms
        group.new_member_added = False
        if group.state is EMPTY and delay > 0:
            # KIP-134: wait for more members; each newcomer extends by the delay.
            first = min(delay, timeout)
            group.initial_join_remaining_ms = max(timeout - delay, 0)
            self.timers.schedule(join_key(group.group_id), now + first)
        else:
            group.initial_join_remaining_ms = None
            self.timers.schedule(join_key(group.group_id), now + timeout)
        old = group.state
        group.transition(PREPARING, now)
        log.info("rebalance.started", group=group.group_id, old_state=old.value,
                 generation=group.generation, reason=reason)
        return out

    def _try_complete_join(self, group: GroupMetadata, now: int) -> Outcome:
        if (group.state is PREPARING and group.initial_join_remaining_ms is None
                and group.has_all_members_joined()):
            return self._complete_join(group, now)
        return Outcome()

    def _on_join_timer(self, group: GroupMetadata, now: int) -> Outcome:
        if group.state is not PREPARING:
            return Outcome()
        remaining = group.initial_join_remaining_ms
        if remaining is not None:
            if group.new_member_added and remaining > 0:
                delay = self.config.initial_rebalance_delay_ms
                group.new_member_added = False
                group.initial_join_remaining_ms = max(remaining - delay, 0)
                self.timers.schedule(join_key(group.group_id), now + min(delay, remaining))
                return Outcome()
            group.initial_join_remaining_ms = None
        return self._complete_join(group, now)

    def _complete_join(self, group: GroupMetadata, now: int) -> Outcome:
        out = Outcome()
        gid = group.group_id
        self.timers.cancel(join_key(gid))
        group.initial_join_remaining_ms = None
        for m in list(group.members.values()):
            if not m.awaiting_join and m.group_instance_id is None:
                self.timers.cancel(hb_key(gid, m.member_id))
                group.remove(m.member_id)
                log.info("member.removed", group=gid, member=m.member_id,
                         reason="did not rejoin before the rebalance completed")
        if group.members:
            leader = group.members.get(group.leader_id or "")
            if leader is None or not leader.awaiting_join:
                joined = [m for m in group.members.values() if m.awaiting_join]
                if not joined:
                    # Only static members that never rejoined: try again later.
                    self.timers.schedule(join_key(gid), now + group.rebalance_timeout_ms())
                    return out
                group.leader_id = joined[0].member_id
        group.generation += 1
        if not group.members:
            group.protocol_name = None
            group.transition(EMPTY, now)
            log.info("group.emptied", group=gid, generation=group.generation)
            key, value = group_record(group)
            out.writes.append(Write(group.partition, gid, [(key, value)]))
            return out
        group.protocol_name = group.select_protocol()
        group.transition(COMPLETING, now)
        log.info("generation.completed", group=gid, generation=group.generation,
                 protocol=group.protocol_name, leader=group.leader_id,
                 members=list(group.members))
        for m in group.members.values():
            if m.join_waiter is not None:
                res = self._join_info(group, m, group.is_leader(m.member_id))
                out.replies.append((m.join_waiter, res))
                m.join_waiter = None
            m.is_new = False
            self.timers.schedule(hb_key(gid, m.member_id), now + m.session_timeout_ms)
        group.pending_sync = set(group.members)
        self.timers.schedule(sync_key(gid), now + group.rebalance_timeout_ms())
        return out

    def _reset_assignment(self, group: GroupMetadata, error: ErrorCode) -> Outcome:
        out = Outcome()
        for m in group.members.values():
            m.assignment = b""
            if m.sync_waiter is not None:
                out.replies.append((m.sync_waiter, SyncResult(error)))
                m.sync_waiter = None
        return out

    def remove_member(self, group: GroupMetadata, member: ClassicGroupMember, now: int,
                       reason: str) -> Outcome:
        """Kafka's removeMemberAndUpdateGroup."""
        out = Outcome()
        if member.join_waiter is not None:
            out.replies.append((member.join_waiter,
                                JoinResult(ErrorCode.unknown_member_id, member.member_id)))
            member.join_waiter = None
        if member.sync_waiter is not None:
            out.replies.append((member.sync_waiter, SyncResult(ErrorCode.unknown_member_id)))
            member.sync_waiter = None
        self.timers.cancel(hb_key(group.group_id, member.member_id))
        group.remove(member.member_id)
        if group.state in (STABLE, COMPLETING):
            out.add(self._maybe_prepare_rebalance(group, now, reason))
        return out.add(self._try_complete_join(group, now))

    # --- timers ----------------------------------------------------------------------

    def _timer_group(self, key: tuple[Hashable, ...]) -> GroupMetadata | None:
        gid = key[1]
        assert isinstance(gid, str)
        return self.registry.group(gid)

    def on_heartbeat_timer(self, key: tuple[Hashable, ...], deadline: int, now: int
                           ) -> Outcome:
        """A member's session passed (the scheduler removed ``key`` from the timers)."""
        group = self._timer_group(key)
        if group is None:
            return Outcome()
        assert isinstance(key[2], str)
        return self._on_heartbeat_expired(group, key[2], now, deadline)

    def on_join_timer(self, key: tuple[Hashable, ...], _deadline: int, now: int) -> Outcome:
        group = self._timer_group(key)
        return Outcome() if group is None else self._on_join_timer(group, now)

    def on_sync_timer(self, key: tuple[Hashable, ...], deadline: int, now: int) -> Outcome:
        group = self._timer_group(key)
        return Outcome() if group is None else self._on_sync_expired(group, now, deadline)

    def _on_heartbeat_expired(self, group: GroupMetadata, member_id: str, now: int,
                              deadline: int) -> Outcome:
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            log.info("member.expired", group=group.group_id, member=member_id, pending=True,
                     deadline=deadline)
            return self._try_complete_join(group, now)
        member = group.members.get(member_id)
        if member is None:
            return Outcome()
        if not member.is_new and (member.awaiting_join or member.awaiting_sync):
            # Kafka's DelayedHeartbeat: a member waiting on a rebalance stays alive.
            self.timers.schedule(hb_key(group.group_id, member_id),
                                 now + member.session_timeout_ms)
            return Outcome()
        log.info("member.expired", group=group.group_id, member=member_id,
                 generation=group.generation, deadline=deadline, late_ms=now - deadline)
        return self.remove_member(group, member, now,
                                   f"removing member {member_id} on heartbeat expiration")

    def _on_sync_expired(self, group: GroupMetadata, now: int, deadline: int) -> Outcome:
        if group.state not in (COMPLETING, STABLE) or not group.pending_sync:
            return Outcome()
        out = Outcome()
        missing = sorted(group.pending_sync)
        for mid in missing:
            member = group.members.get(mid)
            if member is None:
                continue
            if member.sync_waiter is not None:
                out.replies.append((member.sync_waiter, SyncResult(ErrorCode.unknown_member_id)))
                member.sync_waiter = None
            self.timers.cancel(hb_key(group.group_id, mid))
            group.remove(mid)
            log.info("member.expired", group=group.group_id, member=mid,
                     reason="no SyncGroup before the rebalance timeout", deadline=deadline)
        group.pending_sync.clear()
        return out.add(self.prepare_rebalance(
            group, now, f"removing {missing} on pending sync request expiration"))

    # --- JoinGroup answers ------------------------------------------------------------

    def _join_info(self, group: GroupMetadata, member: ClassicGroupMember, leader: bool,
                   skip_assignment: bool = False) -> JoinResult:
        return JoinResult(
            NO_ERROR,
            member.member_id,
            group.generation,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            self._member_list(group) if leader else [],
            skip_assignment,
        )

    @staticmethod
    def _member_list(group: GroupMetadata) -> list[tuple[str, str | None, bytes]]:
        proto = group.protocol_name
        return [(m.member_id, m.group_instance_id, m.metadata(proto))
                for m in group.members.values()]
