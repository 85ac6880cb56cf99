"""A streams group (KIP-1071) as Kafka 4.4's ``GroupMetadataManager`` runs it, in a pure
form over the manual clock's ``now``: StreamsGroupHeartbeat's validation, the member's
join (static members by their instance id), its topology, the group epoch, the target
assignment (``assignor``: active and standby tasks) and each member's reconciliation
toward it (``reconcile``), and the Interactive Queries endpoints' partitions.

Timers and records are the membership part's (``streams.membership``): a heartbeat runs on
a copy of the group and the records taking the group to the copy are written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from .assignor import AssignorMember, assign
from .reconcile import STABLE, UNRELEASED_TASKS, UNREVOKED_TASKS, Holders, reconcile
from .topology import (
    ASSIGNMENT_DELAYED,
    NO_TASK_TUPLE,
    NO_TASKS,
    SHUTDOWN_APPLICATION,
    STALE_TOPOLOGY,
    Configured,
    Status,
    Task,
    Tasks,
    TaskTuple,
    Topology,
    configure,
)

__all__ = ["NO_TASKS", "STABLE", "UNRELEASED_TASKS", "UNREVOKED_TASKS"]

LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2
#: A new group's epoch and assignment epoch, Kafka 4.4's (a member's epoch 0 is a join):
#: its first heartbeat takes it to epoch 2, and a member reconciled toward the initial
#: assignment gets epoch 1.
INITIAL_EPOCH = 1

#: An endpoint's partitions (Interactive Queries): topic -> partitions.
TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class EndpointPartitions:
    endpoint: tuple[str, int]
    active: TopicPartitions
    standby: TopicPartitions


@dataclass(frozen=True, slots=True)
class StreamsMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: str = STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300000
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    active: Tasks = NO_TASKS
    standby: Tasks = NO_TASKS
    warmup: Tasks = NO_TASKS
    #: Tasks the member must give up before it moves on (UNREVOKED_TASKS).
    revoking: Tasks = NO_TASKS
    revoking_standby: Tasks = NO_TASKS
    revoking_warmup: Tasks = NO_TASKS
    #: The epoch each active task (assigned or being revoked) was assigned at (Kafka's
    #: TasksTupleWithEpochs): an older epoch's commit is accepted for it from then on.
    task_epochs: Mapping[Task, int] = field(default_factory=dict, hash=False)

    @property
    def assigned(self) -> TaskTuple:
        return TaskTuple(self.active, self.standby, self.warmup)

    @property
    def pending(self) -> TaskTuple:
        return TaskTuple(self.revoking, self.revoking_standby, self.revoking_warmup)


@dataclass(slots=True)
class StreamsGroup:
    group_id: str
    group_epoch: int = INITIAL_EPOCH
    topology: Topology | None = None
    #: A hash of the partition counts of the topics the topology uses, as last configured
    #: (kept in the group's metadata record: a reload does not bump the epoch).
    metadata_hash: int = 0
    configured: Configured | None = None
    target_epoch: int = INITIAL_EPOCH
    target: dict[str, TaskTuple] = field(default_factory=dict)
    members: dict[str, StreamsMember] = field(default_factory=dict)
    endpoint_information_epoch: int = 0
    #: Each member's last reported changelog offset sums per task (memory only, as
    #: Kafka's MemberTaskOffsets): the assignor's weaker standby candidates.
    task_offsets: dict[str, dict[Task, int]] = field(default_factory=dict)
    #: The end offsets of those changelogs, as last reported (described, as Kafka does).
    task_end_offsets: dict[str, dict[Task, int]] = field(default_factory=dict)
    #: The member that asked the whole application to shut down; every member is told so
    #: until the group is empty (memory only, best effort, as Kafka keeps it).
    shutdown_request_member_id: str | None = None
    #: streams.num.standby.replicas as of the group's last epoch bump (Kafka keeps its
    #: assignment configs in the metadata record; kafkalite in memory, None after a load):
    #: a change of it is a new epoch, as Kafka's "Assignment configurations changed".
    assignment_standby: int | None = None

    @property
    def state(self) -> str:
        """Kafka's ``StreamsGroup.state`` names."""
        if not self.members:
            return "Empty"
        if self.configured is None or not self.configured.ready:
            return "NotReady"
        if self.target_epoch != self.group_epoch:
            return "Assigning"
        if any(m.member_epoch != self.target_epoch or m.state != STABLE
               for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def static_member(self, instance_id: str | None) -> StreamsMember | None:
        if instance_id is None:
            return None
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    def holders(self) -> Holders:
        """Who holds each task now, by process (assigned or being revoked)."""
        active: dict[Task, str] = {}
        standby: dict[Task, set[str]] = {}
        warmup: dict[Task, set[str]] = {}
        for m in self.members.values():
            for t in m.active | m.revoking:
                active[t] = m.process_id
            for t in m.standby | m.revoking_standby:
                standby.setdefault(t, set()).add(m.process_id)
            for t in m.warmup | m.revoking_warmup:
                warmup.setdefault(t, set()).add(m.process_id)
        return Holders(active.get, lambda t: frozenset(standby.get(t, ())),
                       lambda t: frozenset(warmup.get(t, ())))


@dataclass(frozen=True, slots=True)
class AssignmentConfigs:
    """The group's assignor settings (streams.num.standby.replicas and the warm-up ones),
    each the group config's value, else the broker's (``CoreConfig``)."""

    num_standby_replicas: int
    #: Kafka 4.4's assignment refiner takes these two and returns the target unchanged
    #: (no warm-up task); the answers report the lag.
    num_warmup_replicas: int
    acceptable_recovery_lag: int


def copy_group(group: StreamsGroup) -> StreamsGroup:
    """A copy a heartbeat may change (members are immutable; their maps are copied)."""
    return replace(group, members=dict(group.members), target=dict(group.target),
                   task_offsets=dict(group.task_offsets),
                   task_end_offsets=dict(group.task_end_offsets))


def keep_caches(live: StreamsGroup, changed: StreamsGroup) -> None:
    """What no record carries, from the changed copy once its records are in: the
    topology as configured against the topics, the endpoints' epoch and the members' task
    offsets (Kafka keeps them in memory only)."""
    if live.topology == changed.topology:
        live.configured = changed.configured
    live.endpoint_information_epoch = changed.endpoint_information_epoch
    live.assignment_standby = changed.assignment_standby
    live.shutdown_request_member_id = (changed.shutdown_request_member_id if live.members
                                       else None)
    live.task_offsets = {m: o for m, o in changed.task_offsets.items() if m in live.members}
    live.task_end_offsets = {m: o for m, o in changed.task_end_offsets.items()
                             if m in live.members}


@dataclass(frozen=True, slots=True)
class StreamsHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    #: The tasks the member owns; None: unchanged since its last heartbeat.
    active_tasks: Tasks | None = None
    standby_tasks: Tasks | None = None
    warmup_tasks: Tasks | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] | None = None
    #: The changelog offset sums of the tasks whose state the member has; None: not sent.
    task_offsets: Mapping[Task, int] | None = None
    task_end_offsets: Mapping[Task, int] | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class StreamsHeartbeatResult:
    error: ErrorCode
    error_message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    status: tuple[Status, ...] | None = None
    #: The member's tasks, when they are sent; None: unchanged.
    active_tasks: Tasks | None = None
    endpoint_information_epoch: int = 0
    #: Internal topics the coordinator must create (MISSING_INTERNAL_TOPICS).
    to_create: tuple[object, ...] = ()
    standby_tasks: Tasks | None = None
    warmup_tasks: Tasks | None = None
    #: Every member's IQ endpoint with its partitions, when the member's endpoint epoch
    #: is behind the group's; None: not sent.
    endpoints: tuple[EndpointPartitions, ...] | None = None
    #: The group's streams.acceptable.recovery.lag and streams.task.offset.interval.ms,
    #: which the answer reports (-1 and 0 in an error or leave answer, as Kafka's).
    acceptable_recovery_lag: int = -1
    task_offset_interval_ms: int = 0


