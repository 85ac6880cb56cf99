"""A streams group's topology and its configuration against the broker's topics, as Kafka's
``InternalTopicManager.configureTopics`` does it: each subtopology's task count (the most
partitions among its source topics), the partition counts of the repartition topics (from
the subtopologies writing to them, when the topology leaves them open) and of the changelog
topics (one per task), copartitioned topics checked, and the internal topics that are
missing, which the coordinator creates.

Pure: the topics are given as a name -> partition count mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: The heartbeat's status codes (StreamsGroupHeartbeatResponse.Status).
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5

#: A task: (subtopology id, partition).
Task = tuple[str, int]
Tasks = frozenset[Task]

NO_TASKS: Tasks = frozenset()


@dataclass(frozen=True, slots=True)
class TaskTuple:
    """A member's tasks in their three roles (Kafka's ``TasksTuple``)."""

    active: Tasks = NO_TASKS
    standby: Tasks = NO_TASKS
    warmup: Tasks = NO_TASKS

    def all(self) -> Tasks:
        return self.active | self.standby | self.warmup

    def __bool__(self) -> bool:
        return bool(self.active or self.standby or self.warmup)


NO_TASK_TUPLE = TaskTuple()


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """An internal topic as the topology asks for it; ``partitions`` 0: not fixed."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    #: Indexes into the subtopology's source topics and repartition source topics.
    source_topics: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()


@dataclass(frozen=True, slots=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]


@dataclass(frozen=True, slots=True)
class Status:
    code: int
    detail: str


@dataclass(frozen=True, slots=True)
class Configured:
    """The topology against the topics: ``task_counts`` is empty unless it is ready."""

    #: subtopology id -> number of tasks (ready topologies only).
    task_counts: dict[str, int] = field(default_factory=dict)
    #: The subtopologies with state (changelog topics): only their tasks get standbys.
    stateful: frozenset[str] = frozenset()
    #: subtopology id -> its source and repartition source topics (IQ endpoints).
    sources: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Internal topics to create: (name, partitions, replication factor, configs).
    to_create: tuple[TopicInfo, ...] = ()
    status: tuple[Status, ...] = ()

    @property
    def ready(self) -> bool:
        return not self.status

    def tasks(self) -> list[Task]:
        return [(s, p) for s, n in sorted(self.task_counts.items()) for p in range(n)]


def _summary(names: list[str]) -> str:
    """Kafka's ``summarizeTopics``: the first three names, then how many more."""
    head = ", ".join(names[:3])
    more = len(names) - 3
    return head + (f" and {more} additional topics" if more > 0 else "")


def _hash_map_order(names: list[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` holding ``names`` (inserted in this
    order), in which Kafka's InternalTopicManager lists the missing internal topics:
    by bucket of the spread String hash, insertion order within a bucket."""
    from kafkalite.protocol.consumer_offsets import java_string_hash

    capacity = 16
    while len(names) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = java_string_hash(name) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(names, key=bucket)


def relevant_topics(topology: Topology) -> set[str]:
    """Every topic whose partition count the configuration depends on."""
    out: set[str] = set()
    for s in topology.subtopologies:
        out.update(s.source_topics)
        out.update(t.name for t in s.repartition_source_topics)
        out.update(t.name for t in s.state_changelog_topics)
    return out


def _repartition_counts(topology: Topology, topics: Mapping[str, int]) -> dict[str, int]:
    """Each repartition topic's partition count: fixed by the topology, else the most
    partitions among the sources of the subtopologies writing to it (Kafka's
    ``RepartitionTopics``), resolved until nothing changes."""
    counts = {t.name: t.partitions for s in topology.subtopologies
              for t in s.repartition_source_topics if t.partitions > 0}
    open_topics = {t.name for s in topology.subtopologies
                   for t in s.repartition_source_topics if t.partitions <= 0}
    for _ in range(len(open_topics) + 1):
        changed = False
        for name in sorted(open_topics - counts.keys()):
            best = 0
            for s in topology.subtopologies:
                if name not in s.repartition_sink_topics:
                    continue
                for src in s.source_topics:
                    best = max(best, topics.get(src, 0))
                for r in s.repartition_source_topics:
                    best = max(best, counts.get(r.name, 0))
            if best > 0:
                counts[name] = best
                changed = True
        if not changed:
            break
    return counts


def configure(topology: Topology, topics: Mapping[str, int]) -> Configured:
    """The topology against ``topics`` (name -> partitions)."""
    missing_sources = sorted({t for s in topology.subtopologies for t in s.source_topics
                              if t not in topics})
    if missing_sources:
        return Configured(status=(Status(
            MISSING_SOURCE_TOPICS, f"Source topics {_summary(missing_sources)} are missing."),))
    repartition = _repartition_counts(topology, topics)
    unresolved = sorted({t.name for s in topology.subtopologies
                         for t in s.repartition_source_topics} - repartition.keys())
    if unresolved:
        return Configured(status=(Status(
            INCORRECTLY_PARTITIONED_TOPICS,
            f"Partitions of repartition topics {', '.join(unresolved)} cannot be "
            "determined."),))
    # Copartitioned source topics must agree; repartition topics of the group follow them.
    for s in topology.subtopologies:
        for group in s.copartition_groups:
            external = {s.source_topics[i] for i in group.source_topics
                        if i < len(s.source_topics)}
            counts = {topics[t] for t in external}
            if len(counts) > 1:
                return Configured(status=(Status(
                    INCORRECTLY_PARTITIONED_TOPICS,
                    f"Following topics do not have the same number of partitions: "
                    f"[{', '.join(sorted(external))}]"),))
            if counts:
                n = counts.pop()
                for i in group.repartition_source_topics:
                    if i < len(s.repartition_source_topics):
                        r = s.repartition_source_topics[i]
                        if r.partitions <= 0:
                            repartition[r.name] = n
    task_counts: dict[str, int] = {}
    # Kafka's order: every repartition topic, then every changelog topic.
    wanted: list[TopicInfo] = []
    changelogs: list[TopicInfo] = []
    for s in topology.subtopologies:
        n = max([topics[t] for t in s.source_topics]
                + [repartition[t.name] for t in s.repartition_source_topics] + [0])
        task_counts[s.subtopology_id] = n
        wanted.extend(TopicInfo(t.name, repartition[t.name], t.replication_factor, t.configs)
                      for t in s.repartition_source_topics)
        changelogs.extend(TopicInfo(t.name, t.partitions if t.partitions > 0 else n,
                                    t.replication_factor, t.configs)
                          for t in s.state_changelog_topics)
    wanted.extend(changelogs)
    to_create: dict[str, TopicInfo] = {}
    for t in wanted:
        have = topics.get(t.name)
        if have is None:
            to_create.setdefault(t.name, t)
        elif have != t.partitions:
            # Kafka stops at the first existing internal topic of the wrong size.
            return Configured(status=(Status(
                INCORRECTLY_PARTITIONED_TOPICS,
                f"Existing topic {t.name} has different number of partitions: expected "
                f"{t.partitions}, found {have}"),))
    if to_create:
        names = _hash_map_order(list(to_create))
        return Configured(to_create=tuple(to_create.values()), status=(Status(
            MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {_summary(names)}"),))
    return Configured(
        task_counts=task_counts,
        stateful=frozenset(s.subtopology_id for s in topology.subtopologies
                           if s.state_changelog_topics),
        sources={s.subtopology_id: (*s.source_topics,
                                    *(t.name for t in s.repartition_source_topics))
                 for s in topology.subtopologies})
