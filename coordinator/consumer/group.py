"""KIP-848 consumer groups: the group and member model, changed only by replaying records.

How these pieces sit in the one coordinator core (Kafka's ``GroupMetadataManager``):

``ConsumerGroupHeartbeat`` is one pure step that returns records and a response:

1. validate the request (Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``; a
   regex through :func:`.topic_regex.compile_regex`), then find or create the member:
   epoch 0 joins (a static member replaces a departed one with
   :func:`.consumer_records.replace_member_records`, UNRELEASED_INSTANCE_ID if the old
   one has not left with epoch -2), any other epoch goes through
   :func:`.reconciliation.validate_member_epoch` (FENCED_MEMBER_EPOCH, the lost-response
   rule); GROUP_MAX_SIZE_REACHED before a new member is added.
2. update the member's subscription (a copy with the request's fields); if it differs,
   :func:`.consumer_records.member_subscription_record`. A new group (epoch 0), a changed
   topic list or regex, or subscription metadata that no longer matches the topics
   (:meth:`ConsumerGroup.compute_subscription_metadata`, also after topics are created,
   deleted or grow) bumps the group epoch: a ConsumerGroupPartitionMetadata record when
   the metadata changed and a ConsumerGroupMetadata record with epoch + 1. A new regex,
   or one resolved before the topic set changed, is resolved
   (:class:`.topic_regex.TopicRegexResolver`) and written as a
   ConsumerGroupRegularExpression record, with an epoch bump when its topics changed.
3. if the group epoch is above the target assignment epoch, compute a new target
   assignment (:func:`.reconciliation.build_target_assignment` with the group's preferred
   assignor): a ConsumerGroupTargetAssignmentMember record per member whose target
   changed, then ConsumerGroupTargetAssignmentMetadata with the group epoch.
4. reconcile the member (:func:`.reconciliation.reconcile`) against its target and the
   partitions it reports owning; a ConsumerGroupCurrentMemberAssignment record if it
   moved on. Partitions are revoked first; a partition reaches its new owner only once
   :meth:`ConsumerGroup.current_partition_epoch` says its previous owner released it.
   The rebalance timer runs while the member is UNREVOKED_PARTITIONS.
5. answer with the member's epoch and, when it changed or on a full request, its assigned
   partitions.

The runtime appends the records, replays them through :func:`replay` (the same function
that loads the log at start-up) and only then answers. Leaving (epoch -1), session and
rebalance timeouts write :func:`.consumer_records.remove_member_records` plus a group
epoch bump (and the tombstone of a regex whose last subscriber left); a static member
leaving with epoch -2 keeps its assignment and writes its current assignment with epoch
-2. ``tests/coordinator/kip848_sim.py`` runs this loop over these functions.

Fields follow Kafka's ``ConsumerGroup``/``ConsumerGroupMember`` (``modern.consumer``).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from kafkalite.protocol import consumer_group_records as cg
from kafkalite.protocol.errors import ErrorCode

from ..topics_image import TopicMetadata as TopicMetadata
from .assignors import Assignment, SubscriptionType
from .topic_regex import ResolvedRegularExpression

#: The member epoch of a member that left (Kafka's LEAVE_GROUP_MEMBER_EPOCH).
LEAVE_GROUP_MEMBER_EPOCH = -1
#: The member epoch of a static member that left temporarily.
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(enum.IntEnum):
    """Kafka's ``MemberState``; the value is the byte in the current assignment record."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def from_value(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class ReplayError(Exception):
    """A record that contradicts the state (Kafka's IllegalStateException on replay)."""


