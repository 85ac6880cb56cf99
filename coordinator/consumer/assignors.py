"""Server-side assignors of KIP-848 consumer groups: ``uniform`` and ``range``, as Kafka 4.x.

Ported from Kafka's ``org.apache.kafka.coordinator.group.assignor``:

- ``uniform`` (``UniformAssignor``): sticky. When every member subscribes to the same
  topics (homogeneous) it keeps each member's current target partitions up to its quota
  and hands the rest out (``UniformHomogeneousAssignmentBuilder``); otherwise it keeps
  every still-subscribed partition, gives unassigned partitions to the least loaded
  subscribers, then moves partitions from the most to the least loaded subscribers of
  each topic (``UniformHeterogeneousAssignmentBuilder``).
- ``range`` (``RangeAssignor``, rewritten in Kafka 3.9): contiguous ranges per topic, the
  same partition numbers of co-partitioned topics to the same member. It does not read the
  current assignment: it is sticky only through its member order (static members first,
  by instance id, then the others by member id), as Kafka's.

Pure and deterministic. Where Kafka iterates hash maps (member ids, topic ids, partition
sets) this module iterates sorted: member ids ascending, topic ids in the order of
Kafka's ``Uuid.compareTo`` (signed 64-bit halves), partitions ascending, so ties can
break differently from a Kafka broker while every property Kafka promises holds. Racks
are not used (Kafka 4.0's assignors ignore them too).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

#: A member's partitions: topic id -> partition numbers.
Assignment = Mapping[uuid.UUID, frozenset[int]]

UNIFORM = "uniform"
RANGE = "range"


class SubscriptionType(enum.Enum):
    HOMOGENEOUS = "Homogeneous"
    HETEROGENEOUS = "Heterogeneous"


class PartitionAssignorError(Exception):
    """The assignment cannot be computed (Kafka's ``PartitionAssignorException``)."""


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """What the assignor knows of a member: its topics and its current target partitions."""

    subscribed_topic_ids: frozenset[uuid.UUID]
    assignment: Assignment
    instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupSpec:
    members: Mapping[str, MemberSpec]
    subscription_type: SubscriptionType
    #: Partition count of every subscribed topic.
    partitions: Mapping[uuid.UUID, int]

    def num_partitions(self, topic_id: uuid.UUID) -> int:
        return self.partitions.get(topic_id, -1)


GroupAssignment = dict[str, dict[uuid.UUID, frozenset[int]]]


def java_uuid_key(u: uuid.UUID) -> tuple[int, int]:
    """Sort key equal to Kafka's ``Uuid.compareTo``: the halves as signed longs."""
    msb, lsb = u.int >> 64, u.int & ((1 << 64) - 1)
    return (msb - (1 << 64) if msb >> 63 else msb, lsb - (1 << 64) if lsb >> 63 else lsb)


def subscription_type(subscriptions: Collection[frozenset[uuid.UUID]]) -> SubscriptionType:
    """HOMOGENEOUS when every member subscribes to the same topics."""
    first = next(iter(subscriptions), None)
    if all(s == first for s in subscriptions):
        return SubscriptionType.HOMOGENEOUS
    return SubscriptionType.HETEROGENEOUS


def assign(name: str, spec: GroupSpec) -> GroupAssignment:
    """The target assignment by assignor ``name``: an entry for every member."""
    assignor = ASSIGNORS.get(name)
    if assignor is None:
        raise PartitionAssignorError(f"unknown assignor {name}")
    out = assignor(spec)
    for member_id in spec.members:
        out.setdefault(member_id, {})
    return out


def _check_topics(spec: GroupSpec, topics: Collection[uuid.UUID]) -> None:
    for t in topics:
        if spec.num_partitions(t) == -1:
            raise PartitionAssignorError(
                f"Members are subscribed to topic {t} which doesn't exist in the topic metadata.")


def _add(assignment: dict[uuid.UUID, frozenset[int]], topic_id: uuid.UUID, p: int) -> None:
    assignment[topic_id] = assignment.get(topic_id, frozenset()) | {p}


# --- uniform, homogeneous -----------------------------------------------------------------


def _uniform_homogeneous(spec: GroupSpec) -> GroupAssignment:
    member_ids = sorted(spec.members)
    topics = spec.members[member_ids[0]].subscribed_topic_ids
    if not topics:
        return {}
    _check_topics(spec, topics)
    assigned = {(t, p) for m in member_ids
                for t, ps in spec.members[m].assignment.items() for p in ps}
    unassigned: list[tuple[uuid.UUID, int]] = []
    total = 0
    for t in sorted(topics, key=java_uuid_key):
        n = spec.num_partitions(t)
        unassigned.extend((t, p) for p in range(n) if (t, p) not in assigned)
        total += n
    min_quota, extra = divmod(total, len(member_ids))

    # Keep each member's partitions up to its quota; the rest go back to the pool.
    target: GroupAssignment = {}
    unfilled: list[tuple[str, int]] = []
    for m in member_ids:
        quota = min_quota
        if extra > 0:
            quota += 1
            extra -= 1
        kept: dict[uuid.UUID, frozenset[int]] = {}
        for t in sorted(spec.members[m].assignment, key=java_uuid_key):
            if t not in topics:
                continue
            parts = sorted(spec.members[m].assignment[t])
            keep = parts[:max(quota, 0)]
            unassigned.extend((t, p) for p in parts[len(keep):])
            quota -= len(keep)
            if keep:
                kept[t] = frozenset(keep)
        if quota > 0:
            unfilled.append((m, quota))
        target[m] = kept

    i = 0
    for m, quota in unfilled:
        for _ in range(quota):
            if i >= len(unassigned):
                break
            t, p = unassigned[i]
            i += 1
            _add(target[m], t, p)
    if i < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return target


# --- uniform, heterogeneous ---------------------------------------------------------------

_MAX_ITERATIONS = 16


class _Heterogeneous:
    """``UniformHeterogeneousAssignmentBuilder``: members are numbered in sorted id order."""

    def __init__(self, spec: GroupSpec) -> None:
        self.spec = spec
        self.member_ids = sorted(spec.members)
        self.subscribers: dict[uuid.UUID, list[int]] = {}
        for i, m in enumerate(self.member_ids):
            subs = spec.members[m].subscribed_topic_ids
            _check_topics(spec, subs)
            for t in sorted(subs, key=java_uuid_key):
                self.subscribers.setdefault(t, []).append(i)
        self.sizes = [0] * len(self.member_ids)
        self.owners = {t: [-1] * spec.num_partitions(t) for t in self.subscribers}
        self.target: list[dict[uuid.UUID, frozenset[int]]] = [{} for _ in self.member_ids]

    def topic_order(self, t: uuid.UUID) -> tuple[float, int, tuple[int, int]]:
        # Partitions per subscriber descending, then subscriber count, then topic id.
        n, subs = self.spec.num_partitions(t), len(self.subscribers[t])
        return (-n / subs, subs, java_uuid_key(t))

    def build(self) -> GroupAssignment:
        if not self.subscribers:
            return {}
        # Keep every partition of a still-subscribed topic.
        for i, m in enumerate(self.member_ids):
            ms = self.spec.members[m]
            for t, parts in ms.assignment.items():
                if t in ms.subscribed_topic_ids:
                    self.target[i][t] = frozenset(parts)
                    self.sizes[i] += len(parts)
                    for p in parts:
                        self.owners[t][p] = i
        unassigned = {t: [p for p, o in enumerate(owners) if o == -1]
                      for t, owners in self.owners.items()}
        balancer = _Balancer(self.sizes)
        for t in sorted((t for t in unassigned if unassigned[t]), key=self.topic_order):
            balancer.initialize(self.subscribers[t])
            for p in unassigned[t]:
                self.move(t, p, balancer.next_least_loaded())
        self.balance(balancer)
        return {m: self.target[i] for i, m in enumerate(self.member_ids)}

    def move(self, t: uuid.UUID, p: int, to: int) -> None:
        old = self.owners[t][p]
        if old != -1:
            rest = self.target[old][t] - {p}
            if rest:
                self.target[old][t] = rest
            else:
                del self.target[old][t]
            self.sizes[old] -= 1
        _add(self.target[to], t, p)
        self.owners[t][p] = to
        self.sizes[to] += 1

    def balance(self, balancer: _Balancer) -> None:
        topics = sorted((t for t, s in self.subscribers.items() if len(s) >= 2),
                        key=self.topic_order)
        if not topics:
            return
        last = -1
        for _ in range(_MAX_ITERATIONS):
            for i, t in enumerate(topics):
                if i == last:
                    # A whole round without a move: balanced.
                    return
                if self.balance_topic(t, balancer) > 0 or last == -1:
                    last = i

    def balance_topic(self, t: uuid.UUID, balancer: _Balancer) -> int:
        moved = 0
        owners = self.owners[t]
        if balancer.initialize(self.subscribers[t]) <= 1:
            return moved
        # Partitions grouped by owner, so a member's last partition is found in O(1).
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        while not balancer.is_balanced():
            most = -1
            while True:
                most = balancer.next_most_loaded()
                if most == -1:
                    break
                if end.get(most, 0) - start.get(most, 0) <= 0:
                    balancer.exclude_most_loaded()
                    continue
                break
            if most == -1:
                break
            p = partitions[end[most] - 1]
            end[most] -= 1
            least = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.move(t, p, least)
            moved += 1
        return moved


class _Balancer:
    """Kafka's ``MemberAssignmentBalancer``: a least loaded range growing from the left
    and a most loaded range growing from the right of members sorted by load."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.members: list[int] = []
        self.least_end = 0
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> int:
        if not members:
            raise ValueError("Cannot balance an empty subscriber list.")
        self.members = sorted(members, key=lambda m: (self.sizes[m], m))
        first, last = self.sizes[self.members[0]], self.sizes[self.members[-1]]
        self.least_end = 0
        self.least_count = first - 1
        self.next_least = 0
        self.most_start = self.most_end = len(self.members)
        self.most_count = last + 1
        self.next_most = len(self.members) - 1
        return last - first

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_count += 1
            while (self.least_end < len(self.members)
                   and self.sizes[self.members[self.least_end]] == self.least_count):
                self.least_end += 1
            self.next_least = 0
        m = self.members[self.next_least]
        self.next_least += 1
        return m

    def next_most_loaded(self) -> int:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # Emptied by exclusions: restart from the next member's count.
                self.most_count = self.sizes[self.members[self.most_start - 1]]
            else:
                self.most_count -= 1
            while (self.most_start > 0
                   and self.sizes[self.members[self.most_start - 1]] == self.most_count):
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        m = self.members[self.next_most]
        self.next_most -= 1
        return m

    def exclude_most_loaded(self) -> None:
        i = self.next_most + 1
        self.members[i], self.members[self.most_end - 1] = (
            self.members[self.most_end - 1], self.members[i])
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


def _uniform(spec: GroupSpec) -> GroupAssignment:
    if not spec.members:
        return {}
    if spec.subscription_type is SubscriptionType.HOMOGENEOUS:
        return _uniform_homogeneous(spec)
    return _Heterogeneous(spec).build()


# --- range --------------------------------------------------------------------------------


def _range_order(spec: GroupSpec) -> list[str]:
    """Static members first by instance id, then the others by member id."""
    def key(m: str) -> tuple[int, str]:
        instance = spec.members[m].instance_id
        return (0, instance) if instance is not None else (1, m)
    return sorted(spec.members, key=key)


def _range(spec: GroupSpec) -> GroupAssignment:
    if not spec.members:
        return {}
    members = _range_order(spec)
    subscribers: dict[uuid.UUID, int] = {}
    for m in members:
        subs = spec.members[m].subscribed_topic_ids
        _check_topics(spec, subs)
        for t in subs:
            subscribers[t] = subscribers.get(t, 0) + 1
    # Per topic: (next range start, partitions left over to hand out one by one).
    state = {t: [0, spec.num_partitions(t) % n] for t, n in subscribers.items()}
    out: GroupAssignment = {}
    for m in members:
        assignment: dict[uuid.UUID, frozenset[int]] = {}
        for t in sorted(spec.members[m].subscribed_topic_ids, key=java_uuid_key):
            n = spec.num_partitions(t)
            quota = n // subscribers[t]
            st = state[t]
            if st[1] > 0:
                quota += 1
                st[1] -= 1
            start, end = st[0], min(st[0] + quota, n)
            st[0] = end
            if start < end:
                assignment[t] = frozenset(range(start, end))
        out[m] = assignment
    return out


ASSIGNORS: Mapping[str, Callable[[GroupSpec], GroupAssignment]] = {
    UNIFORM: _uniform,
    RANGE: _range,
}
