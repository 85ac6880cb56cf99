"""Classic-protocol members in consumer groups, and the conversions between classic and
consumer groups, as Kafka 4.0 does them (``group.consumer.migration.policy``).

- A JoinGroup, SyncGroup, Heartbeat or LeaveGroup for a consumer group with members
  makes (or keeps) the sender a member of that consumer group that speaks the classic
  protocol: its subscription comes from the embedded consumer protocol, its generation is
  its member epoch, its assignment is reconciled like any member's and handed out in
  SyncGroup; a Heartbeat answers REBALANCE_IN_PROGRESS when it must join again.
- An empty group of either type is replaced by the other type's first member (its
  records are deleted; committed offsets stay). A non-empty classic group is converted
  to a consumer group when a consumer-protocol member joins (upgrade), and a consumer
  group back to a classic group when its last consumer-protocol member leaves and
  classic members remain (downgrade), when the policy allows.

As for classic groups, the parked requests of a classic group that is converted are
answered before the conversion is written (REBALANCE_IN_PROGRESS), and the classic group
that a downgrade writes starts a rebalance once its record is in (Kafka's
``convertToClassicGroup`` sets that state directly).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kafkalite.protocol import consumer_group_records as cg
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..classic.group import GroupMetadata
from ..classic.membership import Membership
from ..partitions import GroupPartitions, hb_key, member_join_key, member_sync_key, session_key
from ..results import (
    AFTER_WRITE,
    ConsumerHeartbeatResult,
    JoinResult,
    LeaveResult,
    Outcome,
    SyncResult,
    Write,
)
from . import records as cr
from .group import (
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    replay,
)
from .lifecycle import GroupError, Record, log, uses_classic_protocol
from .membership import ConsumerMembership

#: The highest ConsumerProtocolAssignment version (an answer is in the member's version).
_ASSIGNMENT_MAX_VERSION = 3


class ConsumerMigration:
    """Classic requests for a group id, whichever kind of group holds it: a classic
    group's go to the classic part, a consumer group's classic-protocol members are
    served here, and the conversions between the kinds are made here."""

    def __init__(self, registry: GroupPartitions, classic: Membership,
                 consumer: ConsumerMembership) -> None:
        self.registry = registry
        self.config = registry.config
        self.timers = registry.timers
        self.topics = registry.topics
        self.classic = classic
        self.consumer = consumer
    # --- JoinGroup ---------------------------------------------------------------------

    def classic_join_to_consumer_group(
        self, now: int, waiter: Any, group: ConsumerGroup, *, member_id: str,
        instance_id: str | None, client_id: str, client_host: str,
        rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
        protocols: Sequence[tuple[str, bytes]], require_known_member_id: bool,
    ) -> Outcome:
        """Kafka's ``classicGroupJoinToConsumerGroup``."""
        requested = member_id
        try:
            return self._classic_join(now, group, member_id, instance_id, client_id,
                                      client_host, rebalance_timeout_ms, session_timeout_ms,
                                      protocol_type, protocols, require_known_member_id)
        except GroupError as e:
            return Outcome(JoinResult(e.code, requested))

    def _classic_join(self, now: int, group: ConsumerGroup, member_id: str,
                      instance_id: str | None, client_id: str, client_host: str,
                      rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                      protocols: Sequence[tuple[str, bytes]], require_known: bool) -> Outcome:
        gid = group.group_id
        unknown = member_id == ""
        if unknown:
            member_id = self.registry.new_id()
        if len(group.members) >= self.config.consumer_max_size and (
                member_id not in group.members):
            raise GroupError(ErrorCode.group_max_size_reached,
                             "The consumer group has reached its maximum capacity of "
                             f"{self.config.consumer_max_size} members.")
        if not supports_classic_protocols(group, protocol_type, [n for n, _ in protocols]):
            raise GroupError(ErrorCode.inconsistent_group_protocol,
                             f"Member {member_id}'s protocols are not supported.")
        if require_known and unknown and instance_id is None:
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
            "client_id": client_id, "client_host": client_host,
            "subscribed_topic_names": frozenset(sub.topics),
            "classic_member_metadata": cg.ClassicMemberMetadata(
                session_timeout_ms, tuple(cg.ClassicProtocol(n, m) for n, m in protocols)),
        }
        if instance_id is not None:
            changes["instance_id"] = instance_id
        if sub.rack_id is not None:
            changes["rack_id"] = sub.rack_id
        if rebalance_timeout_ms != -1:
            changes["rebalance_timeout_ms"] = rebalance_timeout_ms
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
            self.timers.schedule(session_key(gid, mid), t + session_timeout_ms)
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

    # --- conversions -------------------------------------------------------------------

    def maybe_upgrade(self, classic: object, records: list[Record], out: Outcome,
                       now: int) -> ConsumerGroup | None:
        """Kafka's ``validateOnlineUpgrade`` and ``convertToConsumerGroup``: the classic
        group's members become classic-protocol members of a consumer group at its
        generation, keeping their assignments; the group as it will be once written."""
        assert isinstance(classic, GroupMetadata)
        gid = classic.group_id
        if not self.config.upgrade_enabled:
            log.info("consumer_group.upgrade_disabled", group=gid)
            return None
        if classic.protocol_type != "consumer":
            log.info("consumer_group.upgrade_refused", group=gid,
                     reason="the group does not use the consumer embedded protocol")
            return None
        if len(classic.members) > self.config.consumer_max_size:
            log.info("consumer_group.upgrade_refused", group=gid,
                     reason="the group size exceeds the consumer group maximum size")
            return None
        try:
            conversion = consumer_group_records_from_classic(classic, self.topics.by_name)
        except ValueError as e:
            raise GroupError(ErrorCode.group_id_not_found,
                             f"Cannot upgrade the classic group {gid} to consumer group "
                             f"because the embedded consumer protocol is malformed: {e}."
                             ) from None
        for m in classic.members.values():
            if m.join_waiter is not None:
                out.replies.append((m.join_waiter,
                                    JoinResult(ErrorCode.rebalance_in_progress, m.member_id)))
                m.join_waiter = None
            if m.sync_waiter is not None:
                out.replies.append((m.sync_waiter, SyncResult(ErrorCode.rebalance_in_progress)))
                m.sync_waiter = None
        records.append((co.GroupMetadataKey(gid), None))
        records.extend(conversion)
        scratch: dict[str, ConsumerGroup] = {}
        for key, value in conversion:
            replay(scratch, key, value)  # type: ignore[arg-type]
        group = scratch[gid]
        for m in classic.members.values():
            self.timers.schedule(session_key(gid, m.member_id), now + m.session_timeout_ms)
        log.info("consumer_group.upgraded", group=gid, members=len(group.members),
                 epoch=group.group_epoch)
        return group

    def maybe_downgrade(self, group: ConsumerGroup, member: ConsumerGroupMember, now: int
                         ) -> Callable[[object], Outcome] | None:
        """Kafka's ``validateOnlineDowngradeWithFencedMember`` and ``convertToClassicGroup``:
        the last consumer-protocol member leaves and classic members remain."""
        gid = group.group_id
        others = [m for m in group.members.values() if m.member_id != member.member_id]
        if uses_classic_protocol(member) or not others or not all(
                uses_classic_protocol(m) for m in others):
            return None
        if not self.config.downgrade_enabled:
            log.info("consumer_group.downgrade_disabled", group=gid)
            return None
        if len(others) > self.config.max_size:
            log.info("consumer_group.downgrade_refused", group=gid,
                     reason="its size is greater than the classic group max size")
            return None
        value = classic_group_value(group, others, self.topics.by_id, now)
        records: list[Record] = [*cr.group_tombstone_records(group),  # type: ignore[list-item]
                                 (co.GroupMetadataKey(gid), value)]
        ids = list(group.members)
        partition = self.registry.partition_for(gid)

        def downgrade(response: object) -> Outcome:
            def then(err: ErrorCode, t: int) -> Outcome:
                if err is not NO_ERROR:
                    return Outcome(None if response is None else ConsumerHeartbeatResult(err))
                for mid in ids:
                    self.consumer.cancel_member_timers(gid, mid)
                classic = self.registry.group(gid)
                out = Outcome(response)
                if classic is None:
                    return out
                for m in classic.members.values():
                    self.timers.schedule(hb_key(gid, m.member_id), t + m.session_timeout_ms)
                log.info("consumer_group.downgraded", group=gid, members=len(classic.members))
                return out.add(self.classic.prepare_rebalance(
                    classic, t, f"Downgrade group {gid} from consumer to classic."))

            return Outcome(AFTER_WRITE, writes=[Write(partition, gid, records, then)])

        return downgrade


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


