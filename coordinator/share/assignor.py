"""The share groups' ``simple`` assignor (Kafka's SimpleAssignor), as a pure function.

Every partition of the subscribed topics goes to at least one member; with more members
than partitions a partition is shared by ``ceil(members / partitions)`` of them (Kafka's
"desired sharing"), and the partition-member pairs are spread over the members so that
their counts differ by at most one (member ``i`` of ``n`` gets
``ceil(x * (i + 1)) - ceil(x * i)`` of them, ``x = pairs / n``, as Kafka computes it). It is
sticky: a member keeps the partitions it had as far as the counts allow, and only what a
member or partition has beyond its share is taken away before the rest is handed out.

Members are ordered by id (Kafka: its group spec's order). Members with different
subscriptions are assigned topic by topic among the members subscribed to each topic
(Kafka has a dedicated heterogeneous builder; the balance it seeks is the same per topic).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

#: A partition: (topic, partition index).
TopicPartition = tuple[str, int]


def _desired_counts(pairs: int, members: int) -> list[int]:
    x = pairs / members
    return [math.ceil(x * (i + 1)) - math.ceil(x * i) for i in range(members)]


def _assign_topic_set(partitions: list[TopicPartition], members: list[str],
                      current: Mapping[str, frozenset[TopicPartition]]
                      ) -> dict[str, set[TopicPartition]]:
    if not partitions or not members:
        return {m: set() for m in members}
    sharing = (len(members) + len(partitions) - 1) // len(partitions)
    desired = dict(zip(members, _desired_counts(len(partitions) * sharing, len(members)),
                       strict=True))
    wanted = set(partitions)
    # Keep what each member had and may still have, up to its count.
    out = {m: set(sorted(current.get(m, frozenset()) & wanted)[:desired[m]]) for m in members}
    # A partition over-shared keeps its first members.
    holders: dict[TopicPartition, list[str]] = {p: [] for p in partitions}
    for m in members:
        for p in sorted(out[m]):
            holders[p].append(m)
    for p, ms in holders.items():
        for m in ms[sharing:]:
            out[m].discard(p)
        del ms[sharing:]
    # Hand out the rest: each partition until shared enough, to members below their count.
    i = 0
    for p in partitions:
        tries = 0
        while len(holders[p]) < sharing and tries < len(members):
            m = members[i % len(members)]
            i += 1
            tries += 1
            if len(out[m]) < desired[m] and p not in out[m]:
                out[m].add(p)
                holders[p].append(m)
                tries = 0
    return out


def assign(subscriptions: Mapping[str, frozenset[str]], partition_counts: Mapping[str, int],
           current: Mapping[str, frozenset[TopicPartition]] | None = None
           ) -> dict[str, frozenset[TopicPartition]]:
    """Each member's partitions, from the members' subscribed topics, the topics' partition
    counts (a topic missing there does not exist yet) and the current assignment."""
    members = sorted(subscriptions)
    before = current or {}
    out: dict[str, set[TopicPartition]] = {m: set() for m in members}
    # Members with one subscription share its topics together (homogeneous groups in one
    # pass, as Kafka balances across topics then).
    by_subscription: dict[frozenset[str], list[str]] = {}
    for m in members:
        by_subscription.setdefault(subscriptions[m], []).append(m)
    homogeneous = len(by_subscription) == 1
    if homogeneous:
        topics = sorted(t for t in next(iter(by_subscription)) if t in partition_counts)
        parts = [(t, p) for t in topics for p in range(partition_counts[t])]
        for m, ps in _assign_topic_set(parts, members, before).items():
            out[m] |= ps
    else:
        for t in sorted({t for s in subscriptions.values() for t in s}):
            if t not in partition_counts:
                continue
            subscribed = [m for m in members if t in subscriptions[m]]
            parts = [(t, p) for p in range(partition_counts[t])]
            for m, ps in _assign_topic_set(parts, subscribed, before).items():
                out[m] |= ps
    return {m: frozenset(ps) for m, ps in out.items()}
