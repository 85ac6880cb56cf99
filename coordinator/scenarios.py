"""Test-control scenarios on the group core: states a real broker reaches only by chance
or after a long wait, produced on demand by the core's own transitions (never by faking
a response), so clients see exactly what Kafka would send them.

- ``force_rebalance``: a rebalance starts now, as when a member changes its subscription.
- ``expire_member``: the member's session ends now, as when its heartbeats stop.
- ``evict_member``: the member leaves as a consumer whose ``max.poll.interval.ms`` passed
  does (its LeaveGroup), so its next heartbeat answers UNKNOWN_MEMBER_ID and it rejoins.
- ``fence_static_member``: another instance took over the ``group.instance.id``: the old
  member id is fenced (FENCED_INSTANCE_ID on its next request) and the new one, which no
  client holds, expires with its session unless a client joins with that instance id.

Each returns an ``Outcome`` whose response is the error, as for a request.
"""

from __future__ import annotations

from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from .classic.group import GroupMetadata
from .classic.membership import Membership
from .classic.rebalance import log
from .classic.records import group_record
from .classic.states import CAN_REBALANCE, COMPLETING, PREPARING, STABLE
from .partitions import GroupPartitions, hb_key
from .results import AFTER_WRITE, Outcome, Write

#: Kafka's consumer sends this reason when it leaves on a poll timeout.
POLL_TIMEOUT_REASON = ("consumer poll timeout has expired. This means the time between "
                       "subsequent calls to poll() was longer than the configured "
                       "max.poll.interval.ms")


class Scenarios:
    """Test control on classic groups, through the classic part's own steps."""

    def __init__(self, registry: GroupPartitions, classic: Membership) -> None:
        self.registry = registry
        self.timers = registry.timers
        self.classic = classic

    def _active_group(self, group_id: str) -> tuple[ErrorCode, GroupMetadata | None]:
        err = self.registry.group_status(group_id)
        if err is not NO_ERROR:
            return err, None
        group = self.registry.group(group_id)
        if group is None:
            return ErrorCode.group_id_not_found, None
        return NO_ERROR, group

    def force_rebalance(self, now: int, group_id: str) -> Outcome:
        err, group = self._active_group(group_id)
        if group is None:
            return Outcome(err)
        if group.state is PREPARING:
            return Outcome(NO_ERROR)  # already rebalancing
        if group.state not in CAN_REBALANCE or not group.members:
            return Outcome(ErrorCode.non_empty_group if not group.members
                           else ErrorCode.rebalance_in_progress)
        log.info("scenario.rebalance", group=group_id)
        out = self.classic.prepare_rebalance(group, now, "rebalance forced by the test controller")
        out.response = NO_ERROR
        return out

    def expire_member(self, now: int, group_id: str, member_id: str) -> Outcome:
        err, group = self._active_group(group_id)
        if group is None:
            return Outcome(err)
        if member_id not in group.members:
            return Outcome(ErrorCode.unknown_member_id)
        self.timers.cancel(hb_key(group_id, member_id))
        log.info("scenario.expire_member", group=group_id, member=member_id)
        out = self.classic.remove_member(group, group.members[member_id], now,
                                  f"removing member {member_id} on heartbeat expiration")
        out.response = NO_ERROR
        return out

    def evict_member(self, now: int, group_id: str, member_id: str) -> Outcome:
        err, group = self._active_group(group_id)
        if group is None:
            return Outcome(err)
        member = group.members.get(member_id)
        if member is None:
            return Outcome(ErrorCode.unknown_member_id)
        log.info("scenario.evict_member", group=group_id, member=member_id)
        out = self.classic.remove_member(group, member, now,
                                  f"removing member {member_id} on LeaveGroup with reason: "
                                  + POLL_TIMEOUT_REASON)
        out.response = NO_ERROR
        return out

    def fence_static_member(self, now: int, group_id: str, instance_id: str) -> Outcome:
        err, group = self._active_group(group_id)
        if group is None:
            return Outcome(err)
        old_id = group.static_member_id(instance_id)
        member = None if old_id is None else group.members.get(old_id)
        if old_id is None or member is None:
            return Outcome(ErrorCode.unknown_member_id)
        new_id = f"{instance_id}-{self.registry.new_id()}"
        replies = self.classic.replace_static_member(group, member, new_id, now)
        log.info("scenario.fence_static_member", group=group_id, instance=instance_id,
                 old_member=old_id, member=new_id)
        out = Outcome(AFTER_WRITE, replies=replies)
        if group.state not in (STABLE, COMPLETING):
            out.response = NO_ERROR
            return out
        key, value = group_record(group)

        def then(append_err: ErrorCode, _now: int) -> Outcome:
            return Outcome(append_err)

        out.writes.append(Write(group.partition, group_id, [(key, value)], then))
        return out
