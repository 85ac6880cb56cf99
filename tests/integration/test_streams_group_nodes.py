"""A streams group (KIP-1071) in a three-node cluster moves with its ``__consumer_offsets``
partition: when the coordinator's node stops, and again when a preferred-leader election
brings the partition back, the new coordinator replays the group's records. Its members,
epochs, assignment, topology and committed offsets are as before the move,
StreamsGroupDescribe answers the same group there, and the members go on heartbeating at
their epochs (no fence, no new rebalance). Members speak StreamsGroupHeartbeat over TCP
(``streams_member``); the election is the Admin client's; ``kafkalite groups`` and Kafka's
``kafka-streams-groups`` find the new coordinator. Then two Kafka Streams 4.4 instances
(exactly_once_v2) through their coordinator's stop, controlled or a crash (leadership
moves after broker.session.timeout.ms): same group, same tasks, exact counts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ElectionType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection
from kafkalite.protocol.apis import codec
from kafkalite.protocol.consumer_offsets import group_partition

from ..differential.harness import make
from . import test_streams_group_java as java
from .java_support import run_tool, tools_log_config
from .replica_helpers import addresses, cluster, create
from .streams_member import APP, SOURCE, StreamsMember
from .test_kafka_streams import _read_all
from .test_streams_group_views import cli_out

__all__ = ["cluster"]  # the fixture, used by name

OFFSET_COMMIT, OFFSET_FETCH, HEARTBEAT, DESCRIBE = 8, 9, 88, 89
STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"
NOT_COORDINATOR = 16


def _coordinator(cluster: BrokerThread, group: str = APP) -> int:
    return cluster.call(lambda: cluster.inner.cluster.coordinator(0, group))


def _move_to(members: list[StreamsMember], address: str) -> None:
    for m in members:
        m.conn.close()
        m.conn = RawConnection(address, m.conn.client_id)


def _described(member: StreamsMember) -> Any:
    resp = member.call(DESCRIBE, 0, group_ids=[APP], include_authorized_operations=False)
    (g,) = resp.groups
    assert g.error_code == 0, g

    def tasks(ts: Any) -> list[tuple[str, list[int]]]:
        return sorted((t.subtopology_id, sorted(t.partitions)) for t in ts)

    members = sorted(
        (m.member_id, m.member_epoch, m.process_id, m.client_id,
         tasks(m.assignment.active_tasks), tasks(m.assignment.standby_tasks),
         tasks(m.target_assignment.active_tasks))
        for m in g.members)
    topology = (g.topology.epoch, sorted(
        (s.subtopology_id, sorted(s.source_topics), sorted(s.repartition_sink_topics),
         sorted(t.name for t in s.state_changelog_topics),
         sorted(t.name for t in s.repartition_source_topics))
        for s in g.topology.subtopologies))
    return (g.group_state, g.group_epoch, g.assignment_epoch, topology, members)


def _commit(member: StreamsMember, offsets: dict[int, int]) -> None:
    parts = [dict(partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                  committed_metadata="") for p, o in offsets.items()]
    resp = member.call(OFFSET_COMMIT, 9, group_id=APP, member_id=member.member_id,
                       generation_id_or_member_epoch=member.epoch, group_instance_id=None,
                       retention_time_ms=-1, topics=[dict(name=SOURCE, partitions=parts)])
    assert [p.error_code for t in resp.topics for p in t.partitions] == [0] * len(offsets)


def _fetched(member: StreamsMember) -> dict[int, int]:
    resp = member.call(OFFSET_FETCH, 9, groups=[dict(
        group_id=APP, member_id=member.member_id, member_epoch=member.epoch,
        topics=[dict(name=SOURCE, partition_indexes=[0, 1, 2])])], require_stable=True)
    (g,) = resp.groups
    assert g.error_code == 0, g
    return {p.partition_index: p.committed_offset for t in g.topics for p in t.partitions}


def _check_moved(cluster: BrokerThread, members: list[StreamsMember], before: Any,
                 offsets: dict[int, int]) -> None:
    """The group as it was, on the new coordinator, and its members carry on there."""
    node = _coordinator(cluster)
    # The old address answers NOT_COORDINATOR (when its node still runs), the new the group.
    _move_to(members, cluster.bootstraps[node - 1])
    assert _described(members[0]) == before
    assert _fetched(members[0]) == offsets
    for m in members:
        epoch = m.epoch
        resp = m.heartbeat()
        assert (resp.member_epoch, resp.error_code) == (epoch, 0)
    assert _described(members[0]) == before


def test_streams_group_moves_with_its_offsets_partition(cluster: BrokerThread,
                                                        capsys: Any, tmp_path: Path) -> None:
    create(cluster, SOURCE, 3)
    first = _coordinator(cluster)
    boot = cluster.bootstraps[first - 1]
    a, b = StreamsMember(boot, "streams-a"), StreamsMember(boot, "streams-b")
    members = [a, b]
    try:
        a.join()
        b.join_only()
        # Heartbeat until a has given up what b is to own and both own their targets.
        for _ in range(50):
            for m in members:
                resp = m.heartbeat()
                if resp.active_tasks is not None:
                    owned = [dict(subtopology_id=t.subtopology_id, partitions=list(t.partitions))
                             for t in resp.active_tasks]
                    m.heartbeat(active_tasks=owned, standby_tasks=[], warmup_tasks=[])
            state = _described(a)
            if state[0] == "Stable" and all(mm[1] == state[1] for mm in state[4]):
                break
        else:
            raise AssertionError(f"the group never settled: {_described(a)}")
        before = _described(a)
        # Six tasks, three each.
        assert [sum(len(ps) for _s, ps in mm[4]) for mm in before[4]] == [3, 3]
        offsets = {0: 5, 1: 7, 2: 11}
        _commit(a, offsets)

        # Move 1: the coordinator's node stops; the partition's new leader loads the group.
        cluster.stop_node(first)
        second = _coordinator(cluster)
        assert second not in (first, -1)
        _check_moved(cluster, members, before, offsets)
        # kafkalite groups finds the new coordinator from any node, with the offsets.
        seen = json.loads(cli_out(capsys, "groups", "describe", APP, "--bootstrap",
                                  cluster.bootstraps[second % 3], "--json"))
        assert (seen["type"], seen["state"], seen["coordinator"]["id"]) == (
            "streams", "Stable", second)
        assert sorted((m["member_id"], m["epoch"]) for m in seen["members"]) == [
            (m[0], m[1]) for m in before[4]]
        assert {p["partition"]: p["current_offset"] for p in seen["partitions"]
                if p["topic"] == SOURCE} == offsets
        # So does Kafka's kafka-streams-groups (the Java Admin's describeStreamsGroups).
        out = run_tool(STREAMS_GROUPS, "--bootstrap-server", cluster.bootstraps[second % 3],
                       "--describe", "--group", APP, "--members", "--verbose",
                       log_config=tools_log_config(tmp_path))
        rows = [line.split() for line in out.stdout.splitlines()[1:] if line.strip()]
        # GROUP TARGET-ASSIGNMENT-EPOCH TOPOLOGY-EPOCH MEMBER MEMBER-PROTOCOL MEMBER-EPOCH
        assert sorted((r[3], int(r[5])) for r in rows) == [(m[0], m[1]) for m in before[4]]
        for m in members:
            m.heartbeat()  # the sessions go on across the tool's JVM

        # Move 2: the node comes back and a preferred-leader election moves the partition
        # back to it; the group is replayed there again (with what the second node wrote).
        cluster.start_node(first)
        partition = group_partition(APP, 3)  # offsets.topic.num.partitions
        admin = AdminClient({"bootstrap.servers": addresses(cluster)})
        got = admin.elect_leaders(ElectionType.PREFERRED, [
            TopicPartition("__consumer_offsets", partition)]).result(10)
        assert list(got.values()) == [None]
        assert _coordinator(cluster) == first
        old = RawConnection(cluster.bootstraps[second - 1])
        try:
            resp = old.call(make(codec(DESCRIBE, 0).request_type,
                                 dict(group_ids=[APP], include_authorized_operations=False)))
            assert resp.groups[0].error_code == NOT_COORDINATOR
            resp = old.call(make(codec(HEARTBEAT, 1).request_type, dict(
                group_id=APP, member_id=a.member_id, member_epoch=a.epoch,
                endpoint_information_epoch=0, task_offsets=None, task_end_offsets=None)))
            assert resp.error_code == NOT_COORDINATOR
        finally:
            old.close()
        _move_to(members, cluster.bootstraps[first - 1])
        _commit(a, {0: 6, 1: 8, 2: 12})
        _check_moved(cluster, members, before, {0: 6, 1: 8, 2: 12})
    finally:
        for m in members:
            m.close()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("controlled", [True, False], ids=["stopped", "crashed"])
def test_kafka_streams_app_carries_on_through_its_coordinator_stopping(
        cluster: BrokerThread, tmp_path: Path, controlled: bool) -> None:
    """Two Kafka Streams 4.4 instances (word count, exactly_once_v2) split the tasks;
    the group's coordinator node stops while they process. The new coordinator has the
    group as it was: the same members at the same epochs, each keeping its tasks (no
    rebalance), and the counts are exact."""
    boot = addresses(cluster)
    create(cluster, java.IN, 4)
    create(cluster, java.OUT, 2)
    coordinator = _coordinator(cluster, java.APP)
    instances = [java._Instance(boot, tmp_path / n, n) for n in ("a", "b")]
    producer = Producer({"bootstrap.servers": boot, "acks": "all"})

    def produce(lines: list[str], first: int) -> None:
        for i, line in enumerate(lines, first):
            producer.produce(java.IN, key=f"k{i}".encode(), value=line.encode())
        assert producer.flush(10) == 0

    def counted(lines: list[str]) -> Callable[[], bool]:
        def check() -> bool:
            latest = dict(_read_all(boot, java.OUT))
            return latest == dict(java._words(lines))
        return check

    def group_view() -> Any:
        node = _coordinator(cluster, java.APP)
        conn = RawConnection(cluster.bootstraps[node - 1])
        try:
            d = conn.call(make(codec(DESCRIBE, 0).request_type, dict(
                group_ids=[java.APP], include_authorized_operations=False)))
        finally:
            conn.close()
        (g,) = d.groups
        assert g.error_code == 0, g
        return g.group_state, g.group_epoch, sorted(
            (m.member_id, m.member_epoch, sorted((t.subtopology_id, sorted(t.partitions))
                                                 for t in m.assignment.active_tasks))
            for m in g.members)

    lines = java.LINES
    half = len(lines) // 2
    try:
        java._wait(lambda: [len(i.tasks() or ()) for i in instances] == [4, 4], 180,
                   "the two instances did not split the tasks", instances)
        tasks = [i.tasks() for i in instances]
        produce(lines[:half], 0)
        java._wait(counted(lines[:half]), 120, "the counts did not reach the expected ones",
                   instances)
        before = group_view()
        assert before[0] == "Stable"

        cluster.stop_node(coordinator, controlled)
        java._wait(lambda: _coordinator(cluster, java.APP) not in (coordinator, -1), 60,
                   "the coordinator did not move", instances)
        produce(lines[half:], half)
        java._wait(counted(lines), 180, "the counts after the move are wrong", instances)
        # The same group on the new coordinator, and nobody's tasks moved.
        assert group_view() == before
        assert [i.tasks() for i in instances] == tasks
    finally:
        outs = [i.close() for i in instances]
    java.closed_cleanly(instances, outs)
    by_word = java.counts_by_word(boot, java.OUT)
    expected = java._words(lines)
    assert by_word == {
        w: list(range(1, n + 1)) for w, n in expected.items()}
