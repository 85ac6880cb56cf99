"""The classic group protocol's requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) for
a group id, whichever kind of group holds it: a classic group's go to the classic part
(``membership``), a consumer group's classic-protocol members to ``consumer.migration``,
and an empty consumer group is deleted first for a classic group to form, as in Kafka."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..partitions import GroupPartitions
from ..results import AFTER_WRITE, JoinResult, Outcome, SyncResult, Write
from .membership import JoinRequest, Membership
from .rebalance import log

if TYPE_CHECKING:
    from ..consumer.group import ConsumerGroup
    from ..consumer.migration import ConsumerMigration


class ClassicRequests:
    def __init__(self, registry: GroupPartitions, classic: Membership,
                 migration: Callable[[], ConsumerMigration]) -> None:
        self.registry = registry
        self.config = registry.config
        self.classic = classic
        #: The KIP-848 part, built with the first consumer group (its modules with it).
        self.migration = migration

    def join(self, now: int, waiter: Any, req: JoinRequest) -> Outcome:
        """JoinGroup: a classic group's, or a classic-protocol member's of a consumer group
        (an empty consumer group is deleted first and a classic group formed). A share or
        streams group's id answers GROUP_ID_NOT_FOUND, as Kafka's
        getOrMaybeCreateClassicGroup."""
        group_id = req.group_id
        if self.registry.group_status(group_id) is NO_ERROR \
                and (self.registry.share_group(group_id) is not None
                     or self.registry.streams_group(group_id) is not None):
            return Outcome(JoinResult(ErrorCode.group_id_not_found, req.member_id))
        cgroup = self._consumer_group_for_classic(group_id)
        c = self.config
        if cgroup is None or not \
                c.min_session_timeout_ms <= req.session_timeout_ms <= c.max_session_timeout_ms:
            return self.classic.join(now, waiter, req)
        if cgroup.members:
            return self.migration().classic_join_to_consumer_group(
                now, waiter, cgroup, req.with_rebalance_timeout())

        def then(err: ErrorCode, t: int) -> Outcome:
            if err is not NO_ERROR:
                return Outcome(JoinResult(err, req.member_id))
            return self.classic.join(t, waiter, req)

        from ..consumer import records as cr

        log.info("consumer_group.replaced_by_classic_group", group=group_id)
        return Outcome(AFTER_WRITE, writes=[Write(
            self.registry.partition_for(group_id), group_id,
            list(cr.group_tombstone_records(cgroup)), then)])

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
            return self.migration().classic_sync_to_consumer_group(
                now, cgroup, member_id=member_id, instance_id=group_instance_id,
                generation=generation, protocol_type=protocol_type,
                protocol_name=protocol_name)
        return self.classic.sync(now, waiter, group_id=group_id, generation=generation,
                                 member_id=member_id, group_instance_id=group_instance_id,
                                 protocol_type=protocol_type, protocol_name=protocol_name,
                                 assignments=assignments)

    def heartbeat(self, now: int, group_id: str, member_id: str,
                  group_instance_id: str | None, generation: int) -> ErrorCode:
        err = self.classic.heartbeat(now, group_id, member_id, group_instance_id, generation)
        if err is ErrorCode.unknown_member_id:
            cgroup = self._consumer_group_for_classic(group_id)
            if cgroup is not None:
                return self.migration().classic_heartbeat_to_consumer_group(
                    now, cgroup, member_id, group_instance_id, generation)
        return err

    def leave(self, now: int, group_id: str,
              members: list[tuple[str, str | None, str | None]]) -> Outcome:
        cgroup = self._consumer_group_for_classic(group_id)
        if cgroup is not None:
            return self.migration().classic_leave_to_consumer_group(now, cgroup, members)
        return self.classic.leave(now, group_id, members)

    def _consumer_group_for_classic(self, group_id: str) -> ConsumerGroup | None:
        if self.registry.group_status(group_id) is not NO_ERROR:
            return None
        return self.registry.consumer_group(group_id)