def _version(metadata: bytes) -> int:
    return int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0


def encode_assignment(assignment: Mapping[uuid.UUID, frozenset[int]],
                      topics_by_id: Mapping[uuid.UUID, Any], metadata: bytes) -> bytes:
    """An assignment by topic id as a ConsumerProtocolAssignment by topic name (topics
    gone since are left out), in the version of the member's subscription."""
    parts = []
    for topic_id in sorted(assignment, key=lambda t: str(t)):
        t = topics_by_id.get(topic_id)
        if t is not None:
            parts.append(co.TopicPartitions(t.name, tuple(sorted(assignment[topic_id]))))
    parts.sort(key=lambda tp: tp.topic)
    version = min(max(_version(metadata), 0), _ASSIGNMENT_MAX_VERSION)
    return co.encode_assignment(co.ConsumerProtocolAssignment(tuple(parts), None, version))


def consumer_group_records_from_classic(classic: GroupMetadata, topics_by_name: Mapping[str, Any]
                                        ) -> list[Record]:
    """``ConsumerGroup.fromClassicGroup`` then ``createConsumerGroupRecords``: every member
    at the classic generation, Stable, with its classic assignment as its target."""
    gid = classic.group_id
    epoch = classic.generation
    members: list[ConsumerGroupMember] = []
    owned: set[tuple[uuid.UUID, int]] = set()
    for m in classic.members.values():
        try:
            sub = co.decode_subscription(m.metadata(classic.protocol_name))
            assigned_tps = (co.decode_assignment(m.assignment).assigned_partitions
                            if m.assignment else ())
        except Exception as e:
            raise ValueError(str(e)) from None
        assigned: dict[uuid.UUID, frozenset[int]] = {}
        for tp in assigned_tps:
            t = topics_by_name.get(tp.topic)
            if t is None:
                continue
            for p in tp.partitions:
                if (t.topic_id, p) in owned:
                    raise ValueError(f"partition {tp.topic}-{p} is assigned twice")
                owned.add((t.topic_id, p))
            assigned[t.topic_id] = assigned.get(t.topic_id, frozenset()) | set(tp.partitions)
        members.append(ConsumerGroupMember(
            m.member_id, member_epoch=epoch, previous_member_epoch=epoch,
            state=MemberState.STABLE, instance_id=m.group_instance_id, rack_id=sub.rack_id,
            rebalance_timeout_ms=m.rebalance_timeout_ms, client_id=m.client_id,
            client_host=m.client_host, subscribed_topic_names=frozenset(sub.topics),
            assigned_partitions=assigned,
            classic_member_metadata=cg.ClassicMemberMetadata(
                m.session_timeout_ms, tuple(cg.ClassicProtocol(n, md) for n, md in m.protocols))))
    records: list[Record] = [cr.member_subscription_record(gid, m) for m in members]
    records.append(cr.group_epoch_record(gid, epoch))
    records.extend(cr.target_assignment_record(gid, m.member_id, m.assigned_partitions)
                   for m in members)
    records.append(cr.target_assignment_epoch_record(gid, epoch))
    records.extend(cr.current_assignment_record(gid, m) for m in members)
    return records


