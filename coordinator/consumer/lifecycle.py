"""The life of KIP-848 consumer group members outside their heartbeats: leaving (epoch
-1, a static member -2), fencing when a session or rebalance timeout passes, the timers
on loading and unloading a partition, and the topic changes the groups follow (Kafka's
``consumerGroupLeave``, ``consumerGroupFenceMember``, ``onLoaded``, ``onNewMetadataImage``).

Soft state, as Kafka keeps it outside its timeline: the timers, the group epoch at which
each group's subscription metadata was last computed (dropped when a subscribed topic
changes, so the next heartbeat recomputes it) and the member epoch a member's rebalance
timer was armed for.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace

import structlog

from kafkalite.protocol import consumer_group_records as cg
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..partitions import (
    GroupPartitions,
    PartitionState,
    member_join_key,
    member_sync_key,
    rebalance_key,
    session_key,
)
from ..results import AFTER_WRITE, ConsumerHeartbeatResult, Outcome, Write, answered_with
from ..topics_image import TopicChange
from . import records as cr
from .conversion import GroupConversions
from .group import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerGroupMember,
    GroupError,
    MemberState,
    ReplayError,
    SubscriptionCount,
    count_subscription,
    uses_classic_protocol,
)
from .group import replay as replay_consumer_group
from .topic_regex import TopicRegexResolver

log = structlog.get_logger("kafkalite.consumer_groups")

Record = cr.Record
#: (topic id, partitions) pairs a member reports owning.
OwnedPartitions = Sequence[tuple[uuid.UUID, Sequence[int]]]


@dataclass(slots=True)
class ConsumerHeartbeatRequest:
    """A ConsumerGroupHeartbeat request, version independent; None: not sent."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: Sequence[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: OwnedPartitions | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1
    #: Whether the requesting principal may describe a topic: a regex resolved for this
    #: request keeps only those (Kafka's ``filterTopicDescribeAuthorizedTopics``).
    may_describe: Callable[[str], bool] | None = None


