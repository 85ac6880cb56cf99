"""A streams group (KIP-1071) as Kafka 4.4's ``GroupMetadataManager`` runs it, in a pure
form over the manual clock's ``now``: StreamsGroupHeartbeat's validation, the member's
join, its topology, the group epoch, the target assignment (``assignor``) and each member's
reconciliation toward it, as Kafka's streams ``CurrentAssignmentBuilder`` does:

- a member whose current tasks are all in its target takes the target epoch at once, with
  the target's tasks that no other member still owns; those others come on a later
  heartbeat (state UNRELEASED_TASKS);
- a member that must give tasks up keeps its epoch and is sent only the tasks it keeps
  (UNREVOKED_TASKS) until a heartbeat reports that it owns none of the revoked ones.

Timers and records are the membership part's (``streams.membership``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from .assignor import AssignorMember, assign
from .topology import STALE_TOPOLOGY, Configured, Status, Tasks, Topology, configure

LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2

STABLE = "STABLE"
UNREVOKED_TASKS = "UNREVOKED_TASKS"
UNRELEASED_TASKS = "UNRELEASED_TASKS"

NO_TASKS: Tasks = frozenset()


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
    #: Active tasks the member must give up before it moves on (UNREVOKED_TASKS).
    revoking: Tasks = NO_TASKS


@dataclass(slots=True)
class StreamsGroup:
    group_id: str
    group_epoch: int = 0
    topology: Topology | None = None
    #: A hash of the partition counts of the topics the topology uses, as last configured
    #: (kept in the group's metadata record: a reload does not bump the epoch).
    metadata_hash: int = 0
    configured: Configured | None = None
    target_epoch: int = 0
    target: dict[str, Tasks] = field(default_factory=dict)
    members: dict[str, StreamsMember] = field(default_factory=dict)
    endpoint_information_epoch: int = 0

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

    def owned_by_others(self, member_id: str) -> Tasks:
        out: set[tuple[str, int]] = set()
        for m in self.members.values():
            if m.member_id != member_id:
                out |= m.active | m.revoking
        return frozenset(out)


@dataclass(frozen=True, slots=True)
class AssignmentConfigs:
    """The group's assignor settings (streams.num.standby.replicas and the warm-up ones)."""

    num_standby_replicas: int = 0
    num_warmup_replicas: int = 2
    acceptable_recovery_lag: int = 10000


def copy_group(group: StreamsGroup) -> StreamsGroup:
    """A copy a heartbeat may change (members are immutable; their maps are copied)."""
    return replace(group, members=dict(group.members), target=dict(group.target))


def keep_caches(live: StreamsGroup, changed: StreamsGroup) -> None:
    """What no record carries, from the changed copy once its records are in: the
    topology as configured against the topics and the endpoints' epoch (Kafka keeps both
    in memory only)."""
    if live.topology == changed.topology:
        live.configured = changed.configured
    live.endpoint_information_epoch = changed.endpoint_information_epoch


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
    #: The active tasks the member owns; None: unchanged since its last heartbeat.
    active_tasks: Tasks | None = None
    standby_tasks: Tasks | None = None
    warmup_tasks: Tasks | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] | None = None
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
    #: The member's active tasks, when they are sent; None: unchanged.
    active_tasks: Tasks | None = None
    endpoint_information_epoch: int = 0
    #: Internal topics the coordinator must create (MISSING_INTERNAL_TOPICS).
    to_create: tuple[object, ...] = ()


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
    """The target assignment of the group's epoch."""
    tasks = [] if group.configured is None else group.configured.tasks()
    members = [AssignorMember(m.member_id, m.process_id, m.active)
               for m in group.members.values()]
    group.target = assign(members, tasks)
    group.target_epoch = group.group_epoch


