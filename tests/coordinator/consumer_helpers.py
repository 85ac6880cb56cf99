"""Spelling consumer group records in tests: each helper builds the exact record Kafka
writes, from plain values (topic names resolved with the harness's topic ids)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kafkalite.coordinator.consumer.group import MemberState
from kafkalite.protocol import consumer_group_records as cg

from .harness import GROUP, Harness, topic_id

Parts = Mapping[str, Iterable[int]]


def tps(parts: Parts) -> tuple[cg.TopicIdPartitions, ...]:
    """Kafka's order: topic ids as Kafka compares them (the harness's ids are uuid5, and
    the tests use few topics, so sorting the records' ids is done the same way)."""
    from kafkalite.coordinator.consumer.assignors import java_uuid_key

    ids = {topic_id(t): tuple(sorted(p)) for t, p in parts.items() if list(p)}
    return tuple(cg.TopicIdPartitions(t, ids[t]) for t in sorted(ids, key=java_uuid_key))


def sub(member: str, names: Iterable[str] = (), regex: str = "", *, group: str = GROUP,
        instance: str | None = None, rebalance: int = 5000, assignor: str | None = None,
        client_id: str = "c", classic: cg.ClassicMemberMetadata | None = None
        ) -> tuple[object, object]:
    return (cg.ConsumerGroupMemberMetadataKey(group, member),
            cg.ConsumerGroupMemberMetadataValue(
                instance_id=instance, rack_id=None, client_id=client_id,
                client_host="/127.0.0.1", subscribed_topic_names=tuple(sorted(names)),
                subscribed_topic_regex=regex, rebalance_timeout_ms=rebalance,
                server_assignor=assignor, classic_member_metadata=classic))


def metadata(topics: Mapping[str, int], *, group: str = GROUP) -> tuple[object, object]:
    return (cg.ConsumerGroupPartitionMetadataKey(group),
            cg.ConsumerGroupPartitionMetadataValue(tuple(
                cg.PartitionMetadataTopic(topic_id(n), n, c) for n, c in sorted(topics.items()))))


def epoch(e: int, *, group: str = GROUP) -> tuple[object, object]:
    return (cg.ConsumerGroupMetadataKey(group), cg.ConsumerGroupMetadataValue(e))


def target(member: str, parts: Parts, *, group: str = GROUP) -> tuple[object, object]:
    return (cg.ConsumerGroupTargetAssignmentMemberKey(group, member),
            cg.ConsumerGroupTargetAssignmentMemberValue(tps(parts)))


def target_epoch(e: int, *, group: str = GROUP) -> tuple[object, object]:
    return (cg.ConsumerGroupTargetAssignmentMetadataKey(group),
            cg.ConsumerGroupTargetAssignmentMetadataValue(e))


def current(member: str, e: int, prev: int, state: MemberState, assigned: Parts,
            pending: Parts | None = None, *, group: str = GROUP) -> tuple[object, object]:
    return (cg.ConsumerGroupCurrentMemberAssignmentKey(group, member),
            cg.ConsumerGroupCurrentMemberAssignmentValue(
                e, prev, int(state), tps(assigned), tps(pending or {})))


def removed(member: str, *, group: str = GROUP) -> list[tuple[object, object]]:
    return [(cg.ConsumerGroupCurrentMemberAssignmentKey(group, member), None),
            (cg.ConsumerGroupTargetAssignmentMemberKey(group, member), None),
            (cg.ConsumerGroupMemberMetadataKey(group, member), None)]


def regex_record(regex: str, topics: Iterable[str], version: int, timestamp: int, *,
                 group: str = GROUP) -> tuple[object, object]:
    return (cg.ConsumerGroupRegularExpressionKey(group, regex),
            cg.ConsumerGroupRegularExpressionValue(tuple(sorted(topics)), version, timestamp))


def held(h: Harness, group: str = GROUP) -> dict[str, set[tuple[str, int]]]:
    """What each member owns on the server (assigned or still revoking), by topic name."""
    names = {topic_id(t): t for t in h.topics}
    out: dict[str, set[tuple[str, int]]] = {}
    g = h.cgroup(group)
    for mid, m in g.members.items():
        out[mid] = {(names.get(t, str(t)), p)
                    for a in (m.assigned_partitions, m.partitions_pending_revocation)
                    for t, ps in a.items() for p in ps}
    return out


def owned(parts: Parts) -> list[tuple[object, list[int]]]:
    """An owned-partitions list as a heartbeat sends it."""
    return [(topic_id(t), sorted(p)) for t, p in parts.items()]