def classic_group_value(group: ConsumerGroup, members: Sequence[ConsumerGroupMember],
                        topics_by_id: Mapping[uuid.UUID, Any], now: int
                        ) -> co.GroupMetadataValue:
    """``ClassicGroup.fromConsumerGroup`` as its GroupMetadata record: a Stable classic
    group at the group epoch; each member's target assignment is its assignment."""
    votes: dict[str, int] = {}
    common: set[str] | None = None
    for m in members:
        assert m.classic_member_metadata is not None
        names = [p.name for p in m.classic_member_metadata.supported_protocols]
        common = set(names) if common is None else common & set(names)
    for m in members:
        assert m.classic_member_metadata is not None
        for p in m.classic_member_metadata.supported_protocols:
            if common and p.name in common:
                votes[p.name] = votes.get(p.name, 0) + 1
                break
    protocol = max(votes, key=lambda n: votes[n]) if votes else None
    records = []
    for m in members:
        assert m.classic_member_metadata is not None
        meta = next((p.metadata for p in m.classic_member_metadata.supported_protocols
                     if p.name == protocol), b"")
        records.append(co.MemberMetadata(
            m.member_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
            m.classic_member_metadata.session_timeout_ms, meta,
            encode_assignment(group.target_assignment.get(m.member_id, {}), topics_by_id, meta),
            m.instance_id))
    return co.GroupMetadataValue("consumer", group.group_epoch, protocol,
                                 members[0].member_id if members else None, now, tuple(records))
