"""A streams group (KIP-1071) in a three-node cluster moves with its ``__consumer_offsets``
partition: when the coordinator's node stops, and again when a preferred-leader election
brings the partition back, the new coordinator replays the group's records. Its members,
epochs, assignment, topology and committed offsets are as before the move,
StreamsGroupDescribe answers the same group there, and the members go on heartbeating at
their epochs (no fence, no new rebalance). Members speak StreamsGroupHeartbeat over TCP
(``streams_member``); the election is the Admin client's."""

from __future__ import annotations

from typing import Any

from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection
from kafkalite.protocol.apis import codec
from kafkalite.protocol.consumer_offsets import group_partition

from ..differential.harness import make
from .replica_helpers import addresses, cluster, create
from .streams_member import APP, SOURCE, StreamsMember

__all__ = ["cluster"]  # the fixture, used by name

OFFSET_COMMIT, OFFSET_FETCH, HEARTBEAT, DESCRIBE = 8, 9, 88, 89
NOT_COORDINATOR = 16


def _coordinator(cluster: BrokerThread) -> int:
    return cluster.call(lambda: cluster.inner.cluster.coordinator(0, APP))


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


def test_streams_group_moves_with_its_offsets_partition(cluster: BrokerThread) -> None:
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