def _invalid(msg: str) -> StreamsHeartbeatResult:
    return StreamsHeartbeatResult(ErrorCode.invalid_request, msg)


def validate(req: StreamsHeartbeat) -> StreamsHeartbeatResult | None:
    """Kafka's ``throwIfStreamsGroupHeartbeatRequestIsInvalid``."""
    if not req.group_id.strip():
        return _invalid("GroupId can't be empty.")
    if not req.member_id.strip():
        return _invalid("MemberId can't be empty.")
    if req.instance_id is not None and not req.instance_id.strip():
        return _invalid("InstanceId can't be empty.")
    if req.rack_id is not None and not req.rack_id.strip():
        return _invalid("RackId can't be empty.")
    if req.member_epoch == 0:
        if req.rebalance_timeout_ms == -1:
            return _invalid("RebalanceTimeoutMs must be provided in first request.")
        if req.topology is None:
            return _invalid("Topology must be non-empty when (re-)joining.")
        if req.process_id is None:
            return _invalid("ProcessId must be provided in first request.")
        if req.active_tasks is None or req.standby_tasks is None or req.warmup_tasks is None:
            return _invalid("ActiveTasks, StandbyTasks and WarmupTasks must be empty when "
                            "(re-)joining.")
        if req.active_tasks or req.standby_tasks or req.warmup_tasks:
            return _invalid("ActiveTasks, StandbyTasks and WarmupTasks must be empty when "
                            "(re-)joining.")
    elif req.member_epoch == LEAVE_STATIC_EPOCH:
        if req.instance_id is None:
            return _invalid("InstanceId can't be null.")
    elif req.member_epoch < LEAVE_STATIC_EPOCH:
        return _invalid(f"MemberEpoch is {req.member_epoch}, but must be greater than or "
                        "equal to -2.")
    # Kafka 4.4's coordinator refuses what it does not support yet, after the checks above.
    if req.topology is not None and any(s.source_topic_regex
                                        for s in req.topology.subtopologies):
        return _invalid("Regular expressions for source topics are not supported yet.")
    return None