class GroupError(Exception):
    """An ApiException of Kafka's group coordinator: the answer's error and message."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


def uses_classic_protocol(member: ConsumerGroupMember) -> bool:
    return member.classic_member_metadata is not None


def to_assignment(tps: tuple[cg.TopicIdPartitions, ...]) -> dict[uuid.UUID, frozenset[int]]:
    out: dict[uuid.UUID, frozenset[int]] = {}
    for tp in tps:
        out[tp.topic_id] = out.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return {t: p for t, p in out.items() if p}


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    #: "" when not subscribed by regex (Kafka's default, written as such); None if a
    #: record said null.
    subscribed_topic_regex: str | None = ""
    server_assignor_name: str | None = None
    assigned_partitions: Assignment = field(default_factory=dict)
    partitions_pending_revocation: Assignment = field(default_factory=dict)
    classic_member_metadata: cg.ClassicMemberMetadata | None = None

    @property
    def regex(self) -> str | None:
        """The subscribed regex or None (Kafka's ``subscribedTopicRegexOrNull``)."""
        return self.subscribed_topic_regex or None

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_assignment_epoch

    def update_member_epoch(self, epoch: int) -> ConsumerGroupMember:
        """A copy at ``epoch`` whose previous epoch is this member's epoch."""
        return replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch)

    def with_metadata(self, v: cg.ConsumerGroupMemberMetadataValue) -> ConsumerGroupMember:
        return replace(
            self, instance_id=v.instance_id, rack_id=v.rack_id, client_id=v.client_id,
            client_host=v.client_host, subscribed_topic_names=frozenset(v.subscribed_topic_names),
            subscribed_topic_regex=v.subscribed_topic_regex,
            rebalance_timeout_ms=v.rebalance_timeout_ms, server_assignor_name=v.server_assignor,
            classic_member_metadata=v.classic_member_metadata)

    def with_current_assignment(
        self, v: cg.ConsumerGroupCurrentMemberAssignmentValue
    ) -> ConsumerGroupMember:
        return replace(
            self, member_epoch=v.member_epoch, previous_member_epoch=v.previous_member_epoch,
            state=MemberState.from_value(v.state),
            assigned_partitions=to_assignment(v.assigned_partitions),
            partitions_pending_revocation=to_assignment(v.partitions_pending_revocation))


@dataclass(frozen=True, slots=True)
class SubscriptionCount:
    """How many members subscribe to a topic by name, and how many resolved regexes match it."""

    by_name: int = 0
    by_regex: int = 0

    def add(self, by_name: int = 0, by_regex: int = 0) -> SubscriptionCount | None:
        out = SubscriptionCount(self.by_name + by_name, self.by_regex + by_regex)
        return out if out.by_name > 0 or out.by_regex > 0 else None


def count_subscription(counts: dict[str, SubscriptionCount], topic: str, by_name: int = 0,
                       by_regex: int = 0) -> None:
    """Add to (or take from) a topic's subscription count; a count of zero goes."""
    new = counts.get(topic, SubscriptionCount()).add(by_name, by_regex)
    if new is None:
        counts.pop(topic, None)
    else:
        counts[topic] = new


def _inc(counts: dict[str, int], name: str, delta: int) -> None:
    n = counts.get(name, 0) + delta
    if n > 0:
        counts[name] = n
    else:
        counts.pop(name, None)


def subscription_type(regexes: Mapping[str, int], topics: Mapping[str, SubscriptionCount],
                      num_members: int) -> SubscriptionType:
    """Kafka's ``ConsumerGroup.subscriptionType``: homogeneous when every member subscribes
    to the same topic names, or every member to one and the same regex and nothing else."""
    if not regexes:
        if all(c.by_name == num_members for c in topics.values()):
            return SubscriptionType.HOMOGENEOUS
        return SubscriptionType.HETEROGENEOUS
    if next(iter(regexes.values())) == num_members:
        if all(c.by_regex == 1 and c.by_name == 0 for c in topics.values()):
            return SubscriptionType.HOMOGENEOUS
    return SubscriptionType.HETEROGENEOUS