def reconcile(group: StreamsGroup, member: StreamsMember, owned: Tasks | None
              ) -> StreamsMember:
    """The member's next current assignment toward its target."""
    target = group.target.get(member.member_id, NO_TASKS)
    epoch = group.target_epoch
    if member.state == UNREVOKED_TASKS:
        if owned is None or owned & member.revoking:
            return member
    elif member.member_epoch == epoch and member.state == STABLE:
        return member
    revoked = member.active - target
    if revoked:
        return replace(member, state=UNREVOKED_TASKS, active=member.active & target,
                       revoking=revoked)
    others = group.owned_by_others(member.member_id)
    active = member.active | frozenset(t for t in target if t not in others)
    state = UNRELEASED_TASKS if active != target else STABLE
    previous = member.member_epoch if member.member_epoch != epoch else \
        member.previous_member_epoch
    return replace(member, state=state, active=active, revoking=NO_TASKS,
                   member_epoch=epoch, previous_member_epoch=previous)


def remove_member(group: StreamsGroup, member_id: str, configs: AssignmentConfigs) -> None:
    """The member leaves: a new group epoch, and its target at once, as Kafka computes it."""
    if group.members.pop(member_id, None) is not None:
        group.target.pop(member_id, None)
        group.group_epoch += 1
        compute_target(group, configs)


def heartbeat(group: StreamsGroup, req: StreamsHeartbeat, topics: Mapping[str, int],
              heartbeat_interval_ms: int, max_size: int,
              configs: AssignmentConfigs = AssignmentConfigs()) -> StreamsHeartbeatResult:
    """One heartbeat on ``group`` (a copy of the live group, or a new one for a join): the
    copy changes; the caller writes the records taking the live group to it."""
    mid = req.member_id
    member = group.members.get(mid)
    if req.member_epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
        if member is None:
            return StreamsHeartbeatResult(
                ErrorCode.unknown_member_id,
                f"Member {mid} is not a member of group {group.group_id}.")
        remove_member(group, mid, configs)
        return StreamsHeartbeatResult(NO_ERROR, None, mid, req.member_epoch)
    if req.member_epoch == 0:
        if member is None and len(group.members) >= max_size:
            return StreamsHeartbeatResult(
                ErrorCode.group_max_size_reached,
                f"The streams group has reached its maximum capacity of {max_size} members.")
        if member is None:
            member = StreamsMember(mid)
        else:
            member = replace(member, active=NO_TASKS, revoking=NO_TASKS, state=STABLE,
                             member_epoch=0)
    else:
        if member is None:
            return StreamsHeartbeatResult(
                ErrorCode.unknown_member_id,
                f"Member {mid} is not a member of group {group.group_id}.")
        if req.member_epoch > member.member_epoch or (
                req.member_epoch < member.member_epoch
                and (req.member_epoch != member.previous_member_epoch
                     or req.active_tasks is None
                     or not req.active_tasks <= member.active)):
            return StreamsHeartbeatResult(
                ErrorCode.fenced_member_epoch,
                f"The streams group member has a invalid member epoch. The member epoch "
                f"{req.member_epoch} does not match the current member epoch "
                f"{member.member_epoch}.")
    status: list[Status] = []
    new_member = mid not in group.members
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
        if updated.user_endpoint != member.user_endpoint:
            group.endpoint_information_epoch += 1
    group.members[mid] = updated
    if check_metadata(group, topics) or bump:
        group.group_epoch += 1
    if group.target_epoch != group.group_epoch:
        compute_target(group, configs)
    before = updated
    after = reconcile(group, updated, req.active_tasks)
    group.members[mid] = after
    if group.topology is not None and after.topology_epoch != group.topology.epoch:
        status.append(Status(STALE_TOPOLOGY, (
            f"The member's topology epoch {after.topology_epoch} is behind the group's "
            f"topology epoch {group.topology.epoch}.")))
    if group.configured is not None:
        status.extend(group.configured.status)
    send = (req.member_epoch == 0 or req.active_tasks is not None
            or after.active != before.active or after.member_epoch != before.member_epoch
            or req.member_epoch != after.member_epoch)
    return StreamsHeartbeatResult(
        NO_ERROR, None, mid, after.member_epoch, heartbeat_interval_ms,
        tuple(status), after.active if send else None, group.endpoint_information_epoch,
        tuple(group.configured.to_create) if group.configured is not None else ())
