"""A streams group's records in ``__consumer_offsets`` (``protocol.streams_group_records``):
what a change of the group writes, in the order Kafka's ``GroupMetadataManager`` writes
them (removed members' tombstones, the topology, member metadata, the group epoch, the
target assignment, current assignments), and their replay, which rebuilds the group when
its partition is loaded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kafkalite.protocol import streams_group_records as st

from .assignor import by_subtopology
from .group import INITIAL_EPOCH, StreamsGroup, StreamsMember
from .reconcile import STABLE, UNRELEASED_TASKS, UNREVOKED_TASKS
from .topology import (
    CopartitionGroup,
    Subtopology,
    Task,
    Tasks,
    TaskTuple,
    TopicInfo,
    Topology,
)

Record = tuple[Any, Any]

_STATE_BYTE = {STABLE: 1, UNREVOKED_TASKS: 2, UNRELEASED_TASKS: 3}
_STATE_OF = {v: k for k, v in _STATE_BYTE.items()}


@dataclass(frozen=True, slots=True)
class Snapshot:
    group_epoch: int
    metadata_hash: int
    topology: Topology | None
    target_epoch: int
    members: dict[str, StreamsMember]
    target: dict[str, TaskTuple]


def snapshot(group: StreamsGroup | None) -> Snapshot | None:
    if group is None:
        return None
    return Snapshot(group.group_epoch, group.metadata_hash, group.topology, group.target_epoch,
                    dict(group.members), dict(group.target))


def _tasks(tasks: Tasks) -> st.TaskIds:
    return tuple(by_subtopology(tasks).items())


def _epochs(tasks: Tasks, epochs: Mapping[Task, int]) -> st.TaskIds:
    """Each partition's assignment epoch, in the order ``_tasks`` lists the partitions."""
    return tuple((sub, tuple(epochs.get((sub, p), 0) for p in parts))
                 for sub, parts in by_subtopology(tasks).items())


def _epochs_of(ids: st.TaskIds, epochs: st.TaskIds | None, default: int) -> dict[Task, int]:
    """The epochs of the tasks ``ids`` lists; ``default`` where a record has none."""
    by_sub = dict(epochs or ())
    out: dict[Task, int] = {}
    for sub, parts in ids:
        es = by_sub.get(sub, ())
        for i, p in enumerate(parts):
            out[(sub, p)] = es[i] if i < len(es) else default
    return out


def _tasks_of(ids: st.TaskIds) -> Tasks:
    return frozenset((s, p) for s, ps in ids for p in ps)


def _metadata(m: StreamsMember) -> tuple[Any, ...]:
    return (m.instance_id, m.rack_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
            m.topology_epoch, m.process_id, m.user_endpoint, m.client_tags)


def _current(m: StreamsMember) -> tuple[Any, ...]:
    return (m.member_epoch, m.previous_member_epoch, m.state, m.assigned, m.pending,
            m.task_epochs)


def topology_value(t: Topology) -> st.StreamsGroupTopologyValue:
    def infos(ts: tuple[TopicInfo, ...]) -> tuple[st.TopicInfo, ...]:
        return tuple(st.TopicInfo(i.name, i.partitions, i.replication_factor, i.configs)
                     for i in ts)

    return st.StreamsGroupTopologyValue(t.epoch, tuple(st.Subtopology(
        s.subtopology_id, s.source_topics, s.source_topic_regex,
        infos(s.state_changelog_topics), s.repartition_sink_topics,
        infos(s.repartition_source_topics),
        tuple(st.CopartitionGroup(c.source_topics, (), c.repartition_source_topics)
              for c in s.copartition_groups)) for s in t.subtopologies))


def topology_of(v: st.StreamsGroupTopologyValue) -> Topology:
    def infos(ts: tuple[st.TopicInfo, ...]) -> tuple[TopicInfo, ...]:
        return tuple(TopicInfo(i.name, i.partitions, i.replication_factor, i.topic_configs)
                     for i in ts)

    return Topology(v.epoch, tuple(Subtopology(
        s.subtopology_id, s.source_topics, s.source_topic_regex, s.repartition_sink_topics,
        infos(s.repartition_source_topics), infos(s.state_changelog_topics),
        tuple(CopartitionGroup(c.source_topics, c.repartition_source_topics)
              for c in s.copartition_groups)) for s in v.subtopologies))


def _validated(group: StreamsGroup) -> int:
    ok = group.topology is not None and group.configured is not None and group.configured.ready
    return group.topology.epoch if ok and group.topology is not None else -1