def check_metadata(group: StreamsGroup, topics: Mapping[str, int]) -> bool:
    """Configure the topology against the topics when they changed; True when what the
    topology sees changed, which bumps the group epoch (the target is computed again)."""
    if group.topology is None:
        return False
    from .topology import relevant_topics

    seen = tuple(sorted((t, topics[t]) for t in relevant_topics(group.topology)
                        if t in topics))
    digest = int.from_bytes(hashlib.blake2b(repr(seen).encode(), digest_size=8).digest(),
                            "big", signed=True)
    if group.configured is not None and digest == group.metadata_hash:
        return False
    changed = digest != group.metadata_hash
    group.metadata_hash = digest
    group.configured = configure(group.topology, topics)
    return changed


def compute_target(group: StreamsGroup, configs: AssignmentConfigs) -> None:
    """The target assignment of the group's epoch, from each member's previous target."""
    c = group.configured
    members = [AssignorMember(m.member_id, m.process_id,
                              group.target.get(m.member_id, NO_TASK_TUPLE),
                              group.task_offsets.get(m.member_id, {}))
               for m in group.members.values()]
    if c is None or not c.ready:
        counts: dict[str, int] = {}
        stateful: frozenset[str] = frozenset()
    else:
        counts, stateful = c.task_counts, c.stateful
    group.target = assign(members, counts, stateful, configs.num_standby_replicas)
    group.target_epoch = group.group_epoch


