"""Conversions between classic and consumer groups, as Kafka 4.0 makes them
(``group.consumer.migration.policy``): a non-empty classic group using the consumer
embedded protocol becomes a consumer group when a consumer-protocol member joins
(upgrade), and a consumer group becomes a classic group again when its last
consumer-protocol member leaves and classic members remain (downgrade).

The parked requests of a classic group that is converted are answered before the
conversion is written (REBALANCE_IN_PROGRESS), and the classic group a downgrade writes
starts a rebalance once its record is in (Kafka's ``convertToClassicGroup`` sets that state
directly).

This part sits below the consumer group's others: ``consumer.lifecycle`` (a departure) and
``consumer.membership`` (an arrival) call it; it calls neither.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog

from kafkalite.protocol import consumer_group_records as cg
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..classic.group import GroupMetadata
from ..classic.membership import Membership
from ..partitions import GroupPartitions, hb_key, session_key
from ..results import AFTER_WRITE, ConsumerHeartbeatResult, JoinResult, Outcome, SyncResult, Write
from . import records as cr
from .group import (
    ConsumerGroup,
    ConsumerGroupMember,
    GroupError,
    MemberState,
    replay,
    uses_classic_protocol,
)

log = structlog.get_logger("kafkalite.consumer_groups")

Record = cr.Record
#: The highest ConsumerProtocolAssignment version (an answer is in the member's version).
_ASSIGNMENT_MAX_VERSION = 3


class GroupConversions:
    """Upgrades of classic groups and downgrades of consumer groups."""

    def __init__(self, registry: GroupPartitions, classic: Membership) -> None:
        self.registry = registry
        self.config = registry.config
        self.timers = registry.timers
        self.topics = registry.topics
        self.classic = classic

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

    def maybe_downgrade(self, group: ConsumerGroup, member: ConsumerGroupMember, now: int,
                        forget: Callable[[str, str], None]
                        ) -> Callable[[object], Outcome] | None:
        """Kafka's ``validateOnlineDowngradeWithFencedMember`` and ``convertToClassicGroup``:
        the last consumer-protocol member leaves and classic members remain. ``forget``
        drops a departed member's consumer-group timers once the conversion is written."""
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
                    forget(gid, mid)
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
