"""Classic-protocol members in consumer groups, as Kafka 4.0 serves them: a JoinGroup,
SyncGroup, Heartbeat or LeaveGroup for a consumer group with members makes (or keeps) the
sender a member of that consumer group that speaks the classic protocol: its subscription
comes from the embedded consumer protocol, its generation is its member epoch, its
assignment is reconciled like any member's and handed out in SyncGroup; a Heartbeat
answers REBALANCE_IN_PROGRESS when it must join again.

This part sits above the consumer group's others: it uses ``consumer.membership``'s
epoch, target and reconciliation steps and ``consumer.lifecycle``'s removals, and they do
not know it. The conversions between classic and consumer groups are
``consumer.conversion``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kafkalite.protocol import consumer_group_records as cg
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..classic.membership import JoinRequest
from ..partitions import GroupPartitions, member_join_key, member_sync_key, session_key
from ..results import AFTER_WRITE, JoinResult, LeaveResult, Outcome, SyncResult, Write
from . import records as cr
from .conversion import encode_assignment
from .group import (
    ConsumerGroup,
    ConsumerGroupMember,
    GroupError,
    MemberState,
    uses_classic_protocol,
)
from .lifecycle import Record, log
from .membership import ConsumerMembership


class ConsumerMigration:
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup of a consumer group's
    classic-protocol members."""

    def __init__(self, registry: GroupPartitions, consumer: ConsumerMembership) -> None:
        self.registry = registry
        self.config = registry.config
        self.timers = registry.timers
        self.topics = registry.topics
        self.consumer = consumer

    # --- JoinGroup ---------------------------------------------------------------------

    def classic_join_to_consumer_group(self, now: int, waiter: Any, group: ConsumerGroup,
                                       req: JoinRequest) -> Outcome:
        """Kafka's ``classicGroupJoinToConsumerGroup``; ``req`` has its rebalance timeout."""
        try:
            return self._classic_join(now, group, req)
        except GroupError as e:
            return Outcome(JoinResult(e.code, req.member_id))

    def _classic_join(self, now: int, group: ConsumerGroup, req: JoinRequest) -> Outcome:
        gid = group.group_id
        member_id, instance_id, protocols = req.member_id, req.group_instance_id, req.protocols
        unknown = member_id == ""
        if unknown:
            member_id = self.registry.new_id()
        if len(group.members) >= self.config.consumer_max_size and (
                member_id not in group.members):
            raise GroupError(ErrorCode.group_max_size_reached,
                             "The consumer group has reached its maximum capacity of "
                             f"{self.config.consumer_max_size} members.")
        if not supports_classic_protocols(group, req.protocol_type, [n for n, _ in protocols]):
            raise GroupError(ErrorCode.inconsistent_group_protocol,
                             f"Member {member_id}'s protocols are not supported.")
        if req.require_known_member_id and unknown and instance_id is None:
            log.info("consumer_group.classic_member_id_required", group=gid, member=member_id)
            return Outcome(JoinResult(ErrorCode.member_id_required, member_id))
        records: list[Record] = []
        if instance_id is None:
            member = group.members.get(member_id) or ConsumerGroupMember(member_id)
        else:
            member = self._classic_static_member(group, member_id, instance_id, unknown,
                                                 records)
        try:
            sub = co.decode_subscription(protocols[0][1])
        except Exception:
            raise GroupError(ErrorCode.unknown_server_error,
                             "Malformed embedded consumer protocol "
                             "in subscription deserialization.") from None
        changes: dict[str, Any] = {
            "client_id": req.client_id, "client_host": req.client_host,
            "subscribed_topic_names": frozenset(sub.topics),
            "classic_member_metadata": cg.ClassicMemberMetadata(
                req.session_timeout_ms, tuple(cg.ClassicProtocol(n, m) for n, m in protocols)),
        }
        if instance_id is not None:
            changes["instance_id"] = instance_id
        if sub.rack_id is not None:
            changes["rack_id"] = sub.rack_id
        if req.rebalance_timeout_ms != -1:
            changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
        updated = replace(member, **changes)
        bump = False
        if updated != member:
            records.append(cr.member_subscription_record(gid, updated))
            bump = updated.subscribed_topic_names != member.subscribed_topic_names
        group_epoch, metadata = self.consumer.epoch_and_metadata(group, member, updated, bump,
                                                                 records)
        owned = [(t.topic_id, tp.partitions) for tp in sub.owned_partitions
                 if (t := self.topics.by_name.get(tp.topic)) is not None]
        new = self.consumer.target_and_reconcile(group, group_epoch, member, updated, metadata,
                                         owned, bump, records)
        result = JoinResult(NO_ERROR, new.member_id, new.member_epoch, "consumer", protocols[0][0])
        rebalance = new.rebalance_timeout_ms
        mid = new.member_id

        def joined(t: int) -> None:
            self.timers.cancel(member_join_key(gid, mid))
            self.timers.schedule(session_key(gid, mid), t + req.session_timeout_ms)
            self.timers.schedule(member_sync_key(gid, mid), t + rebalance)
            log.info("consumer_group.classic_member_joined", group=gid, member=mid,
                     epoch=new.member_epoch)

        if not records:
            joined(now)
            return Outcome(result)

        def then(err: ErrorCode, t: int) -> Outcome:
            if err is not NO_ERROR:
                return Outcome(JoinResult(err, ""))
            joined(t)
            return Outcome(result)

        return Outcome(AFTER_WRITE, writes=[
            Write(self.registry.partition_for(gid), gid, records, then)])

    def _classic_static_member(self, group: ConsumerGroup, member_id: str, instance_id: str,
                               create: bool, records: list[Record]) -> ConsumerGroupMember:
        existing = group.static_member(instance_id)
        if create:
            if existing is None:
                return group.members.get(member_id) or ConsumerGroupMember(member_id)
            new = replace(existing, member_id=member_id, member_epoch=0,
                          previous_member_epoch=0)
            records.extend(cr.replace_member_records(group, existing, new))
            log.info("consumer_group.static_member_replaced", group=group.group_id,
                     instance=instance_id, old_member=existing.member_id, member=member_id,
                     protocol="classic")
            return new
        if existing is None:
            raise GroupError(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(ErrorCode.fenced_instance_id,
                             f"Static member {member_id} with instance id {instance_id} was "
                             f"fenced by member {existing.member_id}.")
        return existing

    # --- SyncGroup, Heartbeat, LeaveGroup ------------------------------------------------

    def _classic_member(self, group: ConsumerGroup, member_id: str,
                        instance_id: str | None) -> ConsumerGroupMember:
        """Kafka's ``validateConsumerGroupMember``; the member must speak the classic protocol."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise GroupError(ErrorCode.unknown_member_id,
                                 f"Member {member_id} is not a member of "
                                 f"group {group.group_id}.")
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise GroupError(ErrorCode.unknown_member_id,
                                 f"Member with instance id {instance_id} "
                                 f"is not a member of group "
                                 f"{group.group_id}.")
            if member.member_id != member_id:
                raise GroupError(ErrorCode.fenced_instance_id)
        if not uses_classic_protocol(member):
            raise GroupError(ErrorCode.unknown_member_id,
                             f"Member {member.member_id} does not use the classic protocol.")
        return member

    def classic_sync_to_consumer_group(
        self, now: int, group: ConsumerGroup, *, member_id: str, instance_id: str | None,
        generation: int, protocol_type: str | None, protocol_name: str | None,
    ) -> Outcome:
        """Kafka's ``classicGroupSyncToConsumerGroup``: the member's assignment, unless the
        group moved on (REBALANCE_IN_PROGRESS: join again)."""
        gid = group.group_id
        try:
            member = self._classic_member(group, member_id, instance_id)
            if generation != member.member_epoch:
                raise GroupError(ErrorCode.illegal_generation)
            classic = member.classic_member_metadata
            assert classic is not None
            name = classic.supported_protocols[0].name
            if (protocol_type is not None and protocol_type != "consumer") or (
                    protocol_name is not None and protocol_name != name):
                raise GroupError(ErrorCode.inconsistent_group_protocol)
            self._throw_if_rebalance_in_progress(group, member, now)
        except GroupError as e:
            return Outcome(SyncResult(e.code))
        self.timers.cancel(member_sync_key(gid, member.member_id))
        self.timers.schedule(session_key(gid, member.member_id), now + classic.session_timeout_ms)
        return Outcome(SyncResult(NO_ERROR, protocol_type, protocol_name,
                                  self._classic_assignment(member)))

    def _throw_if_rebalance_in_progress(self, group: ConsumerGroup, member: ConsumerGroupMember,
                                        now: int) -> None:
        if (group.group_epoch > member.member_epoch
                and member.state is not MemberState.UNREVOKED_PARTITIONS):
            self._schedule_join_timeout(group.group_id, member, now)
            raise GroupError(ErrorCode.rebalance_in_progress)

    def _schedule_join_timeout(self, gid: str, member: ConsumerGroupMember, now: int) -> None:
        key = member_join_key(gid, member.member_id)
        if key not in self.timers:
            self.timers.schedule(key, now + member.rebalance_timeout_ms)

    def _classic_assignment(self, member: ConsumerGroupMember) -> bytes:
        """The member's partitions in the embedded consumer protocol, in its version."""
        classic = member.classic_member_metadata
        assert classic is not None
        return encode_assignment(member.assigned_partitions, self.topics.by_id,
                                 classic.supported_protocols[0].metadata)

    def classic_heartbeat_to_consumer_group(self, now: int, group: ConsumerGroup,
                                            member_id: str, instance_id: str | None,
                                            generation: int) -> ErrorCode:
        """Kafka's ``classicGroupHeartbeatToConsumerGroup``."""
        try:
            member = self._classic_member(group, member_id, instance_id)
        except GroupError as e:
            return e.code
        if generation != member.member_epoch:
            return ErrorCode.illegal_generation
        classic = member.classic_member_metadata
        assert classic is not None
        self.timers.schedule(session_key(group.group_id, member.member_id),
                             now + classic.session_timeout_ms)
        if (member.member_epoch < group.group_epoch
                or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not waiting_on_unreleased(group, member))):
            self._schedule_join_timeout(group.group_id, member, now)
            return ErrorCode.rebalance_in_progress
        return NO_ERROR

    def classic_leave_to_consumer_group(
        self, now: int, group: ConsumerGroup,
        members: Sequence[tuple[str, str | None, str | None]],
    ) -> Outcome:
        """Kafka's ``classicGroupLeaveToConsumerGroup``: (member id, instance id, reason)."""
        gid = group.group_id
        results: list[tuple[str, str | None, ErrorCode]] = []
        leaving: list[ConsumerGroupMember] = []
        for member_id, instance_id, reason in members:
            try:
                if instance_id is None:
                    member = self._classic_member(group, member_id, None)
                else:
                    static = group.static_member(instance_id)
                    if static is None:
                        raise GroupError(ErrorCode.unknown_member_id)
                    if member_id and static.member_id != member_id:
                        raise GroupError(ErrorCode.fenced_instance_id)
                    if not uses_classic_protocol(static):
                        raise GroupError(ErrorCode.unknown_member_id)
                    member, member_id = static, static.member_id
            except GroupError as e:
                results.append((member_id, instance_id, e.code))
                continue
            if member not in leaving:
                leaving.append(member)
            log.info("consumer_group.classic_member_left", group=gid, member=member_id,
                     instance=instance_id, reason=reason or "not provided")
            results.append((member_id, instance_id, NO_ERROR))
        response = LeaveResult(NO_ERROR, results)
        if not leaving:
            return Outcome(response)
        records = self.consumer.removal_records(group, leaving)
        ids = [m.member_id for m in leaving]

        def then(err: ErrorCode, _t: int) -> Outcome:
            if err is not NO_ERROR:
                return Outcome(LeaveResult(err))
            for mid in ids:
                self.consumer.cancel_member_timers(gid, mid)
            return Outcome(response)

        return Outcome(AFTER_WRITE, writes=[
            Write(self.registry.partition_for(gid), gid, records, then)])


# --- pure helpers ---------------------------------------------------------------------------


def supports_classic_protocols(group: ConsumerGroup, protocol_type: str,
                               names: Sequence[str]) -> bool:
    """``ConsumerGroup.supportsClassicProtocols``: the consumer protocol, and a protocol
    every classic-protocol member supports."""
    if protocol_type != "consumer":
        return False
    if not group.members:
        return bool(names)
    classic = [m.classic_member_metadata for m in group.members.values()
               if m.classic_member_metadata is not None]
    return any(all(any(p.name == n for p in c.supported_protocols) for c in classic)
               for n in names)


def waiting_on_unreleased(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """``ConsumerGroup.waitingOnUnreleasedPartition``: a target partition of the member
    is still owned by another member."""
    if member.state is not MemberState.UNRELEASED_PARTITIONS:
        return False
    for topic_id, parts in group.target_assignment.get(member.member_id, {}).items():
        assigned = member.assigned_partitions.get(topic_id, frozenset())
        for p in parts:
            if p not in assigned and group.current_partition_epoch(topic_id, p) != -1:
                return True
    return False
