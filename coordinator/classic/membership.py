"""Group membership requests of the classic-group core: JoinGroup, SyncGroup, Heartbeat and
LeaveGroup, as Kafka's classic GroupCoordinator answers them.

Membership is the one place where the core changes state before its records are written,
because Kafka's classic groups do: joining, leaving and rebalancing change the in-memory
group (members, their protocols and parked requests, the state, generation and leader)
at once, and the GroupMetadata record that persists the outcome is written when a
generation's assignment is stored (SyncGroup from the leader), when the group empties, and
when a static member is replaced. Replay of that record then only fills in what it adds
(the assignments); loading builds the group from it alone. A failed write is answered as
Kafka does: the assignment is reset and a new rebalance starts, or a replaced static
member is put back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..partitions import PartitionState, hb_key, join_key, sync_key
from ..results import JoinResult, LeaveResult, Outcome, SyncResult, Write
from .group import ClassicGroupMember, GroupMetadata
from .rebalance import Rebalancing, log
from .records import group_from_record, group_record
from .states import COMPLETING, DEAD, EMPTY, PREPARING, STABLE


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroup request, version independent (as ``offsets.store.CommitRequest`` is for
    OffsetCommit): built once by the handler, read by every part that serves it."""

    group_id: str
    member_id: str
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    #: -1: not sent (v0); the session timeout then (``with_rebalance_timeout``).
    rebalance_timeout_ms: int = -1
    group_instance_id: str | None = None
    #: KIP-394 (v4+): an unknown member gets an id and must join again with it.
    require_known_member_id: bool = False
    client_id: str = ""
    client_host: str = ""
    reason: str | None = None
    version: int = 9

    def with_rebalance_timeout(self) -> JoinRequest:
        """The request with its rebalance timeout: v0 has none, Kafka uses the session's."""
        if self.rebalance_timeout_ms >= 0:
            return self
        return replace(self, rebalance_timeout_ms=self.session_timeout_ms)