@dataclass(eq=False, slots=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    #: The target assignment epoch; -1 once its tombstone was replayed.
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    #: instance id -> member id.
    static_members: dict[str, str] = field(default_factory=dict)
    target_assignment: dict[str, Assignment] = field(default_factory=dict)
    #: topic id -> partition -> member id, of the target assignment.
    inverted_target_assignment: dict[uuid.UUID, dict[int, str]] = field(default_factory=dict)
    #: topic name -> metadata, of the subscribed topics (ConsumerGroupPartitionMetadata).
    subscription_metadata: dict[str, TopicMetadata] = field(default_factory=dict)
    #: Kafka 4.1+ writes this hash instead of the subscription metadata (read, not written).
    metadata_hash: int = 0
    subscribed_topic_names: dict[str, SubscriptionCount] = field(default_factory=dict)
    #: regex -> number of members subscribed to it.
    subscribed_regexes: dict[str, int] = field(default_factory=dict)
    resolved_regexes: dict[str, ResolvedRegularExpression] = field(default_factory=dict)
    server_assignors: dict[str, int] = field(default_factory=dict)
    #: topic id -> partition -> epoch of the member that owns it (assigned or revoking).
    partition_epochs: dict[uuid.UUID, dict[int, int]] = field(default_factory=dict)

    # --- derived state ------------------------------------------------------------------

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    @property
    def subscription_type(self) -> SubscriptionType:
        return subscription_type(self.subscribed_regexes, self.subscribed_topic_names,
                                 len(self.members))

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member owning the partition, -1 when nobody owns it."""
        return self.partition_epochs.get(topic_id, {}).get(partition, -1)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = None if instance_id is None else self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def target_assignment_of(self, member_id: str, instance_id: str | None = None) -> Assignment:
        """The member's target; a static member's is its instance's previous member's."""
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            if previous is not None:
                return self.target_assignment.get(previous, {})
        return self.target_assignment.get(member_id, {})

    def preferred_server_assignor(self) -> str | None:
        return _preferred(self.server_assignors)

    def compute_preferred_server_assignor(self, old: ConsumerGroupMember | None,
                                          new: ConsumerGroupMember | None) -> str | None:
        counts = dict(self.server_assignors)
        _update_assignors(counts, old, new)
        return _preferred(counts)

    def compute_subscribed_topic_names(self, old: ConsumerGroupMember | None,
                                       new: ConsumerGroupMember | None
                                       ) -> dict[str, SubscriptionCount]:
        """The topic counts as they would be with ``old`` replaced by ``new``."""
        counts = dict(self.subscribed_topic_names)
        _update_names(counts, old, new)
        old_regex = None if old is None else old.regex
        if (old_regex is not None and old_regex != (None if new is None else new.regex)
                and self.subscribed_regexes.get(old_regex, 0) == 1):
            # Its last subscriber leaves the regex: its topics go too.
            resolved = self.resolved_regexes.get(old_regex)
            for t in resolved.topics if resolved is not None else ():
                count_subscription(counts, t, by_regex=-1)
        return counts

    def compute_subscribed_regexes(self, old: ConsumerGroupMember | None,
                                   new: ConsumerGroupMember | None) -> dict[str, int]:
        counts = dict(self.subscribed_regexes)
        _update_regexes(counts, old, new)
        return counts

    @staticmethod
    def compute_subscription_metadata(subscribed: Mapping[str, SubscriptionCount],
                                      topics: Mapping[str, TopicMetadata]
                                      ) -> dict[str, TopicMetadata]:
        """The metadata of the subscribed topics that exist, from the broker's topics."""
        return {name: topics[name] for name in subscribed if name in topics}

    def subscribed_topic_ids(self, member: ConsumerGroupMember,
                             topics: Mapping[str, TopicMetadata] | None = None
                             ) -> frozenset[uuid.UUID]:
        """The ids of the topics ``member`` subscribes to, by name or by its resolved regex,
        among ``topics`` (the broker's topics; the subscription metadata by default)."""
        names: set[str] = set(member.subscribed_topic_names)
        regex = member.regex
        if regex is not None and regex in self.resolved_regexes:
            names |= self.resolved_regexes[regex].topics
        meta = self.subscription_metadata if topics is None else topics
        return frozenset(meta[n].topic_id for n in names if n in meta)

    # --- mutation: only replay calls these ----------------------------------------------

    def update_member(self, new: ConsumerGroupMember) -> None:
        old = self.members.get(new.member_id)
        self._remove_epochs(old)
        self._add_epochs(new.assigned_partitions, new.member_epoch)
        self._add_epochs(new.partitions_pending_revocation, new.member_epoch)
        self.members[new.member_id] = new
        _update_names(self.subscribed_topic_names, old, new)
        _update_assignors(self.server_assignors, old, new)
        _update_regexes(self.subscribed_regexes, old, new)
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._remove_epochs(old)
        _update_names(self.subscribed_topic_names, old, None)
        _update_assignors(self.server_assignors, old, None)
        _update_regexes(self.subscribed_regexes, old, None)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    def update_target_assignment(self, member_id: str, assignment: Assignment) -> None:
        old = self.target_assignment.get(member_id, {})
        for t in set(old) | set(assignment):
            inv = self.inverted_target_assignment.setdefault(t, {})
            before, after = old.get(t, frozenset()), assignment.get(t, frozenset())
            for p in before - after:
                # Another member may already hold it in the new target: keep that.
                if inv.get(p) == member_id:
                    del inv[p]
            for p in after - before:
                inv[p] = member_id
            if not inv:
                del self.inverted_target_assignment[t]
        self.target_assignment[member_id] = dict(assignment)

    def remove_target_assignment(self, member_id: str) -> None:
        self.update_target_assignment(member_id, {})
        self.target_assignment.pop(member_id, None)

    def update_resolved_regex(self, regex: str, resolved: ResolvedRegularExpression) -> None:
        self.remove_resolved_regex(regex)
        self.resolved_regexes[regex] = resolved
        for t in resolved.topics:
            count_subscription(self.subscribed_topic_names, t, by_regex=1)

    def remove_resolved_regex(self, regex: str) -> None:
        old = self.resolved_regexes.pop(regex, None)
        for t in old.topics if old is not None else ():
            count_subscription(self.subscribed_topic_names, t, by_regex=-1)

    def _add_epochs(self, assignment: Assignment, epoch: int) -> None:
        for t, parts in assignment.items():
            owned = self.partition_epochs.setdefault(t, {})
            for p in parts:
                if p in owned:
                    raise ReplayError(f"Cannot set the epoch of {t}-{p} to {epoch} because the "
                                      f"partition is still owned at epoch {owned[p]}")
                owned[p] = epoch

    def _remove_epochs(self, member: ConsumerGroupMember | None) -> None:
        if member is None:
            return
        for assignment in (member.assigned_partitions, member.partitions_pending_revocation):
            for t, parts in assignment.items():
                owned = self.partition_epochs.get(t, {})
                for p in parts:
                    if owned.pop(p, None) != member.member_epoch:
                        raise ReplayError(f"Cannot remove the epoch {member.member_epoch} from "
                                          f"{t}-{p}: it is owned at another epoch")
                if not owned:
                    self.partition_epochs.pop(t, None)


def _preferred(counts: Mapping[str, int]) -> str | None:
    # The most used; on a tie the first name (Kafka: the first in its map's order).
    return min(counts, key=lambda n: (-counts[n], n)) if counts else None


def _update_names(counts: dict[str, SubscriptionCount], old: ConsumerGroupMember | None,
                  new: ConsumerGroupMember | None) -> None:
    for t in old.subscribed_topic_names if old is not None else ():
        count_subscription(counts, t, by_name=-1)
    for t in new.subscribed_topic_names if new is not None else ():
        count_subscription(counts, t, by_name=1)


def _update_assignors(counts: dict[str, int], old: ConsumerGroupMember | None,
                      new: ConsumerGroupMember | None) -> None:
    if old is not None and old.server_assignor_name is not None:
        _inc(counts, old.server_assignor_name, -1)
    if new is not None and new.server_assignor_name is not None:
        _inc(counts, new.server_assignor_name, 1)


def _update_regexes(counts: dict[str, int], old: ConsumerGroupMember | None,
                    new: ConsumerGroupMember | None) -> None:
    old_regex = None if old is None else old.regex
    new_regex = None if new is None else new.regex
    if old_regex != new_regex:
        if old_regex is not None:
            _inc(counts, old_regex, -1)
        if new_regex is not None:
            _inc(counts, new_regex, 1)


# --- replay -------------------------------------------------------------------------------


def replay(groups: dict[str, ConsumerGroup], key: cg.ConsumerGroupKey,
           value: cg.ConsumerGroupValue | None) -> None:
    """Apply one consumer group record to ``groups`` (Kafka's ``GroupMetadataManager.replay``):
    the only way consumer group state changes, on a live write as on loading the log.
    Tombstones for a group or member that does not exist are ignored."""
    group = groups.get(key.group)
    if value is None:
        if group is not None:
            _replay_tombstone(groups, group, key)
        return
    if group is None:
        group = groups[key.group] = ConsumerGroup(key.group)
    if isinstance(value, cg.ConsumerGroupMetadataValue):
        group.group_epoch = value.epoch
        group.metadata_hash = value.metadata_hash
    elif isinstance(value, cg.ConsumerGroupPartitionMetadataValue):
        group.subscription_metadata = {
            t.topic_name: TopicMetadata(t.topic_id, t.topic_name, t.num_partitions)
            for t in value.topics}
    elif isinstance(value, cg.ConsumerGroupMemberMetadataValue):
        assert isinstance(key, cg.ConsumerGroupMemberMetadataKey)
        old = group.members.get(key.member_id) or ConsumerGroupMember(key.member_id)
        group.update_member(old.with_metadata(value))
    elif isinstance(value, cg.ConsumerGroupTargetAssignmentMemberValue):
        assert isinstance(key, cg.ConsumerGroupTargetAssignmentMemberKey)
        group.update_target_assignment(key.member_id, to_assignment(value.topic_partitions))
    elif isinstance(value, cg.ConsumerGroupTargetAssignmentMetadataValue):
        group.assignment_epoch = value.assignment_epoch
    elif isinstance(value, cg.ConsumerGroupCurrentMemberAssignmentValue):
        assert isinstance(key, cg.ConsumerGroupCurrentMemberAssignmentKey)
        old = group.members.get(key.member_id) or ConsumerGroupMember(key.member_id)
        group.update_member(old.with_current_assignment(value))
    else:
        assert isinstance(key, cg.ConsumerGroupRegularExpressionKey)
        group.update_resolved_regex(key.regular_expression, ResolvedRegularExpression(
            frozenset(value.topics), value.version, value.timestamp))


def _replay_tombstone(groups: dict[str, ConsumerGroup], group: ConsumerGroup,
                      key: cg.ConsumerGroupKey) -> None:
    gid = group.group_id
    if isinstance(key, cg.ConsumerGroupMetadataKey):
        if group.members:
            raise ReplayError(f"Received a tombstone record to delete group {gid} but the "
                              f"group still has {len(group.members)} members.")
        if group.target_assignment:
            raise ReplayError(f"Received a tombstone record to delete group {gid} but the "
                              f"target assignment still has {len(group.target_assignment)} "
                              "members.")
        if group.assignment_epoch != -1:
            raise ReplayError(f"Received a tombstone record to delete group {gid} but did not "
                              "receive ConsumerGroupTargetAssignmentMetadataValue tombstone.")
        del groups[gid]
    elif isinstance(key, cg.ConsumerGroupPartitionMetadataKey):
        group.subscription_metadata = {}
    elif isinstance(key, cg.ConsumerGroupMemberMetadataKey):
        member = group.members.get(key.member_id)
        if member is None:
            return
        if member.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise ReplayError(f"Received a tombstone record to delete member {key.member_id} "
                              "but did not receive ConsumerGroupCurrentMemberAssignmentValue "
                              "tombstone.")
        if key.member_id in group.target_assignment:
            raise ReplayError(f"Received a tombstone record to delete member {key.member_id} "
                              "but did not receive ConsumerGroupTargetAssignmentMetadataValue "
                              "tombstone.")
        group.remove_member(key.member_id)
    elif isinstance(key, cg.ConsumerGroupTargetAssignmentMemberKey):
        group.remove_target_assignment(key.member_id)
    elif isinstance(key, cg.ConsumerGroupTargetAssignmentMetadataKey):
        if group.target_assignment:
            raise ReplayError(f"Received a tombstone record to delete target assignment of "
                              f"{gid} but the assignment still has "
                              f"{len(group.target_assignment)} members.")
        group.assignment_epoch = -1
    elif isinstance(key, cg.ConsumerGroupCurrentMemberAssignmentKey):
        member = group.members.get(key.member_id)
        if member is not None:
            group.update_member(replace(
                member, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH, assigned_partitions={},
                partitions_pending_revocation={}))
    else:
        group.remove_resolved_regex(key.regular_expression)