def remove_member(group: StreamsGroup, member_id: str, configs: AssignmentConfigs,
                  delayed: bool = False) -> None:
    """The member leaves: a new group epoch, and its target at once (while the initial
    rebalance delay runs, only an emptied group's, as Kafka writes it)."""
    if group.members.pop(member_id, None) is not None:
        group.target.pop(member_id, None)
        group.task_offsets.pop(member_id, None)
        group.task_end_offsets.pop(member_id, None)
        group.group_epoch += 1
        if not delayed or not group.members:
            compute_target(group, configs)
        if not group.members:
            group.shutdown_request_member_id = None


def _unknown(group: StreamsGroup, mid: str) -> StreamsHeartbeatResult:
    return StreamsHeartbeatResult(ErrorCode.unknown_member_id,
                                  f"Member {mid} is not a member of group {group.group_id}.")


def _fenced(member: StreamsMember, req: StreamsHeartbeat) -> StreamsHeartbeatResult | None:
    """Kafka's ``throwIfStreamsGroupMemberEpochIsInvalid``: an epoch ahead of the member's
    is fenced; one behind only as its previous epoch, owning no task it lacks."""
    epoch = req.member_epoch
    bad = epoch > member.member_epoch
    if epoch < member.member_epoch:
        bad = (epoch != member.previous_member_epoch or req.active_tasks is None
               or not req.active_tasks <= member.active
               or not (req.standby_tasks or NO_TASKS) <= member.standby
               or not (req.warmup_tasks or NO_TASKS) <= member.warmup)
    if not bad:
        return None
    return StreamsHeartbeatResult(
        ErrorCode.fenced_member_epoch,
        f"The streams group member has a invalid member epoch. The member epoch "
        f"{epoch} does not match the current member epoch {member.member_epoch}.")


def _static(group: StreamsGroup, req: StreamsHeartbeat
            ) -> tuple[StreamsMember | None, StreamsHeartbeatResult | None]:
    """Kafka's ``getOrMaybeCreateStaticStreamsGroupMember``: (the member, or an error)."""
    iid, mid = req.instance_id, req.member_id
    existing = group.static_member(iid)
    if req.member_epoch == 0:
        if existing is None:
            return group.members.get(mid) or StreamsMember(mid), None
        if existing.member_epoch != LEAVE_STATIC_EPOCH:
            return None, StreamsHeartbeatResult(
                ErrorCode.unreleased_instance_id,
                f"Static member {mid} with instance id {iid} cannot join the group because "
                f"the instance id is owned by {existing.member_id} member.")
        # The new member takes the old one's place: its tasks and its target.
        target = group.target.pop(existing.member_id, None)
        group.members.pop(existing.member_id)
        group.task_offsets.pop(existing.member_id, None)
        group.task_end_offsets.pop(existing.member_id, None)
        if target is not None:
            group.target[mid] = target
        return replace(existing, member_id=mid, member_epoch=0, previous_member_epoch=0), None
    if existing is None:
        return None, StreamsHeartbeatResult(ErrorCode.unknown_member_id,
                                            f"Instance id {iid} is unknown.")
    if existing.member_id != mid:
        return None, StreamsHeartbeatResult(
            ErrorCode.fenced_instance_id,
            f"Static member {mid} with instance id {iid} was fenced by member "
            f"{existing.member_id}.")
    return existing, _fenced(existing, req)


