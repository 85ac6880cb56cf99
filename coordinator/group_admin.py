"""Group administration, a part of the group coordinator: DescribeGroups, ListGroups,
DeleteGroups and ConsumerGroupDescribe (a KIP-848 consumer group's rules are in
``consumer.admin``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import structlog

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from .classic.states import DEAD, STABLE
from .offsets.committed import CommittedOffsets
from .partitions import (
    GroupPartitions,
    hb_key,
    streams_initial_rebalance_key,
    streams_session_key,
)
from .results import (
    AFTER_WRITE,
    DescribedConsumerGroup,
    DescribedGroup,
    DescribedMember,
    GroupOverview,
    ListedGroup,
    Outcome,
    Write,
)

log = structlog.get_logger("kafkalite.offsets")


class GroupAdmin:
    """Describing, listing and deleting groups, over the committed offsets part."""

    def __init__(self, registry: GroupPartitions, committed: CommittedOffsets) -> None:
        self.registry = registry
        self.config = registry.config
        self.topics = registry.topics
        self.committed_offsets = committed
        self.offsets = committed.offsets
        #: Told the id of a share group once its deletion is written, so that the broker
        #: deletes its share-partitions' state too, as Kafka's DeleteGroups does.
        self.share_group_deleted: list[Callable[[str], None]] = []

    def delete_group(self, now: int, group_id: str) -> Outcome:
        """Response: the group's error. Writes tombstones for its offsets and itself."""
        err = self.registry.group_status(group_id)
        if err is not NO_ERROR:
            return Outcome(err)
        sgroup = self.registry.share_group(group_id)
        if sgroup is not None:  # no committed offsets: only its own records
            from .share import membership as share_membership

            err, share_records = share_membership.delete_records(sgroup)
            if err is not NO_ERROR:
                return Outcome(err)
            logged = _log_deleted(group_id)

            def then(append_err: ErrorCode, now: int) -> Outcome:
                if append_err is NO_ERROR:
                    for listener in self.share_group_deleted:
                        listener(group_id)
                return logged(append_err, now)

            return Outcome(AFTER_WRITE, writes=[Write(
                self.registry.partition_for(group_id), group_id, list(share_records), then)])
        stgroup = self.registry.streams_group(group_id)
        if stgroup is not None:
            if stgroup.members:
                return Outcome(ErrorCode.non_empty_group)
            from .streams import records as streams_records

            records = self.offsets.delete_group_records(group_id)
            records = [r for r in records if isinstance(r[0], co.OffsetCommitKey)]
            records.extend(self.committed_offsets.pending_tombstones(group_id, None, records))
            records.extend(streams_records.tombstones(stgroup))
            # A group made again under this id starts its own initial delay.
            self.registry.timers.cancel(streams_initial_rebalance_key(group_id))
            return Outcome(AFTER_WRITE, writes=[Write(
                self.registry.partition_for(group_id), group_id, records,
                _log_deleted(group_id))])
        cgroup = self.registry.consumer_group(group_id)
        if cgroup is not None:
            # KIP-848 modules load with the first consumer group
            from .consumer import admin as consumer_admin

            err = consumer_admin.validate_delete_group(cgroup)
            records = consumer_admin.delete_group_records(self.offsets, cgroup)
        else:
            err = self.offsets.validate_delete_group(self.registry.group(group_id))
            records = self.offsets.delete_group_records(group_id)
        if err is not NO_ERROR:
            return Outcome(err)

        # As Kafka's deleteAllOffsets: partitions with only pending offsets too, before
        # the group's own tombstones.
        first_group_record = next((i for i, (k, _v) in enumerate(records)
                                   if not isinstance(k, co.OffsetCommitKey)), len(records))
        records[first_group_record:first_group_record] = self.committed_offsets.pending_tombstones(
            group_id, None, records)
        return Outcome(AFTER_WRITE, writes=[Write(
            self.registry.partition_for(group_id), group_id, records, _log_deleted(group_id))])

    def describe_group(self, group_id: str) -> DescribedGroup:
        err = self.registry.group_status(group_id)
        if err is not NO_ERROR:
            return DescribedGroup(err)
        g = self.registry.group(group_id)
        if g is None:
            # Kafka describes an unknown group as Dead, without error (below v6), and so
            # a consumer group ("is not a classic group").
            return DescribedGroup(NO_ERROR, DEAD.value)
        stable = g.state is STABLE
        members = tuple(
            DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                            m.metadata(g.protocol_name) if stable else b"",
                            m.assignment if stable else b"")
            for m in g.members.values())
        return DescribedGroup(NO_ERROR, g.state.value, g.protocol_type or "",
                              (g.protocol_name or "") if stable else "", members)

    def list_groups(self) -> list[ListedGroup]:
        out = [ListedGroup(g.group_id, g.protocol_type or "", g.state.value)
               for g in self.registry.groups() if g.state is not DEAD
               and self.registry.partition_status(g.partition) is NO_ERROR]
        out.extend(ListedGroup(g.group_id, "consumer", g.state.value, "consumer")
                   for g in self.registry.consumer_groups()
                   if self.registry.partition_status(
                       self.registry.partition_for(g.group_id)) is NO_ERROR)
        # Kafka lists a share group with protocol type "share" and its state.
        out.extend(ListedGroup(g.group_id, "share", "Stable" if g.members else "Empty", "share")
                   for g in self.registry.share_groups()
                   if self.registry.partition_status(
                       self.registry.partition_for(g.group_id)) is NO_ERROR)
        # Kafka lists a streams group with protocol type "streams" and its state.
        out.extend(ListedGroup(g.group_id, "streams", g.state, "streams")
                   for g in self.registry.streams_groups()
                   if self.registry.partition_status(
                       self.registry.partition_for(g.group_id)) is NO_ERROR)
        return out

    def overview(self) -> list[GroupOverview]:
        """Every group held here, of every type, sorted by id (the admin views)."""
        registry = self.registry
        out = [GroupOverview(g.group_id, "classic", g.state.value, g.generation,
                             g.protocol_type, g.protocol_name, len(g.members), g.partition)
               for g in registry.groups()]
        out.extend(GroupOverview(g.group_id, "consumer", g.state.value, g.group_epoch,
                                 "consumer", g.preferred_server_assignor(), len(g.members),
                                 registry.partition_for(g.group_id))
                   for g in registry.consumer_groups())
        out.extend(GroupOverview(g.group_id, "share", "Stable" if g.members else "Empty",
                                 g.group_epoch, "share", "simple", len(g.members),
                                 registry.partition_for(g.group_id))
                   for g in registry.share_groups())
        out.extend(GroupOverview(g.group_id, "streams", g.state, g.group_epoch, "streams",
                                 "sticky", len(g.members), registry.partition_for(g.group_id))
                   for g in registry.streams_groups())
        return sorted(out, key=lambda o: o.group_id)

    def session_deadlines(self, group_id: str) -> dict[str, int | None]:
        """A classic group's members' session deadlines (the session timer is re-armed to
        now + session timeout on every heartbeat), by member id."""
        g = self.registry.group(group_id)
        if g is None:
            return {}
        deadline = self.registry.timers.deadline
        return {m: deadline(hb_key(group_id, m)) for m in g.members}

    def streams_session_deadlines(self, group_id: str) -> dict[str, int | None]:
        """A streams group's members' session deadlines, by member id."""
        g = self.registry.streams_group(group_id)
        if g is None:
            return {}
        deadline = self.registry.timers.deadline
        return {m: deadline(streams_session_key(group_id, m)) for m in g.members}

    def describe_consumer_groups(self, group_ids: Sequence[str]) -> list[DescribedConsumerGroup]:
        """ConsumerGroupDescribe: GROUP_ID_NOT_FOUND for a missing or classic group."""
        out = []
        default = self.config.consumer_assignors[0]
        for gid in group_ids:
            err = self.registry.group_status(gid)
            if err is not NO_ERROR:
                out.append(DescribedConsumerGroup(gid, err))
                continue
            cg = self.registry.consumer_group(gid)
            if cg is None:
                other = (self.registry.group(gid) is not None
                         or self.registry.share_group(gid) is not None
                         or self.registry.streams_group(gid) is not None)
                msg = (f"Group {gid} is not a consumer group." if other
                       else f"Group {gid} not found.")
                out.append(DescribedConsumerGroup(gid, ErrorCode.group_id_not_found, msg))
                continue
            from .consumer import admin as consumer_admin

            out.append(consumer_admin.describe(cg, self.topics, default))
        return out


def _log_deleted(group_id: str) -> Callable[[ErrorCode, int], Outcome]:
    def then(append_err: ErrorCode, _now: int) -> Outcome:
        if append_err is NO_ERROR:
            log.info("group.deleted", group=group_id)
        return Outcome(append_err)

    return then
