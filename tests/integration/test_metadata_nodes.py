"""With several nodes in one process every node answers Metadata from the kept encoded
entries: a topic created, deleted, re-partitioned or re-configured, and a leader moved by
a node's stop or start or by an election, are seen at once by the next Metadata from
every node. Each request goes to one chosen node through kafka-python's connection to
it; the topics are changed through confluent-kafka's AdminClient."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from kafka.admin import KafkaAdminClient
from kafka.protocol.metadata import MetadataRequest

from kafkalite.broker.testing.fixtures import BrokerThread

NODES = 3
#: topic -> partition -> (leader, ISR, offline replicas), as one node answers.
View = dict[str, dict[int, tuple[int, tuple[int, ...], tuple[int, ...]]]]


def view_from(admin: KafkaAdminClient, node: int) -> View:
    """Metadata for every topic, asked of ``node`` alone (no authorized operations, the
    request clients send most)."""
    req = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    manager: Any = admin._manager  # kafka-python's connections, to address one node

    async def ask() -> Any:
        return await manager.send(req, node_id=node)

    resp = manager.run(ask)
    out: View = {}
    for t in resp.topics:
        if t.name.startswith("__"):
            continue
        assert t.error_code == 0, (node, t.name, t.error_code)
        out[t.name] = {p.partition_index: (p.leader_id, tuple(sorted(p.isr_nodes)),
                                           tuple(sorted(p.offline_replicas)))
                       for p in t.partitions}
    return out


def views(admin: KafkaAdminClient, nodes: list[int]) -> list[View]:
    return [view_from(admin, n) for n in nodes]


def expected(cluster: BrokerThread, topics: dict[str, int], down: tuple[int, ...] = ()
             ) -> View:
    """What the controller holds for ``topics`` (name -> partition count)."""
    out: View = {}
    for name, count in topics.items():
        out[name] = {}
        for p in range(count):
            leader, replicas, isr = cluster.partition_state(name, p)
            out[name][p] = (leader, tuple(sorted(isr)),
                            tuple(sorted(r for r in replicas if r in down)))
    return out


def test_every_node_sees_each_change_at_once(
        make_broker: Callable[..., BrokerThread]) -> None:
    cluster = make_broker({"auto.create.topics.enable": "false",
                           "default.replication.factor": "3"}, nodes=NODES)
    boot = ",".join(cluster.bootstraps)
    admin = AdminClient({"bootstrap.servers": boot})
    ka = KafkaAdminClient(bootstrap_servers=boot, request_timeout_ms=10000)
    every = list(range(1, NODES + 1))
    try:
        for f in admin.create_topics([NewTopic(f"m{i}", 3, 3) for i in range(6)]).values():
            f.result(10)
        topics = {f"m{i}": 3 for i in range(6)}
        # Each node's first answer is encoded and kept; the second comes from what is kept.
        for _ in range(2):
            assert views(ka, every) == [expected(cluster, topics)] * NODES

        admin.create_topics([NewTopic("late", 2, 2)])["late"].result(10)
        topics["late"] = 2
        assert views(ka, every) == [expected(cluster, topics)] * NODES

        admin.delete_topics(["m1"])["m1"].result(10)
        del topics["m1"]
        assert views(ka, every) == [expected(cluster, topics)] * NODES

        admin.create_partitions([NewPartitions("m2", 7)])["m2"].result(10)
        topics["m2"] = 7
        got = views(ka, every)
        assert got == [expected(cluster, topics)] * NODES
        assert sorted(got[0]["m2"]) == list(range(7))

        res = ConfigResource(ConfigResource.Type.TOPIC, "m3", incremental_configs=[
            ConfigEntry("retention.ms", "60000",
                        incremental_operation=AlterConfigOpType.SET)])
        for f in admin.incremental_alter_configs([res]).values():
            f.result(10)
        assert views(ka, every) == [expected(cluster, topics)] * NODES

        # A deleted topic created again under its name is a new topic, placed anew.
        admin.delete_topics(["m4"])["m4"].result(10)
        admin.create_topics([NewTopic("m4", 5, 1)])["m4"].result(10)
        topics["m4"] = 5
        assert views(ka, every) == [expected(cluster, topics)] * NODES

        # Stopping the node that leads m0-0 moves its leaderships: the next answer of
        # each node left running shows the new leaders, ISRs and the offline replica.
        before = view_from(ka, 1)
        gone = cluster.partition_state("m0", 0)[0]
        cluster.stop_node(gone)
        running = [n for n in every if n != gone]
        got = views(ka, running)
        want = expected(cluster, topics, down=(gone,))
        assert got == [want] * len(running)
        assert want["m0"][0][0] not in (gone, -1)
        assert want["m0"][0] != before["m0"][0]
        assert all(s[0] != gone for parts in want.values() for s in parts.values())

        # Back: no replica offline any more, on every node, at once.
        cluster.start_node(gone)
        # A client learns of the node back from a bootstrap (it left the broker list).
        ka.close()
        ka = KafkaAdminClient(bootstrap_servers=boot, request_timeout_ms=10000)
        got = views(ka, every)
        want = expected(cluster, topics)
        assert got == [want] * NODES
        assert all(not s[2] for parts in want.values() for s in parts.values())
        assert want["m0"][0][0] != gone

        # A preferred election gives m0-0 back to its first replica with every node
        # running (the controller moves a leader; no node stops or starts).
        tp = TopicPartition("m0", 0)
        assert admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(10)[tp] is None
        got = views(ka, every)
        want = expected(cluster, topics)
        assert got == [want] * NODES
        assert want["m0"][0][0] == gone

        # A crash: the node's replicas are offline at once, its leaderships stay until
        # the controller fences it (broker.session.timeout.ms).
        crashed = next(n for n in every if n != gone)
        cluster.stop_node(crashed, controlled=False)
        running = [n for n in every if n != crashed]
        got = views(ka, running)
        want = expected(cluster, topics, down=(crashed,))
        assert got == [want] * len(running)
        assert all(crashed in s[2] for s in want["m0"].values())
    finally:
        ka.close()