class ConsumerLifecycle:
    """KIP-848 consumer groups: leaving, fencing, their timers and the topics they follow;
    ``consumer.membership.ConsumerMembership`` adds the heartbeat. ``conversions`` turns a
    group into the other kind when a member's arrival or departure calls for it."""

    def __init__(self, registry: GroupPartitions, conversions: GroupConversions) -> None:
        self.registry = registry
        self.conversions = conversions
        self.config = registry.config
        self.timers = registry.timers
        self.partitions = registry.partitions
        self.partition_of = registry.partition_of
        self.topics = registry.topics
        # Soft state (see the module docstring).
        #: group id -> the group epoch its subscription metadata was last computed at.
        self._metadata_epochs: dict[str, int] = {}
        #: (group, member) -> the member epoch its rebalance timer was armed at.
        self._rebalance_epochs: dict[tuple[str, str], int] = {}
        self._regexes = TopicRegexResolver()

    def _session_timeout(self, gid: str, member: ConsumerGroupMember) -> int:
        classic = member.classic_member_metadata
        if classic is not None:
            return classic.session_timeout_ms
        return self.config.consumer_session_timeout(gid)

    def _cancel_rebalance(self, gid: str, mid: str) -> None:
        self.timers.cancel(rebalance_key(gid, mid))
        self._rebalance_epochs.pop((gid, mid), None)

    # --- leaving and fencing -----------------------------------------------------------

    def _consumer_leave(self, now: int, req: ConsumerHeartbeatRequest) -> Outcome:
        gid = req.group_id
        group = self._existing_consumer_group(gid)
        response = ConsumerHeartbeatResult(member_id=req.member_id,
                                           member_epoch=req.member_epoch)
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                raise GroupError(ErrorCode.unknown_member_id,
                                 f"Member {req.member_id} is not a member of group {gid}.")
            log.info("consumer_group.member_left", group=gid, member=req.member_id)
            return self._fence_member(group, member, response, now)
        member = group.static_member(req.instance_id)
        if member is None:
            raise GroupError(ErrorCode.unknown_member_id,
                             f"Instance id {req.instance_id} is unknown.")
        if member.member_id != req.member_id:
            raise GroupError(ErrorCode.fenced_instance_id,
                             f"Static member {req.member_id} with instance id "
                             f"{req.instance_id} was fenced by member {member.member_id}.")
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            log.info("consumer_group.static_member_left_temporarily", group=gid,
                     member=member.member_id, instance=req.instance_id)
            leaving = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                              partitions_pending_revocation={})
            result = ConsumerHeartbeatResult(member_id=member.member_id,
                                             member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH)

            def then(err: ErrorCode, _t: int) -> Outcome:
                return Outcome(result if err is NO_ERROR else ConsumerHeartbeatResult(err))

            return Outcome(AFTER_WRITE, writes=[Write(
                self.registry.partition_for(gid), gid, [cr.current_assignment_record(gid, leaving)],
                then)])
        log.info("consumer_group.member_left", group=gid, member=member.member_id,
                 instance=req.instance_id)
        return self._fence_member(group, member, response, now)

    def _existing_consumer_group(self, gid: str) -> ConsumerGroup:
        ps = self.partitions[self.registry.partition_for(gid)]
        group = ps.consumer_groups.get(gid)
        if group is not None:
            return group
        if gid in ps.groups or gid in ps.share_groups:
            raise GroupError(ErrorCode.group_id_not_found, f"Group {gid} is not a consumer group.")
        raise GroupError(ErrorCode.group_id_not_found, f"Group {gid} not found.")

    def _fence_member(self, group: ConsumerGroup, member: ConsumerGroupMember, response: object,
                      now: int) -> Outcome:
        """Kafka's ``consumerGroupFenceMember``: the member's records go and the group epoch
        moves on (or the group becomes a classic group again, see ``consumer.conversion``).
        The answer is ``response``, or the append's error."""
        downgrade = self.conversions.maybe_downgrade(group, member, now,
                                                     self.cancel_member_timers)
        if downgrade is not None:
            return downgrade(response)
        gid = group.group_id
        records = self.removal_records(group, [member])
        mid = member.member_id

        def then(err: ErrorCode, _t: int) -> Outcome:
            if err is not NO_ERROR:
                return Outcome(ConsumerHeartbeatResult(err) if response is not None else None)
            self.cancel_member_timers(gid, mid)
            return Outcome(response)

        return Outcome(AFTER_WRITE, writes=[
            Write(self.registry.partition_for(gid), gid, records, then)])

    def removal_records(self, group: ConsumerGroup,
                         members: Sequence[ConsumerGroupMember]) -> list[Record]:
        """The tombstones of ``members``, the group's subscription metadata without them,
        a regex they were the last subscribers of, and a group epoch bump."""
        gid = group.group_id
        records: list[Record] = []
        for m in members:
            records.extend(cr.remove_member_records(gid, m.member_id))
        names, regexes = _counts_without(group, members)
        for regex in sorted(group.subscribed_regexes):
            if regex not in regexes:
                records.append(cr.regular_expression_tombstone(gid, regex))
        metadata = group.compute_subscription_metadata(names, self.topics.by_name)
        if metadata != group.subscription_metadata:
            records.append(cr.subscription_metadata_record(gid, metadata))
        records.append(cr.group_epoch_record(gid, group.group_epoch + 1))
        return records

    def cancel_member_timers(self, gid: str, mid: str) -> None:
        self.timers.cancel(session_key(gid, mid))
        self._cancel_rebalance(gid, mid)
        self.timers.cancel(member_join_key(gid, mid))
        self.timers.cancel(member_sync_key(gid, mid))

    def _fence_by_timer(self, gid: str, mid: str, now: int, reason: str,
                        epoch: int | None = None) -> Outcome:
        """Kafka's ``consumerGroupFenceMemberOperation``; nothing if the group or member is
        gone (or, for a rebalance timeout, moved to another epoch)."""
        group = self.registry.consumer_group(gid)
        member = None if group is None else group.members.get(mid)
        if group is None or member is None:
            return Outcome(None)
        if epoch is not None and member.member_epoch != epoch:
            return Outcome(None)
        log.info("consumer_group.member_fenced", group=gid, member=mid, reason=reason)
        return self._fence_member(group, member, None, now)

    # --- test-control scenarios (``coordinator/scenarios.py`` has the classic ones) -------

    def scenario_group(self, gid: str) -> tuple[ErrorCode, ConsumerGroup | None]:
        err = self.registry.group_status(gid)
        group = None if err is not NO_ERROR else self.registry.consumer_group(gid)
        return (ErrorCode.group_id_not_found if err is NO_ERROR and group is None
                else err), group

    def expire_member(self, now: int, gid: str, mid: str) -> Outcome:
        """The member is fenced now, as when its session ends (also the scenario of a
        consumer past ``max.poll.interval.ms``, which leaves with epoch -1: the same
        records)."""
        err, group = self.scenario_group(gid)
        if group is None:
            return Outcome(err)
        member = group.members.get(mid)
        if member is None:
            return Outcome(ErrorCode.unknown_member_id)
        log.info("scenario.expire_member", group=gid, member=mid)
        return answered_with(self._fence_member(group, member, None, now), NO_ERROR)

    def force_rebalance(self, now: int, gid: str) -> Outcome:
        """A new group epoch, as a change of the subscribed topics writes one: the next
        heartbeat computes its target assignment and every member reconciles to it."""
        err, group = self.scenario_group(gid)
        if group is None:
            return Outcome(err)
        if not group.members:
            return Outcome(ErrorCode.non_empty_group)
        log.info("scenario.rebalance", group=gid, group_epoch=group.group_epoch + 1)
        return answered_with(Outcome(None, writes=[Write(
            self.registry.partition_for(gid), gid,
            [cr.group_epoch_record(gid, group.group_epoch + 1)])]), NO_ERROR)

    # --- timers ----------------------------------------------------------------------

    def on_session_timer(self, key: tuple[Hashable, ...], _deadline: int, now: int
                         ) -> Outcome:
        gid, mid = _member_of(key)
        return self._fence_by_timer(gid, mid, now, "the member session expired")

    def on_rebalance_timer(self, key: tuple[Hashable, ...], _deadline: int, now: int
                           ) -> Outcome:
        gid, mid = _member_of(key)
        epoch = self._rebalance_epochs.pop((gid, mid), None)
        if epoch is None:
            return Outcome(None)
        return self._fence_by_timer(gid, mid, now, "it failed to transition from epoch "
                                    f"{epoch} within its rebalance timeout", epoch)

    def on_member_join_timer(self, key: tuple[Hashable, ...], _deadline: int, now: int
                             ) -> Outcome:
        gid, mid = _member_of(key)
        return self._fence_by_timer(
            gid, mid, now, "the classic member failed to join within the rebalance timeout")

    def on_member_sync_timer(self, key: tuple[Hashable, ...], _deadline: int, now: int
                             ) -> Outcome:
        gid, mid = _member_of(key)
        return self._fence_by_timer(gid, mid, now, "the member failed to sync within timeout")

    def schedule_loaded_consumer_groups(self, ps: PartitionState, now: int) -> None:
        """Kafka's ``onLoaded``: every member's session, and the rebalance timeout of a
        member still revoking."""
        for gid, group in ps.consumer_groups.items():
            for mid, m in group.members.items():
                self.timers.schedule(session_key(gid, mid), now + self._session_timeout(gid, m))
                if m.state is MemberState.UNREVOKED_PARTITIONS and not uses_classic_protocol(m):
                    self._rebalance_epochs[(gid, mid)] = m.member_epoch
                    self.timers.schedule(rebalance_key(gid, mid), now + m.rebalance_timeout_ms)
            log.info("consumer_group.loaded", group=gid, members=len(group.members),
                     epoch=group.group_epoch)

    def unload_consumer_groups(self, ps: PartitionState) -> None:
        for gid, group in ps.consumer_groups.items():
            self._metadata_epochs.pop(gid, None)
            for mid in group.members:
                self.cancel_member_timers(gid, mid)

    # --- topics ----------------------------------------------------------------------

    def on_topic_change(self, change: TopicChange, now: int) -> Outcome:
        """A topic was created, grew or was deleted (Kafka's ``onNewMetadataImage``): the
        groups subscribed to it recompute their subscription metadata on their next
        heartbeat; a created topic makes regexes resolve again."""
        if not self.topics.apply(change, now):
            return Outcome(None)
        for group in self.registry.consumer_groups():
            if change.name in group.subscribed_topic_names:
                self._metadata_epochs.pop(group.group_id, None)
        log.info("consumer_group.topics_changed", topic=change.name,
                 change=change.event.value, partitions=change.partitions,
                 version=self.topics.version)
        return Outcome(None)


    # --- replay ----------------------------------------------------------------------

    def replay(self, ps: PartitionState, key: cg.ConsumerGroupKey,
               value: cg.ConsumerGroupValue | None) -> None:
        """A consumer group's record."""
        assert value is None or isinstance(value, cg.VALUE_CLASSES)
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


def _counts_without(group: ConsumerGroup, members: Sequence[ConsumerGroupMember]
                    ) -> tuple[dict[str, SubscriptionCount], dict[str, int]]:
    """The group's topic and regex subscription counts with ``members`` gone (Kafka's
    ``computeSubscribedTopicNames`` over a set of removed members)."""
    names = dict(group.subscribed_topic_names)
    regexes = dict(group.subscribed_regexes)
    for m in members:
        for t in m.subscribed_topic_names:
            count_subscription(names, t, by_name=-1)
        regex = m.regex
        if regex is None:
            continue
        n = regexes.get(regex, 0) - 1
        if n > 0:
            regexes[regex] = n
            continue
        regexes.pop(regex, None)
        resolved = group.resolved_regexes.get(regex)
        for t in resolved.topics if resolved is not None else ():
            count_subscription(names, t, by_regex=-1)
    return names, regexes


def _member_of(key: tuple[Hashable, ...]) -> tuple[str, str]:
    gid, mid = key[1], key[2]
    assert isinstance(gid, str) and isinstance(mid, str)
    return gid, mid
