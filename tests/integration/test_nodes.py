"""Several brokers in one process (``kafkalite.nodes``), seen by real clients over TCP:
every broker in Metadata, DescribeCluster and DescribeLogDirs, partition leaders and group
coordinators spread over the nodes, and the errors a node answers for what it does not
lead."""

from __future__ import annotations

import asyncio
import datetime
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient

from kafkalite.broker.testing.fixtures import BrokerProcess, BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode

PRODUCE, FETCH, LIST_OFFSETS, FIND_COORDINATOR, HEARTBEAT = 0, 1, 2, 10, 12
NODES = 3
PARTITIONS = 6


@pytest.fixture
def cluster(make_broker: Callable[..., BrokerThread]) -> BrokerThread:
    return make_broker({"group.initial.rebalance.delay.ms": "0",
                        "broker.rack": "r1,r2,r3"}, nodes=NODES)


def _create(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> dict[int, int]:
    """Create ``topic``; its partitions' leaders by partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(10)
    md = admin.list_topics(topic, timeout=10)
    return {p: m.leader for p, m in md.topics[topic].partitions.items()}


def test_every_broker_listed_and_leaders_spread(cluster: BrokerThread) -> None:
    bootstraps = cluster.bootstraps
    assert len(bootstraps) == NODES and len(set(bootstraps)) == NODES
    leaders = _create(cluster.bootstrap, "spread")
    assert set(leaders.values()) == {1, 2, 3}
    # Each broker, asked directly, tells the same story.
    for address in bootstraps:
        admin = AdminClient({"bootstrap.servers": address})
        md = admin.list_topics("spread", timeout=10)
        assert {b: f"{m.host}:{m.port}" for b, m in md.brokers.items()} == {
            i + 1: a for i, a in enumerate(bootstraps)}
        assert {p: m.leader for p, m in md.topics["spread"].partitions.items()} == leaders
        assert all(m.replicas == [m.leader] == m.isrs
                   for m in md.topics["spread"].partitions.values())
        described = admin.describe_cluster().result(10)
        assert sorted((n.id, n.rack) for n in described.nodes) == [
            (1, "r1"), (2, "r2"), (3, "r3")]
        assert described.controller.id == 1


def test_describe_log_dirs_per_broker(cluster: BrokerThread) -> None:
    leaders = _create(cluster.bootstrap, "dirs")
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10000)
    try:
        entries = kp.describe_log_dirs()
    finally:
        kp.close()
    assert sorted(e["broker"] for e in entries) == [1, 2, 3]
    for e in entries:
        (log_dir,) = e["log_dirs"]
        assert log_dir["log_dir"].endswith(f"nodes/{e['broker']}")
        hosted = {p["partition_index"] for t in log_dir["topics"] if t["name"] == "dirs"
                  for p in t["partitions"]}
        assert hosted == {p for p, n in leaders.items() if n == e["broker"]}
    for p, n in leaders.items():
        assert (cluster.data_dir / "nodes" / str(n) / f"dirs-{p}").is_dir()


def test_confluent_produce_consume_and_group(cluster: BrokerThread) -> None:
    leaders = _create(cluster.bootstrap, "cf")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True,
                         "acks": "all"})
    per_partition = 20
    for i in range(per_partition * PARTITIONS):
        producer.produce("cf", key=str(i).encode(), value=str(i).encode(),
                         partition=i % PARTITIONS)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "cf-group",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["cf"])
    got: dict[int, list[int]] = {}
    deadline = time.monotonic() + 30
    try:
        while sum(map(len, got.values())) < per_partition * PARTITIONS:
            assert time.monotonic() < deadline, f"consumed {got}"
            m = consumer.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.setdefault(m.partition(), []).append(int(m.value()))
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition("cf", p) for p in range(PARTITIONS)],
                                       timeout=10)
    finally:
        consumer.close()
    assert {p: vs for p, vs in got.items()} == {
        p: list(range(p, per_partition * PARTITIONS, PARTITIONS)) for p in range(PARTITIONS)}
    assert [tp.offset for tp in committed] == [per_partition] * PARTITIONS
    # The group's coordinator is the leader of its __consumer_offsets partition.
    conn = RawConnection(cluster.bootstrap)
    try:
        coord = conn.call(request(FIND_COORDINATOR, 3, key="cf-group", key_type=0))
    finally:
        conn.close()
    assert coord.error_code == ErrorCode.none
    assert f"{coord.host}:{coord.port}" == cluster.bootstraps[coord.node_id - 1]
    assert set(leaders.values()) == {1, 2, 3}


def test_aiokafka_produce_consume_and_group(cluster: BrokerThread) -> None:
    leaders = _create(cluster.bootstrap, "aio")
    assert set(leaders.values()) == {1, 2, 3}
    total = 10 * PARTITIONS

    async def run() -> tuple[dict[int, list[int]], dict[int, int | None]]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all",
                                    enable_idempotence=True)
        await producer.start()
        try:
            for i in range(total):
                await producer.send_and_wait("aio", str(i).encode(), partition=i % PARTITIONS)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer("aio", bootstrap_servers=cluster.bootstrap,
                                    group_id="aio-group", auto_offset_reset="earliest",
                                    enable_auto_commit=False)
        await consumer.start()
        got: dict[int, list[int]] = {}
        try:
            async with asyncio.timeout(30):
                while sum(map(len, got.values())) < total:
                    batch = await consumer.getmany(timeout_ms=500)
                    for tp, msgs in batch.items():
                        got.setdefault(tp.partition, []).extend(int(m.value) for m in msgs)
            await consumer.commit()
            committed = {p: await consumer.committed(AioTopicPartition("aio", p))
                         for p in range(PARTITIONS)}
        finally:
            await consumer.stop()
        return got, committed

    got, committed = asyncio.run(run())
    assert got == {p: list(range(p, total, PARTITIONS)) for p in range(PARTITIONS)}
    assert committed == {p: total // PARTITIONS for p in range(PARTITIONS)}


def _call(address: str, req: Any) -> Any:
    conn = RawConnection(address)
    try:
        return conn.call(req)
    finally:
        conn.close()


def test_non_leader_and_non_coordinator_answers(cluster: BrokerThread) -> None:
    leaders = _create(cluster.bootstrap, "guard")
    addresses = cluster.bootstraps
    for p, leader in leaders.items():
        topic_t = request_class(LIST_OFFSETS, 5, "ListOffsetsTopic")
        part_t = request_class(LIST_OFFSETS, 5, "ListOffsetsPartition")
        topics = (topic_t(name="guard", partitions=(
            part_t(partition_index=p, timestamp=-1, current_leader_epoch=-1),)),)
        for node in (1, 2, 3):
            resp = _call(addresses[node - 1], request(LIST_OFFSETS, 5, replica_id=-1,
                                                      isolation_level=0, topics=topics))
            (part,) = resp.topics[0].partitions
            expected = ErrorCode.none if node == leader else ErrorCode.not_leader_or_follower
            assert part.error_code == expected, (p, node, leader)
    coord = _call(cluster.bootstrap, request(FIND_COORDINATOR, 3, key="g-guard", key_type=0))
    for node in (1, 2, 3):
        resp = _call(addresses[node - 1], request(HEARTBEAT, 3, group_id="g-guard",
                                                  generation_id=1, member_id="m",
                                                  group_instance_id=None))
        # The coordinator knows no such member; every other node is not the coordinator.
        assert resp.error_code == (ErrorCode.unknown_member_id if node == coord.node_id
                                   else ErrorCode.not_coordinator)


def test_serve_nodes_ready_file_and_layout(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = BrokerProcess(data, extra_args=["--nodes", "3"]).start()
    try:
        assert len(proc.bootstraps) == 3 and proc.bootstraps[0] == proc.bootstrap
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        assert sorted(admin.list_topics(timeout=10).brokers) == [1, 2, 3]
    finally:
        assert proc.stop() == 0
    assert (data / "nodes" / "count").read_text().strip() == "3"
    # The data directory keeps the node count it was made with: one line, exit 1.
    with pytest.raises(RuntimeError, match=r"configuration error: kafkalite\.nodes: .* "
                       r"holds a cluster of 3 nodes, not 1"):
        BrokerProcess(data).start()


def test_one_node_ready_file_unchanged(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "one").start()
    try:
        # No list of nodes in the ready file, no per-node directories.
        assert proc.nodes == [] and proc.bootstraps == [proc.bootstrap]
    finally:
        proc.stop()
    assert not (tmp_path / "one" / "nodes").exists()


def test_transaction_and_consumer_protocol_group(cluster: BrokerThread) -> None:
    """A transaction (its coordinator on one node, its partitions led by all three, its
    offsets sent to a group coordinated by one) read by a KIP-848 consumer under
    read_committed."""
    _create(cluster.bootstrap, "tx-in")
    _create(cluster.bootstrap, "tx-out")
    producer = Producer({"bootstrap.servers": cluster.bootstrap,
                         "transactional.id": "nodes-tx"})
    producer.init_transactions(20)
    producer.begin_transaction()
    for i in range(5 * PARTITIONS):
        producer.produce("tx-out", str(i).encode(), partition=i % PARTITIONS)
    group = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "tx-group"})
    producer.send_offsets_to_transaction([TopicPartition("tx-in", 0, 5)],
                                         group.consumer_group_metadata(), 20)
    producer.commit_transaction(20)
    # An aborted one on top: read_committed must not see it.
    producer.begin_transaction()
    producer.produce("tx-out", b"aborted", partition=0)
    producer.abort_transaction(20)
    reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "tx-reader",
                       "group.protocol": "consumer", "auto.offset.reset": "earliest",
                       "isolation.level": "read_committed"})
    reader.subscribe(["tx-out"])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < 5 * PARTITIONS:
            assert time.monotonic() < deadline, values
            m = reader.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                values.append(m.value())
        # Nothing more (the aborted record) within a few more polls.
        for _ in range(4):
            m = reader.poll(0.25)
            assert m is None or m.error() is not None, m.value()
        (committed,) = group.committed([TopicPartition("tx-in", 0)], timeout=10)
    finally:
        reader.close()
        group.close()
    assert sorted(int(v) for v in values) == list(range(5 * PARTITIONS))
    assert committed.offset == 5


def test_fetch_from_a_non_leader_names_the_leader(cluster: BrokerThread) -> None:
    """KIP-951: Fetch v16 answered NOT_LEADER_OR_FOLLOWER carries the current leader, its
    epoch and its endpoint."""
    leaders = _create(cluster.bootstrap, "kip951")
    md = _call(cluster.bootstrap, request(3, 12, topics=None, allow_auto_topic_creation=False,
                                          include_topic_authorized_operations=False))
    (topic,) = [t for t in md.topics if t.name == "kip951"]
    part_t = request_class(FETCH, 16, "FetchPartition")
    topic_t = request_class(FETCH, 16, "FetchTopic")
    for p, leader in leaders.items():
        other = leader % NODES + 1
        req = request(FETCH, 16, max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=1 << 20,
                      isolation_level=0, session_id=0, session_epoch=-1,
                      topics=(topic_t(topic_id=topic.topic_id, partitions=(part_t(
                          partition=p, current_leader_epoch=-1, fetch_offset=0,
                          last_fetched_epoch=-1, log_start_offset=-1,
                          partition_max_bytes=1 << 20),)),),
                      forgotten_topics_data=(), rack_id="")
        resp = _call(cluster.bootstraps[other - 1], req)
        (part,) = resp.responses[0].partitions
        assert part.error_code == ErrorCode.not_leader_or_follower
        assert part.current_leader.leader_id == leader
        assert part.current_leader.leader_epoch == 0
        (endpoint,) = resp.node_endpoints
        assert (endpoint.node_id, f"{endpoint.host}:{endpoint.port}", endpoint.rack) == (
            leader, cluster.bootstraps[leader - 1], f"r{leader}")
        ok = _call(cluster.bootstraps[leader - 1], req)
        assert ok.responses[0].partitions[0].error_code == ErrorCode.none


def test_produce_to_a_non_leader_names_the_leader(cluster: BrokerThread) -> None:
    """KIP-951 in Produce v12: nothing written, the leader and its endpoint named."""
    leaders = _create(cluster.bootstrap, "kip951p")
    data_t = request_class(PRODUCE, 12, "TopicProduceData")
    part_t = request_class(PRODUCE, 12, "PartitionProduceData")
    for p, leader in leaders.items():
        other = leader % NODES + 1
        req = request(PRODUCE, 12, transactional_id=None, acks=-1,
                      timeout=datetime.timedelta(seconds=5),
                      topic_data=(data_t(name="kip951p", partition_data=(
                          part_t(index=p, records=None),)),))
        resp = _call(cluster.bootstraps[other - 1], req)
        (part,) = resp.responses[0].partition_responses
        assert part.error_code == ErrorCode.not_leader_or_follower
        assert part.current_leader.leader_id == leader
        (endpoint,) = resp.node_endpoints
        assert (endpoint.node_id, f"{endpoint.host}:{endpoint.port}") == (
            leader, cluster.bootstraps[leader - 1])
    # Nothing was written anywhere.
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "watermarks"})
    try:
        marks = {consumer.get_watermark_offsets(TopicPartition("kip951p", p), timeout=10)
                 for p in leaders}
    finally:
        consumer.close()
    assert marks == {(0, 0)}


@pytest.mark.parametrize("nodes", [1, NODES])
def test_acks_all_below_min_insync_replicas(make_broker: Callable[..., BrokerThread],
                                            nodes: int) -> None:
    """One replica in sync and ``min.insync.replicas=2``: acks=all fails with
    NOT_ENOUGH_REPLICAS and writes nothing; acks=1 succeeds (confluent-kafka)."""
    broker = make_broker(nodes=nodes)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("min-isr", 3, config={"min.insync.replicas": "2"})]
                        )["min-isr"].result(10)
    results: dict[str, list[Any]] = {"all": [], "1": []}
    for acks in results:
        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": acks,
                             "retries": 0, "message.timeout.ms": 10000})
        for p in range(3):
            producer.produce("min-isr", b"x", partition=p,
                             on_delivery=lambda err, _msg, acks=acks: results[acks].append(err))
        assert producer.flush(15) == 0
    assert [e.code() if e else None for e in results["all"]] == [
        KafkaError.NOT_ENOUGH_REPLICAS] * 3
    assert results["1"] == [None] * 3
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "marks"})
    try:
        marks = [consumer.get_watermark_offsets(TopicPartition("min-isr", p), timeout=10)
                 for p in range(3)]
    finally:
        consumer.close()
    assert marks == [(0, 1)] * 3


def test_kafka_python_produce_consume_and_group(cluster: BrokerThread) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KpTopicPartition

    leaders = _create(cluster.bootstrap, "kp")
    assert set(leaders.values()) == {1, 2, 3}
    total = 5 * PARTITIONS
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    try:
        for i in range(total):
            producer.send("kp", str(i).encode(), partition=i % PARTITIONS)
        producer.flush(20)
    finally:
        producer.close(10)
    consumer = KafkaConsumer("kp", bootstrap_servers=cluster.bootstrap, group_id="kp-group",
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=20000)
    got: dict[int, list[int]] = {}
    try:
        for m in consumer:
            got.setdefault(m.partition, []).append(int(m.value))
            if sum(map(len, got.values())) == total:
                break
        consumer.commit()
        committed = {p: consumer.committed(KpTopicPartition("kp", p)) for p in range(PARTITIONS)}
    finally:
        consumer.close()
    assert got == {p: list(range(p, total, PARTITIONS)) for p in range(PARTITIONS)}
    assert committed == {p: total // PARTITIONS for p in range(PARTITIONS)}


def test_admin_api_lists_the_brokers(make_broker: Callable[..., BrokerThread]) -> None:
    import urllib.request

    broker = make_broker({"broker.rack": "r1,r2,r3"}, nodes=NODES, admin=True)
    leaders = _create(broker.bootstrap, "listed")
    with urllib.request.urlopen(f"{broker.admin_url}/api/v1/brokers", timeout=10) as resp:
        listed = json.loads(resp.read())["brokers"]
    assert [(b["node_id"], b["rack"], b["controller"]) for b in listed] == [
        (1, "r1", True), (2, "r2", False), (3, "r3", False)]
    assert [b["listeners"][0]["advertised"] for b in listed] == broker.bootstraps
    assert set(leaders.values()) == {1, 2, 3}
    md = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    every = [m.leader for t in md.topics.values() for m in t.partitions.values()]
    assert [b["leader_partitions"] for b in listed] == [every.count(n) for n in (1, 2, 3)]


def test_java_clients_across_nodes(cluster: BrokerThread) -> None:
    """The Java producer (idempotent, then a transactional one's initTransactions) and a
    Java consumer group, with the partition and the group served by a node other than the
    bootstrap one."""
    from .java_support import run_java

    node = cluster.call(lambda: cluster.inner.cluster)
    names = (f"java-{i}" for i in range(100))
    topic = next(n for n in names if node.leader(n, 0) != 1)
    group = next(n for n in names if node.coordinator(0, n) != 1)
    _create(cluster.bootstrap, topic, 1)
    lines = run_java("IdempotentProduce", cluster.bootstrap, topic, "500", timeout=120)
    assert (lines["last.offset"], lines["read"], lines["in.order"]) == ("499", "500", "true")
    assert lines["transactions"] == "accepted"
    lines = run_java("GroupOffsets", cluster.bootstrap, topic, group, "4", timeout=120)
    assert lines["first.offset"] == "0"
    assert lines["committed"] == "4"
    assert lines["resumed.offset"] == "4"
    assert lines["describe.state"] == "Stable"
