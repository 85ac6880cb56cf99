"""Target assignment and member reconciliation of KIP-848 consumer groups.

:func:`build_target_assignment` is Kafka's ``TargetAssignmentBuilder``: it runs the
group's assignor over the members (with an updated or removed member applied) and
returns the records of the target that changed. :func:`reconcile` is Kafka's
``CurrentAssignmentBuilder``: it moves one member towards its target, revoking first and
assigning a partition only once its previous owner no longer holds it.
:func:`validate_member_epoch` is the epoch check of a heartbeat.

Pure functions: the caller passes the group as it stands and gets records back.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from .assignors import (
    UNIFORM,
    Assignment,
    GroupSpec,
    MemberSpec,
    SubscriptionType,
    assign,
)
from .group import ConsumerGroup, ConsumerGroupMember, MemberState, TopicMetadata
from .records import Record, target_assignment_epoch_record, target_assignment_record

#: What a heartbeat says the member owns: (topic id, partitions) pairs, None if not sent.
Owned = Iterable[tuple[uuid.UUID, Iterable[int]]] | None


class FencedMemberEpoch(Exception):
    """FENCED_MEMBER_EPOCH: the member must give up its partitions and rejoin."""


def _owned_map(owned: Owned) -> dict[uuid.UUID, set[int]] | None:
    if owned is None:
        return None
    out: dict[uuid.UUID, set[int]] = {}
    for t, parts in owned:
        out.setdefault(t, set()).update(parts)
    return out


def _is_subset(owned: dict[uuid.UUID, set[int]] | None, assignment: Assignment) -> bool:
    if owned is None:
        return False
    return all(t in assignment and parts <= assignment[t] for t, parts in owned.items())


def validate_member_epoch(member: ConsumerGroupMember, received_epoch: int,
                          owned: Owned) -> None:
    """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``. The previous epoch is still
    accepted with a subset of the assigned partitions: the response that bumped the
    epoch may have been lost. Epoch 0 is a member rejoining (after FENCED_MEMBER_EPOCH,
    with its member id): accepted as KIP-848 specifies (Kafka 4.0.0 fenced it again,
    fixed by KAFKA-19233)."""
    if received_epoch == 0:
        return
    if received_epoch > member.member_epoch:
        raise FencedMemberEpoch(
            f"The consumer group member has a greater member epoch ({received_epoch}) than the "
            f"one known by the group coordinator ({member.member_epoch}). The member must "
            "abandon all its partitions and rejoin.")
    if received_epoch < member.member_epoch and (
            received_epoch != member.previous_member_epoch
            or not _is_subset(_owned_map(owned), member.assigned_partitions)):
        raise FencedMemberEpoch(
            f"The consumer group member has a smaller member epoch ({received_epoch}) than the "
            f"one known by the group coordinator ({member.member_epoch}). The member must "
            "abandon all its partitions and rejoin.")


# --- reconciliation -----------------------------------------------------------------------


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
              current_partition_epoch: Callable[[uuid.UUID, int], int], owned: Owned,
              subscribed_topic_ids: Collection[uuid.UUID] | None = None,
              has_subscription_changed: bool = False) -> ConsumerGroupMember:
    """The member's next state (itself when it cannot move on), as Kafka computes it.

    ``current_partition_epoch`` gives the epoch of a partition's owner, -1 when free;
    ``owned`` what the member reported owning; ``subscribed_topic_ids``, when given, the
    topics the member subscribes to now: partitions of other topics are revoked even
    before a new target says so.
    """
    r = _Reconciler(member, target_epoch, target, current_partition_epoch, _owned_map(owned),
                    subscribed_topic_ids, has_subscription_changed)
    return r.build()


@dataclass(slots=True)
class _Reconciler:
    member: ConsumerGroupMember
    target_epoch: int
    target: Assignment
    partition_epoch: Callable[[uuid.UUID, int], int]
    owned: dict[uuid.UUID, set[int]] | None
    subscribed: Collection[uuid.UUID] | None
    subscription_changed: bool

    def build(self) -> ConsumerGroupMember:
        m = self.member
        if m.state is MemberState.STABLE:
            # A newer target: move towards it. Otherwise only drop unsubscribed topics.
            if m.member_epoch != self.target_epoch:
                return self.next_assignment(m.member_epoch, m.assigned_partitions)
            if self.subscription_changed:
                return self.drop_unsubscribed(m.assigned_partitions)
            return m
        if m.state is MemberState.UNREVOKED_PARTITIONS:
            # Wait until none of the partitions to revoke is reported as owned.
            if self.owns_any(m.partitions_pending_revocation):
                if self.subscription_changed:
                    return self.drop_unsubscribed(m.assigned_partitions)
                return m
            # Revoked: the next epoch, but never beyond the target (a subscription change
            # may have revoked before any new target exists).
            return self.next_assignment(min(m.member_epoch + 1, self.target_epoch),
                                        m.assigned_partitions)
        if m.state is MemberState.UNRELEASED_PARTITIONS:
            return self.next_assignment(m.member_epoch, m.assigned_partitions)
        # UNKNOWN: only written by a newer broker; start over from no partitions.
        if self.owned is None or self.owned:
            raise FencedMemberEpoch("The consumer group member is in a unknown state. The member "
                                    "must abandon all its partitions and rejoin.")
        return self.next_assignment(self.target_epoch, m.assigned_partitions)

    def owns_any(self, pending: Assignment) -> bool:
        """Whether the member still reports owning one of ``pending`` (yes if it did not say)."""
        if self.owned is None:
            return True
        return any(parts & pending.get(t, frozenset()) for t, parts in self.owned.items())

    def is_subscribed(self, topic_id: uuid.UUID) -> bool:
        return self.subscribed is None or topic_id in self.subscribed

    def drop_unsubscribed(self, assigned: Assignment) -> ConsumerGroupMember:
        m = self.member
        dropped = {t: p for t, p in assigned.items() if not self.is_subscribed(t)}
        if not dropped:
            return m
        kept = {t: p for t, p in assigned.items() if t not in dropped}
        pending = dict(m.partitions_pending_revocation)
        for t, p in dropped.items():
            pending[t] = pending.get(t, frozenset()) | p
        if self.owns_any(pending):
            return replace(m, state=MemberState.UNREVOKED_PARTITIONS, assigned_partitions=kept,
                           partitions_pending_revocation=pending)
        # Already given up by the member: just shrink the assignment.
        return replace(m, assigned_partitions=kept)

    def next_assignment(self, epoch: int, assigned: Assignment) -> ConsumerGroupMember:
        m = self.member
        unreleased = False
        new_assigned: dict[uuid.UUID, frozenset[int]] = {}
        revoke: dict[uuid.UUID, frozenset[int]] = {}
        to_assign: dict[uuid.UUID, frozenset[int]] = {}
        for t in set(self.target) | set(assigned):
            target = self.target.get(t, frozenset()) if self.is_subscribed(t) else frozenset()
            current = assigned.get(t, frozenset())
            keep = current & target
            free: set[int] = set()
            for p in target - keep:
                # Still owned by another member: wait for it. A partition this member is
                # itself revoking is not in the way (one owner at a time).
                if (self.partition_epoch(t, p) != -1
                        and p not in m.partitions_pending_revocation.get(t, frozenset())):
                    unreleased = True
                else:
                    free.add(p)
            if keep:
                new_assigned[t] = keep
            if current - keep:
                revoke[t] = current - keep
            if free:
                to_assign[t] = frozenset(free)
        if revoke and self.owns_any(revoke):
            # Revoke first, at the current epoch.
            return replace(m.update_member_epoch(epoch), state=MemberState.UNREVOKED_PARTITIONS,
                           assigned_partitions=new_assigned, partitions_pending_revocation=revoke)
        for t, parts in to_assign.items():
            new_assigned[t] = new_assigned.get(t, frozenset()) | parts
        state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return replace(m.update_member_epoch(self.target_epoch), state=state,
                       assigned_partitions=new_assigned, partitions_pending_revocation={})


# --- target assignment --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TargetAssignmentResult:
    #: TargetAssignmentMember records of the members whose target changed, then the epoch.
    records: list[Record]
    #: The whole new target, every member included.
    assignment: dict[str, Assignment]


def build_target_assignment(
    group: ConsumerGroup,
    group_epoch: int,
    assignor: str | None,
    subscription_metadata: Mapping[str, TopicMetadata],
    subscription_type: SubscriptionType,
    updated: Mapping[str, ConsumerGroupMember | None] | None = None,
) -> TargetAssignmentResult:
    """Kafka's ``TargetAssignmentBuilder``: the group's members with ``updated`` applied
    (a member, or None to remove one), their current targets as the assignor's input
    (a static member that replaces another starts from the other's target, and the other
    leaves the computation), and the records of what changed plus the new target
    assignment epoch.

    ``subscription_metadata`` and ``subscription_type`` are the group's as they will be
    after this heartbeat (the caller computes them with the updated member).
    """
    updated = updated or {}
    members: dict[str, ConsumerGroupMember] = dict(group.members)
    for member_id, m in updated.items():
        if m is None:
            members.pop(member_id, None)
            continue
        members[member_id] = m
        # A static member under a new id replaces its instance's previous member.
        previous = group.static_members.get(m.instance_id) if m.instance_id else None
        if previous is not None and previous != member_id:
            members.pop(previous, None)
    ids_by_name = {n: t.topic_id for n, t in subscription_metadata.items()}
    specs: dict[str, MemberSpec] = {}
    for member_id, m in members.items():
        current = group.target_assignment.get(member_id, {})
        if member_id in updated and m.instance_id is not None:
            previous = group.static_members.get(m.instance_id)
            if previous is not None and previous != member_id:
                current = group.target_assignment.get(previous, {})
        names: set[str] = set(m.subscribed_topic_names)
        resolved = group.resolved_regexes.get(m.regex) if m.regex is not None else None
        if resolved is not None:
            names |= resolved.topics
        topics = frozenset(ids_by_name[n] for n in names if n in ids_by_name)
        specs[member_id] = MemberSpec(topics, current, m.instance_id)
    spec = GroupSpec(specs, subscription_type,
                     {t.topic_id: t.num_partitions for t in subscription_metadata.values()})
    new = assign(assignor or UNIFORM, spec)
    records: list[Record] = []
    for member_id in sorted(specs):
        if member_id not in group.target_assignment or \
                _normalized(group.target_assignment[member_id]) != _normalized(new[member_id]):
            records.append(target_assignment_record(group.group_id, member_id, new[member_id]))
    records.append(target_assignment_epoch_record(group.group_id, group_epoch))
    return TargetAssignmentResult(records, dict(new))


def _normalized(a: Assignment) -> dict[uuid.UUID, frozenset[int]]:
    return {t: frozenset(p) for t, p in a.items() if p}