class Membership(Rebalancing):
    """The classic groups' part of the coordinator: their requests, rebalances, records."""

    # --- JoinGroup -------------------------------------------------------------------

    def join(self, now: int, waiter: Any, req: JoinRequest) -> Outcome:
        group_id, member_id = req.group_id, req.member_id
        err = self.registry.group_status(group_id)
        if err is not NO_ERROR:
            return Outcome(JoinResult(err, member_id))
        c = self.config
        if not c.min_session_timeout_ms <= req.session_timeout_ms <= c.max_session_timeout_ms:
            return Outcome(JoinResult(ErrorCode.invalid_session_timeout, member_id))
        req = req.with_rebalance_timeout()
        ps = self.partitions[self.registry.partition_for(group_id)]
        group = ps.groups.get(group_id)
        unknown = member_id == ""
        if group is None:
            if not unknown:
                return Outcome(JoinResult(ErrorCode.unknown_member_id, member_id))
            group = GroupMetadata(group_id, ps.partition, current_state_timestamp=now)
            ps.groups[group_id] = group
        if not self._accept_joining(group, member_id):
            return Outcome(JoinResult(ErrorCode.group_max_size_reached, member_id))
        if group.state is DEAD:
            return Outcome(JoinResult(ErrorCode.coordinator_not_available, member_id))
        if not group.supports_protocols(req.protocol_type, req.protocols,
                                        None if unknown else member_id):
            return Outcome(JoinResult(ErrorCode.inconsistent_group_protocol, member_id))
        if unknown:
            return self._join_new_member(group, now, req, waiter)
        return self._join_current_member(group, now, member_id, req, waiter)

    def _accept_joining(self, group: GroupMetadata, member_id: str) -> bool:
        limit = self.config.max_size
        if group.state in (EMPTY, DEAD):
            return True
        if group.state is PREPARING:
            m = group.members.get(member_id)
            return (m is not None and m.awaiting_join) or group.num_awaiting_join() < limit
        return member_id in group.members or len(group.members) < limit

    def _join_new_member(
        self, group: GroupMetadata, now: int, req: JoinRequest, waiter: Any
    ) -> Outcome:
        new_id = f"{req.group_instance_id or req.client_id}-{self.registry.new_id()}"
        if req.group_instance_id is not None:
            return self._join_static(group, now, new_id, req, waiter)
        if req.require_known_member_id:
            # KIP-394: hand out an id; the member must join again with it.
            group.pending_members.add(new_id)
            self.timers.schedule(hb_key(group.group_id, new_id), now + req.session_timeout_ms)
            log.info("member.pending", group=group.group_id, member=new_id)
            return Outcome(JoinResult(ErrorCode.member_id_required, new_id))
        return self._add_member_and_rebalance(group, now, new_id, req, waiter)

    def _join_current_member(
        self, group: GroupMetadata, now: int, member_id: str, req: JoinRequest, waiter: Any
    ) -> Outcome:
        if group.is_pending(member_id):
            if req.group_instance_id is not None:
                return Outcome(JoinResult(ErrorCode.unknown_member_id, member_id))
            return self._add_member_and_rebalance(group, now, member_id, req, waiter)
        if group.is_static_member_fenced(req.group_instance_id, member_id):
            return Outcome(JoinResult(ErrorCode.fenced_instance_id, member_id))
        member = group.members.get(member_id)
        if member is None or group.state is EMPTY:
            return Outcome(JoinResult(ErrorCode.unknown_member_id, member_id))
        if group.state is PREPARING:
            return self._update_member_and_rebalance(group, member, now, req, waiter)
        if group.state is COMPLETING:
            if member.matches(req.protocols):
                # A retried join: answer with the generation already formed.
                return Outcome(self._join_info(group, member, group.is_leader(member_id)))
            return self._update_member_and_rebalance(group, member, now, req, waiter)
        # Stable: a leader's rejoin always rebalances (it may see new topics).
        if group.is_leader(member_id) or not member.matches(req.protocols):
            return self._update_member_and_rebalance(group, member, now, req, waiter)
        return Outcome(self._join_info(group, member, False))

    def _join_static(self, group: GroupMetadata, now: int, new_id: str, req: JoinRequest,
                     waiter: Any) -> Outcome:
        old_id = group.static_member_id(req.group_instance_id)
        member = group.members.get(old_id) if old_id is not None else None
        if old_id is None or member is None:
            return self._add_member_and_rebalance(group, now, new_id, req, waiter)
        out = Outcome()
        was_leader = group.is_leader(old_id)
        current_leader = group.leader_id or ""
        old_waiters = self.replace_static_member(group, member, new_id, now)
        out.replies.extend(old_waiters)
        log.info("member.replaced", group=group.group_id, instance=req.group_instance_id,
                 old_member=old_id, member=new_id, reason=req.reason)
        old_meta = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        if group.state is STABLE and member.protocol_type == req.protocol_type:
            # As Kafka's updateStaticMemberAndRebalance: take the new subscription, and
            # rebalance only if it changes the group's selected protocol.
            member.protocols = list(req.protocols)
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
            member.session_timeout_ms = req.session_timeout_ms
        if group.state is STABLE and member.protocol_type == req.protocol_type \
                and group.select_protocol() == group.protocol_name:
            # KIP-345: no rebalance; persist the new member id first.
            key, value = group_record(group)

            def then(err: ErrorCode, t: int) -> Outcome:
                if err is not NO_ERROR:
                    if group.members.get(new_id) is member:
                        self.replace_static_member(group, member, old_id, t)
                        (member.protocols, member.rebalance_timeout_ms,
                         member.session_timeout_ms) = old_meta
                    return Outcome(replies=[(waiter, JoinResult(err, ""))])
                self.timers.schedule(hb_key(group.group_id, new_id), t + member.session_timeout_ms)
                # KIP-814: a static leader gets the members but need not assign again.
                res = self._join_info(group, member, was_leader, skip_assignment=was_leader)
                if req.version < 9:
                    # Before v9, Kafka answers with no members and the old leader id, so a
                    # rejoining leader acts as a follower and runs no assignment that the
                    # Stable group would ignore.
                    res.members, res.leader, res.skip_assignment = [], current_leader, False
                return Outcome(replies=[(waiter, res)])

            out.writes.append(Write(group.partition, group.group_id, [(key, value)], then))
            return out
        return out.add(self._update_member_and_rebalance(group, member, now, req, waiter))

    def replace_static_member(
        self, group: GroupMetadata, member: ClassicGroupMember, new_id: str, now: int
    ) -> list[tuple[Any, Any]]:
        """Re-key a static member; its parked requests are answered FENCED_INSTANCE_ID."""
        old_id = member.member_id
        replies: list[tuple[Any, Any]] = []
        if member.join_waiter is not None:
            replies.append((member.join_waiter, JoinResult(ErrorCode.fenced_instance_id, old_id)))
            member.join_waiter = None
        if member.sync_waiter is not None:
            replies.append((member.sync_waiter, SyncResult(ErrorCode.fenced_instance_id)))
            member.sync_waiter = None
        deadline = self.timers.deadline(hb_key(group.group_id, old_id))
        self.timers.cancel(hb_key(group.group_id, old_id))
        members = group.members
        group.members = {(new_id if k == old_id else k): v for k, v in members.items()}
        member.member_id = new_id
        if group.leader_id == old_id:
            group.leader_id = new_id
        if old_id in group.pending_sync:
            group.pending_sync.discard(old_id)
            group.pending_sync.add(new_id)
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = new_id
        self.timers.schedule(hb_key(group.group_id, new_id),
                             deadline if deadline is not None else now + member.session_timeout_ms)
        return replies

    def _add_member_and_rebalance(
        self, group: GroupMetadata, now: int, member_id: str, req: JoinRequest, waiter: Any
    ) -> Outcome:
        member = ClassicGroupMember(
            member_id, req.group_instance_id, req.client_id, req.client_host,
            req.rebalance_timeout_ms, req.session_timeout_ms, req.protocol_type,
            list(req.protocols),
            join_waiter=waiter, join_version=req.version, is_new=True,
        )
        if group.state is PREPARING and group.initial_join_remaining_ms is not None:
            group.new_member_added = True
        group.add(member)
        group.pending_members.discard(member_id)
        self.timers.schedule(hb_key(group.group_id, member_id),
                             now + self.config.new_member_join_timeout_ms)
        log.info("member.joined", group=group.group_id, member=member_id,
                 instance=req.group_instance_id, client_id=req.client_id, reason=req.reason)
        out = self._maybe_prepare_rebalance(group, now, f"adding new member {member_id}"
                                            + (f" with reason: {req.reason}" if req.reason else ""))
        return out.add(self._try_complete_join(group, now))

    def _update_member_and_rebalance(
        self, group: GroupMetadata, member: ClassicGroupMember, now: int, req: JoinRequest,
        waiter: Any
    ) -> Outcome:
        out = Outcome()
        if member.join_waiter is not None and member.join_waiter is not waiter:
            # A newer join of the same member supersedes the parked one.
            out.replies.append((member.join_waiter,
                                JoinResult(ErrorCode.rebalance_in_progress, member.member_id)))
        member.protocols = list(req.protocols)
        member.protocol_type = req.protocol_type
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.join_waiter = waiter
        member.join_version = req.version
        out.add(self._maybe_prepare_rebalance(
            group, now, f"updating metadata for member {member.member_id}"
            + (f" with reason: {req.reason}" if req.reason else "")))
        return out.add(self._try_complete_join(group, now))

    # --- SyncGroup -------------------------------------------------------------------

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
        err = self.registry.group_status(group_id)
        if err is not NO_ERROR:
            return Outcome(SyncResult(err))
        group = self.registry.group(group_id)
        if group is None:
            return Outcome(SyncResult(ErrorCode.unknown_member_id))
        if group.state is DEAD:
            return Outcome(SyncResult(ErrorCode.coordinator_not_available))
        if group.is_static_member_fenced(group_instance_id, member_id):
            return Outcome(SyncResult(ErrorCode.fenced_instance_id))
        member = group.members.get(member_id)
        if member is None:
            return Outcome(SyncResult(ErrorCode.unknown_member_id))
        if generation != group.generation:
            return Outcome(SyncResult(ErrorCode.illegal_generation))
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return Outcome(SyncResult(ErrorCode.inconsistent_group_protocol))
        if group.state is EMPTY:
            return Outcome(SyncResult(ErrorCode.unknown_member_id))
        if group.state is PREPARING:
            return Outcome(SyncResult(ErrorCode.rebalance_in_progress))
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            self.timers.cancel(sync_key(group_id))
        if group.state is STABLE:
            self.timers.schedule(hb_key(group_id, member_id), now + member.session_timeout_ms)
            return Outcome(SyncResult(NO_ERROR, group.protocol_type, group.protocol_name,
                                      member.assignment))
        # CompletingRebalance
        if member.sync_waiter is not None and member.sync_waiter is not waiter:
            old = member.sync_waiter
            member.sync_waiter = waiter
            out = Outcome(replies=[(old, SyncResult(ErrorCode.rebalance_in_progress))])
        else:
            member.sync_waiter = waiter
            out = Outcome()
        if not group.is_leader(member_id):
            return out
        full = {mid: assignments.get(mid, b"") for mid in group.members}
        key, value = group_record(group, full)
        gen = group.generation

        def then(err: ErrorCode, t: int) -> Outcome:
            if group.state is not COMPLETING or group.generation != gen:
                return Outcome()
            if err is not NO_ERROR:
                log.warning("group.store_failed", group=group_id, generation=gen,
                            error=err.name)
                res = self._reset_assignment(group, err)
                return res.add(self._maybe_prepare_rebalance(
                    group, t, f"error {err.name} when storing group assignment during SyncGroup"
                    f" (member: {member_id})"))
            res = Outcome()
            for m in group.members.values():
                if m.sync_waiter is not None:
                    res.replies.append((m.sync_waiter, SyncResult(
                        NO_ERROR, group.protocol_type, group.protocol_name, m.assignment)))
                    m.sync_waiter = None
                self.timers.schedule(hb_key(group_id, m.member_id), t + m.session_timeout_ms)
            group.transition(STABLE, t)
            log.info("group.stable", group=group_id, generation=gen)
            return res

        out.writes.append(Write(group.partition, group_id, [(key, value)], then))
        return out

    # --- Heartbeat -------------------------------------------------------------------

    def heartbeat(self, now: int, group_id: str, member_id: str,
                  group_instance_id: str | None, generation: int) -> ErrorCode:
        # The hot path: plain dict lookups, one timer update, no allocation.
        p = self.partition_of.get(group_id)
        ps = self.partitions.get(p if p is not None else self.registry.partition_for(group_id))
        if ps is None or ps.loading or not group_id:
            return self.registry.group_status(group_id)
        group = ps.groups.get(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        state = group.state
        if state is DEAD:
            return ErrorCode.coordinator_not_available
        if group_instance_id is not None and group.is_static_member_fenced(group_instance_id,
                                                                           member_id):
            return ErrorCode.fenced_instance_id
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if generation != group.generation:
            return ErrorCode.illegal_generation
        if state is EMPTY:
            return ErrorCode.unknown_member_id
        self.timers.schedule(hb_key(group_id, member_id), now + member.session_timeout_ms)
        if state is PREPARING:
            return ErrorCode.rebalance_in_progress
        return NO_ERROR

    # --- LeaveGroup ------------------------------------------------------------------

    def leave(self, now: int, group_id: str,
              members: list[tuple[str, str | None, str | None]]) -> Outcome:
        """``members``: (member id, group instance id, reason)."""
        err = self.registry.group_status(group_id)
        if err is not NO_ERROR:
            return Outcome(LeaveResult(err))
        group = self.registry.group(group_id)
        if group is None:
            return Outcome(LeaveResult(NO_ERROR, [(m, i, ErrorCode.unknown_member_id)
                                                  for m, i, _r in members]))
        if group.state is DEAD:
            return Outcome(LeaveResult(ErrorCode.coordinator_not_available))
        out = Outcome()
        results: list[tuple[str, str | None, ErrorCode]] = []
        for member_id, instance_id, reason in members:
            mid = member_id
            if mid == "" and instance_id is not None:
                found = group.static_member_id(instance_id)
                if found is None:
                    results.append((member_id, instance_id, ErrorCode.unknown_member_id))
                    continue
                mid = found
            elif group.is_static_member_fenced(instance_id, mid):
                results.append((member_id, instance_id, ErrorCode.fenced_instance_id))
                continue
            if group.is_pending(mid):
                group.pending_members.discard(mid)
                self.timers.cancel(hb_key(group_id, mid))
                out.add(self._try_complete_join(group, now))
                results.append((member_id, instance_id, NO_ERROR))
                continue
            member = group.members.get(mid)
            if member is None:
                results.append((member_id, instance_id, ErrorCode.unknown_member_id))
                continue
            log.info("member.left", group=group_id, member=mid, instance=instance_id,
                     reason=reason or "")
            out.add(self.remove_member(group, member, now,
                                        f"removing member {mid} on LeaveGroup"
                                        + (f" with reason: {reason}" if reason else "")))
            results.append((member_id, instance_id, NO_ERROR))
        out.response = LeaveResult(NO_ERROR, results)
        return out


    # --- replay ----------------------------------------------------------------------

    def replay(self, ps: PartitionState, key: co.GroupMetadataKey,
               value: co.GroupMetadataValue | None) -> None:
        """A classic group's record (its metadata, or a tombstone)."""
        assert value is None or isinstance(value, co.GroupMetadataValue)
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
            ps.groups[gid] = group_from_record(gid, ps.partition, value)
            return
        # A live write: the in-memory group already holds everything but assignments.
        for rec in value.members:
            m = group.members.get(rec.member_id)
            if m is not None:
                m.assignment = rec.assignment

    def schedule_loaded(self, ps: PartitionState, now: int) -> None:
        """A loaded partition's members' sessions."""
        for group in ps.groups.values():
            for m in group.members.values():
                self.timers.schedule(hb_key(group.group_id, m.member_id),
                                     now + m.session_timeout_ms)

    def unload(self, ps: PartitionState, out: Outcome) -> None:
        """Parked JoinGroup and SyncGroup requests of a partition given up are answered
        NOT_COORDINATOR, as Kafka does; its timers go."""
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
