"""The group coordinator's streams group part (KIP-1071): StreamsGroupHeartbeat with its
session and rebalance deadlines on the coordinator's timers, StreamsGroupDescribe, and the
offset commit and fetch checks of a streams group's members, over ``streams.group``.

A group id names one group of one kind: a streams heartbeat for another kind's group, and
ConsumerGroupHeartbeat or ShareGroupHeartbeat for a streams group's id, answer
GROUP_ID_NOT_FOUND, as Kafka's do.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import structlog

from kafkalite.protocol.consumer_offsets import GroupMetadataKey
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..partitions import GroupPartitions, PartitionState
from ..partitions import streams_initial_rebalance_key as initial_key
from ..partitions import streams_rebalance_key as rebalance_key
from ..partitions import streams_session_key as session_key
from ..results import AFTER_WRITE, Outcome, Write, answered_with
from . import group as streams
from . import records
from .group import StreamsGroup, StreamsHeartbeat, StreamsHeartbeatResult
from .topology import configure

log = structlog.get_logger("kafkalite.coordinator")

#: A timer whose records could not be written runs again after this (Kafka's 500 ms).
TIMER_RETRY_BACKOFF_MS = 500


@dataclass(frozen=True, slots=True)
class StreamsGroupDescription:
    group_id: str
    error: ErrorCode = NO_ERROR
    message: str | None = None
    group: StreamsGroup | None = None


class StreamsMembership:
    def __init__(self, registry: GroupPartitions) -> None:
        self.registry = registry
        self.config = registry.config
        self.timers = registry.timers

    def _topics(self) -> dict[str, int]:
        return {name: t.num_partitions for name, t in self.registry.topics.by_name.items()}

    def streams_group_heartbeat(self, now: int, req: StreamsHeartbeat) -> Outcome:
        invalid = streams.validate(req)
        if invalid is not None:
            return Outcome(invalid)
        gid, mid = req.group_id, req.member_id
        err, ps = self.registry.group_partition(gid)
        if ps is None:
            return Outcome(StreamsHeartbeatResult(err))
        kind = ps.kind_of(gid)
        if kind is not None and kind != "streams":
            if not (kind == "classic" and _empty_classic(ps, gid) and req.member_epoch == 0):
                return Outcome(StreamsHeartbeatResult(
                    ErrorCode.group_id_not_found, f"Group {gid} is not a streams group."))
        live = ps.streams_groups.get(gid)
        if live is None and req.member_epoch != 0:
            return Outcome(StreamsHeartbeatResult(
                ErrorCode.group_id_not_found, f"Streams group {gid} not found."))
        extra: list[records.Record] = []
        if live is None and gid in ps.groups:
            # An empty classic (offsets-only) group turns streams: its record goes.
            extra.append((GroupMetadataKey(gid), None))
        # The heartbeat runs on a copy; the live group moves only by the replay of the
        # records it writes (and its caches once they are in).
        group = StreamsGroup(gid) if live is None else streams.copy_group(live)
        known = mid in group.members
        leaving = req.member_epoch in (streams.LEAVE_EPOCH, streams.LEAVE_STATIC_EPOCH)
        # Kafka's group.streams.initial.rebalance.delay.ms: a member joining an empty group
        # starts the delay, and the group's target waits until it ends.
        delay = self.config.streams_initial_rebalance_delay(gid)
        start_delay = (not leaving and not group.members and delay > 0
                       and self.timers.deadline(initial_key(gid)) is None)
        delayed = start_delay or self.timers.deadline(initial_key(gid)) is not None
        result = streams.heartbeat(group, req, self._topics(),
                                   self.config.streams_heartbeat_interval(gid),
                                   self.config.streams_max_size, self._assignment_configs(gid),
                                   delayed)
        if result.error is not NO_ERROR:
            return Outcome(result)
        if not leaving:
            # The group's own values, else the broker's, as Kafka answers them.
            result = replace(
                result, acceptable_recovery_lag=self.config.streams_acceptable_recovery_lag(gid),
                task_offset_interval_ms=self.config.streams_task_offset_interval(gid))

        def after(t: int) -> None:
            if start_delay:
                self.timers.schedule(initial_key(gid), now + delay)
                log.info("streams_group.assignment_delayed", group=gid, delay_ms=delay)
            if leaving:
                # A static member leaving with epoch -2 keeps its tasks until its
                # session ends, as Kafka keeps it.
                if req.member_epoch != streams.LEAVE_STATIC_EPOCH:
                    self.timers.cancel(session_key(gid, mid))
                self.timers.cancel(rebalance_key(gid, mid))
                log.info("streams_group.member_left", group=gid, member=mid,
                         static=req.member_epoch == streams.LEAVE_STATIC_EPOCH)
                return
            if not known:
                log.info("streams_group.member_joined", group=gid, member=mid,
                         group_epoch=group.group_epoch)
            self.timers.schedule(session_key(gid, mid),
                                 t + self.config.streams_session_timeout(gid))
            member = group.members[mid]
            rkey = rebalance_key(gid, mid)
            if member.state == streams.UNREVOKED_TASKS:
                if self.timers.deadline(rkey) is None:
                    self.timers.schedule(rkey, t + member.rebalance_timeout_ms)
            else:
                self.timers.cancel(rkey)

        return self._written(ps, live, group, now, result, after, extra)

    def _assignment_configs(self, gid: str) -> streams.AssignmentConfigs:
        c = self.config
        return streams.AssignmentConfigs(c.streams_num_standby_replicas(gid),
                                         c.streams_num_warmup_replicas(gid),
                                         c.streams_acceptable_recovery_lag(gid))

    def _written(self, ps: PartitionState, live: StreamsGroup | None, group: StreamsGroup,
                 now: int, result: StreamsHeartbeatResult | None,
                 after: Callable[[int], None] | None = None,
                 extra: Sequence[records.Record] = (),
                 failed: Callable[[int], None] | None = None) -> Outcome:
        """The records taking ``live`` to ``group`` (the changed copy), written before the
        answer, as Kafka's coordinator does: the live group becomes ``group`` by their
        replay; a failed append leaves it as it was and is answered with its error."""
        gid = group.group_id
        before = None if live is None else records.snapshot(live)
        written = [*extra, *records.changes(before, group, now)]

        def done(t: int) -> Outcome:
            applied = ps.streams_groups.get(gid)
            if applied is not None:
                streams.keep_caches(applied, group)
            if after is not None:
                after(t)
            return Outcome(result)

        if not written:
            return done(now)

        def then(append_err: ErrorCode, t: int) -> Outcome:
            if append_err is not NO_ERROR:
                if failed is not None:
                    failed(t)
                return Outcome(None if result is None else StreamsHeartbeatResult(append_err))
            return done(t)

        return Outcome(AFTER_WRITE if result is not None else None,
                       writes=[Write(ps.partition, gid, written, then)])

    def replay(self, ps: PartitionState, key: Any, value: Any) -> None:
        records.replay(ps.streams_groups, key, value)

    def schedule_loaded(self, ps: PartitionState, now: int) -> None:
        """Kafka's ``onLoaded``: a loaded partition's members get a full session to
        heartbeat again, and one still revoking tasks its full rebalance timeout; each
        group's topology is configured against the topics (its metadata hash, from its
        record, says on the next heartbeat whether they changed)."""
        topics = self._topics()
        for gid, group in ps.streams_groups.items():
            if group.topology is not None:
                group.configured = configure(group.topology, topics)
            for mid, member in group.members.items():
                self.timers.schedule(session_key(gid, mid),
                                     now + self.config.streams_session_timeout(gid))
                if member.state == streams.UNREVOKED_TASKS:
                    self.timers.schedule(rebalance_key(gid, mid),
                                         now + member.rebalance_timeout_ms)

    def _expire(self, key: tuple[Hashable, ...], why: str, now: int) -> Outcome:
        gid, mid = str(key[1]), str(key[2])
        _err, ps = self.registry.group_partition(gid)
        group = None if ps is None else ps.streams_groups.get(gid)
        if ps is None or group is None or mid not in group.members:
            return Outcome(None)
        log.info(why, group=gid, member=mid)
        changed = streams.copy_group(group)
        streams.remove_member(changed, mid, self._assignment_configs(gid),
                              self.timers.deadline(initial_key(gid)) is not None)

        def after(_t: int) -> None:
            self.timers.cancel(session_key(gid, mid))
            self.timers.cancel(rebalance_key(gid, mid))

        def retry(t: int) -> None:
            # Kafka retries a timer whose write failed after its backoff.
            self.timers.schedule(key, t + TIMER_RETRY_BACKOFF_MS)

        return self._written(ps, group, changed, now, None, after, failed=retry)

    def on_session_timer(self, key: tuple[Hashable, ...], _deadline: int, now: int
                         ) -> Outcome:
        """A member's session expired: it leaves; the others get a new target."""
        return self._expire(key, "streams_group.member_expired", now)

    def on_rebalance_timer(self, key: tuple[Hashable, ...], _deadline: int, now: int
                           ) -> Outcome:
        """A member did not give its revoked tasks up in its rebalance timeout: it is
        removed, as Kafka fences it."""
        gid, mid = str(key[1]), str(key[2])
        _err, ps = self.registry.group_partition(gid)
        group = None if ps is None else ps.streams_groups.get(gid)
        member = None if group is None else group.members.get(mid)
        if member is None or member.state != streams.UNREVOKED_TASKS:
            return Outcome(None)
        return self._expire(key, "streams_group.member_revocation_timed_out", now)

    def on_initial_rebalance_timer(self, key: tuple[Hashable, ...], _deadline: int, now: int
                                   ) -> Outcome:
        """The initial rebalance delay ended: the group's target at its epoch, as Kafka's
        computeDelayedTargetAssignment (members learn it at their next heartbeat). Not
        retried when its write fails: the next heartbeat computes it then."""
        gid = str(key[1])
        _err, ps = self.registry.group_partition(gid)
        group = None if ps is None else ps.streams_groups.get(gid)
        if ps is None or group is None or not group.members \
                or group.target_epoch == group.group_epoch:
            return Outcome(None)
        changed = streams.copy_group(group)
        streams.compute_target(changed, self._assignment_configs(gid))
        log.info("streams_group.delayed_assignment", group=gid, epoch=changed.target_epoch)
        return self._written(ps, group, changed, now, None)

    # --- test-control scenarios (``coordinator/scenarios.py`` has the classic ones) -------

    def _scenario_group(self, gid: str) -> tuple[ErrorCode, PartitionState | None,
                                                 StreamsGroup | None]:
        err, ps = self.registry.group_partition(gid)
        group = None if ps is None else ps.streams_groups.get(gid)
        if ps is not None and group is None:
            err = ErrorCode.group_id_not_found
        return err, ps, group

    def expire_member(self, now: int, gid: str, mid: str) -> Outcome:
        """The member's session timer fires now: it leaves and the others get a new target,
        written as its expiry writes them (also a member past ``max.poll.interval.ms``,
        which leaves the group with the same records)."""
        err, _ps, group = self._scenario_group(gid)
        if group is None:
            return Outcome(err)
        if mid not in group.members:
            return Outcome(ErrorCode.unknown_member_id)
        out = self.on_session_timer(session_key(gid, mid), now, now)
        out.response = NO_ERROR
        return out

    def force_rebalance(self, now: int, gid: str) -> Outcome:
        """A new group epoch and its target assignment now, as a change of the topics the
        topology reads makes them: every member reconciles to the new epoch on its next
        heartbeat (the sticky assignor keeps the tasks where they are)."""
        err, ps, group = self._scenario_group(gid)
        if ps is None or group is None:
            return Outcome(err)
        if not group.members:
            return Outcome(ErrorCode.non_empty_group)
        changed = streams.copy_group(group)
        changed.group_epoch += 1
        # While the initial rebalance delay runs, its end computes the target.
        if self.timers.deadline(initial_key(gid)) is None:
            streams.compute_target(changed, self._assignment_configs(gid))
        log.info("scenario.rebalance", group=gid, group_epoch=changed.group_epoch)
        return answered_with(self._written(ps, group, changed, now, None), NO_ERROR)

    def fence_static_member(self, now: int, gid: str, instance_id: str) -> Outcome:
        """Another instance takes the static member's ``group.instance.id``: the member
        leaves as a static member does (epoch -2) and a new member id, which no client
        holds, joins with its instance id and process, taking its tasks, as Kafka's static
        replacement does. The old id is answered FENCED_INSTANCE_ID from then on; the new
        one expires with its session unless a client joins with that instance id."""
        err, ps, group = self._scenario_group(gid)
        if ps is None or group is None:
            return Outcome(err)
        old = group.static_member(instance_id)
        if old is None or group.topology is None:
            return Outcome(ErrorCode.unknown_member_id)
        new_id = self.registry.new_id()
        changed = streams.copy_group(group)
        configs = self._assignment_configs(gid)
        topics = self._topics()
        interval = self.config.streams_heartbeat_interval(gid)
        size = self.config.streams_max_size
        steps = [StreamsHeartbeat(gid, old.member_id, streams.LEAVE_STATIC_EPOCH,
                                  instance_id=instance_id),
                 StreamsHeartbeat(gid, new_id, 0, instance_id=instance_id,
                                  rack_id=old.rack_id,
                                  rebalance_timeout_ms=old.rebalance_timeout_ms,
                                  topology=group.topology, active_tasks=streams.NO_TASKS,
                                  standby_tasks=streams.NO_TASKS,
                                  warmup_tasks=streams.NO_TASKS, process_id=old.process_id,
                                  user_endpoint=old.user_endpoint,
                                  client_tags=old.client_tags, client_id=old.client_id,
                                  client_host=old.client_host)]
        delayed = self.timers.deadline(initial_key(gid)) is not None
        for step in steps:
            res = streams.heartbeat(changed, step, topics, interval, size, configs, delayed)
            if res.error is not NO_ERROR:
                return Outcome(res.error)
        log.info("scenario.fence_static_member", group=gid, instance=instance_id,
                 old_member=old.member_id, member=new_id)

        def after(t: int) -> None:
            self.timers.cancel(session_key(gid, old.member_id))
            self.timers.cancel(rebalance_key(gid, old.member_id))
            self.timers.schedule(session_key(gid, new_id),
                                 t + self.config.streams_session_timeout(gid))

        return answered_with(self._written(ps, group, changed, now, None, after), NO_ERROR)

    def describe_streams_groups(self, group_ids: Sequence[str]
                                ) -> list[StreamsGroupDescription]:
        out = []
        for gid in group_ids:
            err, ps = self.registry.group_partition(gid)
            if ps is None:
                out.append(StreamsGroupDescription(gid, err))
                continue
            group = ps.streams_groups.get(gid)
            if group is None:
                other = ps.kind_of(gid) is not None
                out.append(StreamsGroupDescription(
                    gid, ErrorCode.group_id_not_found,
                    f"Group {gid} is not a streams group." if other
                    else f"Group {gid} not found."))
                continue
            out.append(StreamsGroupDescription(gid, group=group))
        return out

    def unload(self, ps: PartitionState) -> None:
        for gid, group in ps.streams_groups.items():
            self.timers.cancel(initial_key(gid))
            for mid in group.members:
                self.timers.cancel(session_key(gid, mid))
                self.timers.cancel(rebalance_key(gid, mid))