def _leave(group: StreamsGroup, req: StreamsHeartbeat, configs: AssignmentConfigs,
           delayed: bool) -> StreamsHeartbeatResult:
    """Kafka's ``streamsGroupLeave``: a member leaving with epoch -2 (static) stays with
    its tasks until its session ends; any other leave removes it at once."""
    mid = req.member_id
    if req.instance_id is None:
        if mid not in group.members:
            return _unknown(group, mid)
        remove_member(group, mid, configs, delayed)
        return StreamsHeartbeatResult(NO_ERROR, None, mid, req.member_epoch)
    member, err = _static(group, replace(req, member_epoch=1))
    if err is not None and err.error is not ErrorCode.fenced_member_epoch:
        return err
    assert member is not None
    if req.member_epoch == LEAVE_STATIC_EPOCH:
        # Kafka's resetAssignedTasksEpochsToZero: the replacing member's commits are
        # checked against its own epochs.
        group.members[mid] = replace(member, member_epoch=LEAVE_STATIC_EPOCH,
                                     revoking=NO_TASKS, revoking_standby=NO_TASKS,
                                     revoking_warmup=NO_TASKS,
                                     task_epochs=dict.fromkeys(member.active, 0))
    else:
        remove_member(group, mid, configs, delayed)
    return StreamsHeartbeatResult(NO_ERROR, None, mid, req.member_epoch)


def _assignment(m: StreamsMember) -> tuple[TaskTuple, dict[Task, int]]:
    """Kafka's ``assignedTasks`` (a TasksTupleWithEpochs): the tasks and the epochs of the
    active ones, those being revoked aside."""
    return m.assigned, {t: e for t, e in m.task_epochs.items() if t in m.active}


def endpoints(group: StreamsGroup, topics: Mapping[str, int]
              ) -> tuple[EndpointPartitions, ...]:
    """Kafka's ``EndpointToPartitionsManager``: each member with an IQ endpoint and the
    partitions of its active and standby tasks' source topics."""
    c = group.configured
    sources = {} if c is None else c.sources

    def parts(tasks: Tasks) -> TopicPartitions:
        out: dict[str, set[int]] = {}
        for s, p in tasks:
            for t in sources.get(s, ()):
                if p < topics.get(t, 0):
                    out.setdefault(t, set()).add(p)
        return tuple((t, tuple(sorted(ps))) for t, ps in sorted(out.items()))

    return tuple(EndpointPartitions(m.user_endpoint, parts(m.active), parts(m.standby))
                 for m in group.members.values() if m.user_endpoint is not None)