def changes(before: Snapshot | None, group: StreamsGroup, now: int) -> list[Record]:
    """The records that take the group's log from ``before`` to ``group``."""
    gid = group.group_id
    out: list[Record] = []
    old_members = {} if before is None else before.members
    for mid in old_members:
        if mid not in group.members:
            out.append((st.StreamsGroupCurrentMemberAssignmentKey(gid, mid), None))
            out.append((st.StreamsGroupTargetAssignmentMemberKey(gid, mid), None))
            out.append((st.StreamsGroupMemberMetadataKey(gid, mid), None))
    if group.topology is not None and (before is None or before.topology != group.topology):
        out.append((st.StreamsGroupTopologyKey(gid), topology_value(group.topology)))
    for mid, m in group.members.items():
        old = old_members.get(mid)
        if old is None or _metadata(old) != _metadata(m):
            out.append((st.StreamsGroupMemberMetadataKey(gid, mid),
                        st.StreamsGroupMemberMetadataValue(
                            m.instance_id, m.rack_id, m.client_id, m.client_host,
                            m.rebalance_timeout_ms, m.topology_epoch, m.process_id,
                            m.user_endpoint, m.client_tags)))
    if before is None or (before.group_epoch, before.metadata_hash) != (
            group.group_epoch, group.metadata_hash):
        out.append((st.StreamsGroupMetadataKey(gid), st.StreamsGroupMetadataValue(
            group.group_epoch, group.metadata_hash, _validated(group))))
    old_target = {} if before is None else before.target
    for mid, tasks in group.target.items():
        if old_target.get(mid) != tasks:
            out.append((st.StreamsGroupTargetAssignmentMemberKey(gid, mid),
                        st.StreamsGroupTargetAssignmentMemberValue(
                            _tasks(tasks.active), _tasks(tasks.standby),
                            _tasks(tasks.warmup))))
    if (INITIAL_EPOCH if before is None else before.target_epoch) != group.target_epoch:
        out.append((st.StreamsGroupTargetAssignmentMetadataKey(gid),
                    st.StreamsGroupTargetAssignmentMetadataValue(group.target_epoch, now)))
    for mid, m in group.members.items():
        old = old_members.get(mid)
        if old is None or _current(old) != _current(m):
            out.append((st.StreamsGroupCurrentMemberAssignmentKey(gid, mid),
                        st.StreamsGroupCurrentMemberAssignmentValue(
                            m.member_epoch, m.previous_member_epoch, _STATE_BYTE[m.state],
                            _tasks(m.active), _tasks(m.standby), _tasks(m.warmup),
                            _tasks(m.revoking), _tasks(m.revoking_standby),
                            _tasks(m.revoking_warmup), _epochs(m.active, m.task_epochs),
                            _epochs(m.revoking, m.task_epochs))))
    return out


def tombstones(group: StreamsGroup) -> list[Record]:
    """An empty group's own records, deleted (Kafka's ``createGroupTombstoneRecords``)."""
    gid = group.group_id
    return [(st.StreamsGroupTargetAssignmentMetadataKey(gid), None),
            (st.StreamsGroupMetadataKey(gid), None),
            (st.StreamsGroupTopologyKey(gid), None)]


def replay(groups: dict[str, StreamsGroup], key: st.StreamsGroupKey,
           value: st.StreamsGroupValue | None) -> None:
    """Apply one record to the partition's streams groups (live writes and loading)."""
    gid = key.group
    group = groups.get(gid)
    if group is None:
        if value is None:
            return
        group = groups[gid] = StreamsGroup(gid)
    if isinstance(key, st.StreamsGroupMetadataKey):
        if value is None:
            if not group.members:
                groups.pop(gid, None)
            return
        assert isinstance(value, st.StreamsGroupMetadataValue)
        group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
    elif isinstance(key, st.StreamsGroupTopologyKey):
        if value is None:
            group.topology = None
        else:
            assert isinstance(value, st.StreamsGroupTopologyValue)
            topology = topology_of(value)
            if topology != group.topology:
                group.topology = topology
                group.configured = None
    elif isinstance(key, st.StreamsGroupTargetAssignmentMetadataKey):
        if value is not None:
            assert isinstance(value, st.StreamsGroupTargetAssignmentMetadataValue)
            group.target_epoch = value.assignment_epoch
    elif isinstance(key, st.StreamsGroupTargetAssignmentMemberKey):
        if value is None:
            group.target.pop(key.member_id, None)
        else:
            assert isinstance(value, st.StreamsGroupTargetAssignmentMemberValue)
            group.target[key.member_id] = TaskTuple(_tasks_of(value.active_tasks),
                                                    _tasks_of(value.standby_tasks),
                                                    _tasks_of(value.warmup_tasks))
    elif isinstance(key, st.StreamsGroupMemberMetadataKey):
        if value is None:
            group.members.pop(key.member_id, None)
            return
        assert isinstance(value, st.StreamsGroupMemberMetadataValue)
        known = group.members.get(key.member_id)
        m = known if known is not None else StreamsMember(key.member_id)
        group.members[key.member_id] = replace(
            m, instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
            client_host=value.client_host, rebalance_timeout_ms=value.rebalance_timeout_ms,
            topology_epoch=value.topology_epoch, process_id=value.process_id,
            user_endpoint=value.user_endpoint, client_tags=value.client_tags)
    elif isinstance(key, st.StreamsGroupCurrentMemberAssignmentKey):
        member = group.members.get(key.member_id)
        if value is None or member is None:
            return
        assert isinstance(value, st.StreamsGroupCurrentMemberAssignmentValue)
        group.members[key.member_id] = replace(
            member, member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch,
            state=_STATE_OF.get(value.state, STABLE), active=_tasks_of(value.active_tasks),
            standby=_tasks_of(value.standby_tasks), warmup=_tasks_of(value.warmup_tasks),
            revoking=_tasks_of(value.active_tasks_pending_revocation),
            revoking_standby=_tasks_of(value.standby_tasks_pending_revocation),
            revoking_warmup=_tasks_of(value.warmup_tasks_pending_revocation),
            task_epochs={
                **_epochs_of(value.active_tasks, value.active_epochs, value.member_epoch),
                **_epochs_of(value.active_tasks_pending_revocation,
                             value.active_pending_epochs, value.member_epoch)})