def _empty_classic(ps: PartitionState, gid: str) -> bool:
    g = ps.groups.get(gid)
    return g is not None and not g.members


#: OffsetCommit's first version a streams group member may commit with (Kafka 4.4).
STREAMS_COMMIT_MIN_VERSION = 9


def validate_commit(group: StreamsGroup, member_id: str, epoch: int, instance_id: str | None,
                    transactional: bool, api_version: int = STREAMS_COMMIT_MIN_VERSION,
                    partitions: Iterable[tuple[str, int]] = ()) -> ErrorCode:
    """``StreamsGroup.validateOffsetCommit``: an admin commit (epoch < 0, no member) only
    while the group is empty; a member commits with OffsetCommit v9 or later (else
    UNSUPPORTED_VERSION) at its current epoch (a newer one is STALE_MEMBER_EPOCH, as
    Kafka 4.4 answers it) or an older one for partitions of tasks it holds (assigned or
    being revoked) since that epoch or before (Kafka's assignment epoch validator)."""
    if epoch < 0 and not member_id and not group.members:
        return NO_ERROR
    if transactional and epoch == -1 and member_id == "" and instance_id is None:
        return NO_ERROR
    member = group.members.get(member_id)
    if member is None:
        return ErrorCode.unknown_member_id
    if not transactional and api_version < STREAMS_COMMIT_MIN_VERSION:
        return ErrorCode.unsupported_version
    if epoch == member.member_epoch:
        return NO_ERROR
    if epoch > member.member_epoch:
        return ErrorCode.fenced_member_epoch if transactional else ErrorCode.stale_member_epoch
    stale = ErrorCode.illegal_generation if transactional else ErrorCode.stale_member_epoch
    subtopology_of: dict[str, str] = {}
    for sub in () if group.topology is None else group.topology.subtopologies:
        for t in (*sub.source_topics, *(r.name for r in sub.repartition_source_topics)):
            subtopology_of[t] = sub.subtopology_id
    for topic, partition in partitions:
        sub_id = subtopology_of.get(topic)
        assigned = None if sub_id is None else member.task_epochs.get((sub_id, partition))
        if assigned is None or epoch < assigned:
            return stale
    return NO_ERROR


def validate_fetch(group: StreamsGroup, member_id: str | None, epoch: int) -> ErrorCode:
    """``StreamsGroup.validateOffsetFetch``."""
    if member_id is None and epoch < 0:
        return NO_ERROR
    member = group.members.get(member_id or "")
    if member is None:
        return ErrorCode.unknown_member_id
    if epoch != member.member_epoch:
        return (ErrorCode.stale_member_epoch if epoch < member.member_epoch
                else ErrorCode.fenced_member_epoch)
    return NO_ERROR