def heartbeat(group: StreamsGroup, req: StreamsHeartbeat, topics: Mapping[str, int],
              heartbeat_interval_ms: int, max_size: int,
              configs: AssignmentConfigs, delayed: bool = False) -> StreamsHeartbeatResult:
    """One heartbeat on ``group`` (a copy of the live group, or a new one for a join): the
    copy changes; the caller writes the records taking the live group to it. ``delayed``:
    the group's initial rebalance delay runs (its target waits for it, as Kafka's)."""
    mid = req.member_id
    if req.member_epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
        return _leave(group, req, configs, delayed)
    new_group = group.group_epoch == INITIAL_EPOCH and not group.members
    member = group.members.get(mid)
    # A static member taking an old one's place is not new: it has its metadata.
    new_member = member is None and group.static_member(req.instance_id) is None
    if req.member_epoch == 0 and member is None and len(group.members) >= max_size \
            and group.static_member(req.instance_id) is None:
        return StreamsHeartbeatResult(
            ErrorCode.group_max_size_reached,
            f"The streams group has reached its maximum capacity of {max_size} members.")
    if req.instance_id is not None:
        member, err = _static(group, req)
        if err is not None:
            return err
        assert member is not None
    elif req.member_epoch == 0:
        member = member or StreamsMember(mid)
    else:
        if member is None:
            return _unknown(group, mid)
        err = _fenced(member, req)
        if err is not None:
            return err
    status: list[Status] = []
    # Kafka bumps the group epoch once for everything a heartbeat changes.
    bump = False
    if req.topology is not None:
        if group.topology is None or not group.members or (
                len(group.members) == 1 and not new_member):
            if group.topology != req.topology:
                group.topology = req.topology
                group.configured = None
                bump = True
    topology_epoch = req.topology.epoch if req.topology is not None else member.topology_epoch
    updated = replace(
        member,
        instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
        rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
        client_id=req.client_id, client_host=req.client_host,
        rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                              else member.rebalance_timeout_ms),
        topology_epoch=topology_epoch,
        process_id=req.process_id if req.process_id is not None else member.process_id,
        user_endpoint=(req.user_endpoint if req.user_endpoint is not None
                       else member.user_endpoint),
        client_tags=req.client_tags if req.client_tags is not None else member.client_tags)
    if new_member or (updated.process_id, updated.user_endpoint, updated.rack_id,
                      updated.client_tags, updated.topology_epoch) != (
            member.process_id, member.user_endpoint, member.rack_id, member.client_tags,
            member.topology_epoch):
        bump = True
    # Kafka's MemberTaskOffsets.update: each list replaces its own when sent.
    if req.task_offsets is not None:
        group.task_offsets[mid] = dict(req.task_offsets)
    if req.task_end_offsets is not None:
        group.task_end_offsets[mid] = dict(req.task_end_offsets)
    group.members[mid] = updated
    if check_metadata(group, topics) or bump or group.assignment_standby not in (
            None, configs.num_standby_replicas):
        group.group_epoch += 1
        group.assignment_standby = configs.num_standby_replicas
    if group.target_epoch != group.group_epoch and not delayed:
        compute_target(group, configs)
    before = updated
    owned = None if req.active_tasks is None else TaskTuple(
        req.active_tasks, req.standby_tasks or NO_TASKS, req.warmup_tasks or NO_TASKS)
    if updated.state == STABLE and updated.member_epoch == group.target_epoch:
        after = updated  # reconciled: no need to look at who holds what
    else:
        # While delayed, Kafka reconciles toward an empty target of the assignment epoch.
        target = NO_TASK_TUPLE if delayed else group.target.get(mid, NO_TASK_TUPLE)
        after = reconcile(updated, group.target_epoch, target, owned, group.holders())
    group.members[mid] = after
    # Kafka's endpoint epoch moves when the member's endpoint changed, or its tasks did
    # while it has one (the IQ partitions changed).
    if after.user_endpoint != member.user_endpoint or (
            after.user_endpoint is not None and after.assigned != member.assigned):
        group.endpoint_information_epoch += 1
    if group.topology is not None and after.topology_epoch != group.topology.epoch:
        status.append(Status(STALE_TOPOLOGY, (
            f"The member's topology epoch {after.topology_epoch} is behind the group's "
            f"topology epoch {group.topology.epoch}.")))
    if delayed:
        status.append(Status(ASSIGNMENT_DELAYED,
                             "Assignment delayed due to the configured initial rebalance delay."))
    if group.configured is not None:
        status.extend(group.configured.status)
    # Kafka's setShutdownRequestMemberId: the first request stands until the group empties.
    if req.shutdown_application and group.shutdown_request_member_id is None:
        group.shutdown_request_member_id = mid
    if group.shutdown_request_member_id is not None:
        status.append(Status(SHUTDOWN_APPLICATION, (
            f"Streams group member {group.shutdown_request_member_id} encountered a fatal "
            f"error and requested a shutdown for the entire application.")))
    # Kafka 4.4 sends the tasks to a joining member and when its assigned tasks (active
    # ones with their epochs) changed; not for owned tasks sent again, nor a new epoch alone.
    send = req.member_epoch == 0 or _assignment(after) != _assignment(before)
    iq = None
    if req.endpoint_information_epoch != group.endpoint_information_epoch:
        iq = endpoints(group, topics)
    # A group this heartbeat creates answers endpoint epoch 0, as Kafka's (it sets the
    # field only for a group it already had).
    return StreamsHeartbeatResult(
        NO_ERROR, None, mid, after.member_epoch, heartbeat_interval_ms,
        tuple(status), after.active if send else None,
        0 if new_group else group.endpoint_information_epoch,
        tuple(group.configured.to_create) if group.configured is not None else (),
        after.standby if send else None, after.warmup if send else None, iq)
