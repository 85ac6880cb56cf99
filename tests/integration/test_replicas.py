"""Replication across the nodes of one process, seen by real clients over TCP: replicas
and ISRs in Metadata, min.insync.replicas for acks=all, an idempotent producer and a
consumer group carrying on while the leader's or the coordinator's broker stops and
starts, and a seeded randomized run of stops and starts that loses or duplicates no
acknowledged record."""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer
from kafka.errors import NotEnoughReplicasError

from kafkalite.broker.testing.fixtures import BrokerThread

NODES = 3


@pytest.fixture
def cluster(make_broker: Callable[..., BrokerThread]) -> BrokerThread:
    return make_broker({"group.initial.rebalance.delay.ms": "0",
                        "offsets.topic.replication.factor": "3",
                        "offsets.topic.num.partitions": "3",
                        "transaction.state.log.replication.factor": "3",
                        "default.replication.factor": "3"}, nodes=NODES)


def _boot(cluster: BrokerThread) -> str:
    return ",".join(cluster.bootstraps)


def _create(cluster: BrokerThread, topic: str, partitions: int, rf: int = 3,
            **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": _boot(cluster)})
    admin.create_topics([NewTopic(topic, partitions, rf, config=configs)])[topic].result(10)


def _replica_ends(cluster: BrokerThread, topic: str, partition: int) -> dict[int, int]:
    """Each open replica's log end offset, by node."""
    def ends() -> dict[int, int]:
        manager = cluster.inner.replicas
        assert manager is not None
        rs = manager.sets[(topic, partition)]  # type: ignore[attr-defined]
        return {n: plog.log_end_offset for n, plog in rs.logs.items()}
    return cluster.call(ends)


def _read_all(cluster: BrokerThread, topic: str, partitions: int, expect: int,
              timeout: float = 30) -> dict[int, list[bytes]]:
    c = Consumer({"bootstrap.servers": _boot(cluster), "group.id": f"read-{topic}-{time.time()}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + timeout
    try:
        while sum(map(len, got.values())) < expect and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got[m.partition()].append(m.value())
        # Anything beyond what was expected would be a duplicate: read a little more.
        end = time.monotonic() + 1
        while time.monotonic() < end:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got[m.partition()].append(m.value())
    finally:
        c.close()
    return got


def test_replicas_and_isr_shown_and_filled(cluster: BrokerThread) -> None:
    _create(cluster, "rf3", 3)
    md = AdminClient({"bootstrap.servers": _boot(cluster)}).list_topics("rf3", timeout=10)
    parts = md.topics["rf3"].partitions
    assert {p.leader for p in parts.values()} == {1, 2, 3}
    for p in parts.values():
        assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3]
        assert p.replicas[0] == p.leader
    producer = Producer({"bootstrap.servers": _boot(cluster), "acks": "all"})
    for i in range(300):
        producer.produce("rf3", str(i).encode(), partition=i % 3)
    assert producer.flush(10) == 0
    for p in range(3):
        assert set(_replica_ends(cluster, "rf3", p).values()) == {100}
    # A replication factor above the node count is refused, as Kafka refuses it.
    admin = AdminClient({"bootstrap.servers": _boot(cluster)})
    with pytest.raises(Exception, match=r"INVALID_REPLICATION_FACTOR|replication factor"):
        admin.create_topics([NewTopic("rf4", 1, 4)])["rf4"].result(10)


def test_acks_all_needs_min_insync_replicas(cluster: BrokerThread) -> None:
    _create(cluster, "minisr", 1, **{"min.insync.replicas": "2"})
    leader, replicas, _isr = cluster.partition_state("minisr", 0)
    followers = [n for n in replicas if n != leader]
    for n in followers:
        cluster.stop_node(n)
    assert cluster.partition_state("minisr", 0)[2] == (leader,)
    boot = _boot(cluster)
    strict = KafkaProducer(bootstrap_servers=boot, acks="all", retries=0,
                           request_timeout_ms=5000)
    with pytest.raises(NotEnoughReplicasError):
        strict.send("minisr", b"x", partition=0).get(10)
    strict.close()
    relaxed = KafkaProducer(bootstrap_servers=boot, acks=1, retries=0)
    assert relaxed.send("minisr", b"y", partition=0).get(10).offset == 0
    relaxed.close()
    # One follower back: the ISR holds two, acks=all goes through.
    cluster.start_node(followers[0])
    assert len(cluster.partition_state("minisr", 0)[2]) == 2
    again = KafkaProducer(bootstrap_servers=boot, acks="all", retries=0)
    assert again.send("minisr", b"z", partition=0).get(10).offset == 1
    again.close()


def _produce_loop(boot: str, topic: str, partitions: int, stop: threading.Event,
                  acked: dict[int, list[bytes]], errors: list[Any], limit: int) -> None:
    """An idempotent acks=all producer writing numbered records round the partitions
    until ``stop`` (or ``limit`` records); what was acknowledged, by partition."""
    producer = Producer({"bootstrap.servers": boot, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 2, "message.timeout.ms": 60000})

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[msg.partition()].append(msg.value())

    i = 0
    while not stop.is_set() and i < limit:
        producer.produce(topic, f"{i:08d}".encode(), partition=i % partitions,
                         on_delivery=report)
        producer.poll(0)
        i += 1
        if i % 50 == 0:
            time.sleep(0.01)
    assert producer.flush(60) == 0


def _check_exactly_once(got: dict[int, list[bytes]], acked: dict[int, list[bytes]]) -> None:
    for p, values in got.items():
        assert len(values) == len(set(values)), f"partition {p}: duplicates"
        assert values == sorted(values), f"partition {p}: out of order"
        assert set(acked[p]) <= set(values), f"partition {p}: acknowledged record lost"


def test_idempotent_producer_through_leader_stop_and_start(cluster: BrokerThread) -> None:
    _create(cluster, "failover", 3)
    leader = cluster.partition_state("failover", 0)[0]
    stop = threading.Event()
    acked: dict[int, list[bytes]] = {p: [] for p in range(3)}
    errors: list[Any] = []
    t = threading.Thread(target=_produce_loop, args=(_boot(cluster), "failover", 3, stop,
                                                      acked, errors, 20000))
    t.start()
    try:
        time.sleep(1)
        cluster.stop_node(leader)
        new = cluster.partition_state("failover", 0)
        assert new[0] not in (leader, -1) and leader not in new[2]
        time.sleep(1.5)
        cluster.start_node(leader)
        assert leader in cluster.partition_state("failover", 0)[2]
        time.sleep(1)
    finally:
        stop.set()
        t.join(90)
    assert not errors
    total = sum(map(len, acked.values()))
    got = _read_all(cluster, "failover", 3, total)
    _check_exactly_once(got, acked)
    assert sum(map(len, got.values())) == total
    # Every replica holds the same log again.
    for p in range(3):
        assert len(set(_replica_ends(cluster, "failover", p).values())) == 1


def test_group_keeps_consuming_while_its_coordinator_stops(cluster: BrokerThread) -> None:
    _create(cluster, "work", 3)
    producer = Producer({"bootstrap.servers": _boot(cluster), "acks": "all"})
    for i in range(600):
        producer.produce("work", str(i).encode(), partition=i % 3)
    assert producer.flush(10) == 0
    group = "movers"
    coordinator = cluster.call(lambda: cluster.inner.cluster.coordinator(0, group))
    consumer = Consumer({"bootstrap.servers": _boot(cluster), "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": 10000})
    consumer.subscribe(["work"])
    seen = 0
    stopped = False
    deadline = time.monotonic() + 60
    try:
        while seen < 600 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None or m.error():
                continue
            seen += 1
            if seen % 50 == 0:
                try:
                    consumer.commit(asynchronous=False)
                except Exception as e:
                    assert isinstance(e.args[0], KafkaError)
            if seen == 200 and not stopped:
                cluster.stop_node(coordinator)
                stopped = True
        assert stopped and seen >= 600
        moved = cluster.call(lambda: cluster.inner.cluster.coordinator(0, group))
        assert moved not in (coordinator, -1)
        for _ in range(20):
            try:
                consumer.commit(asynchronous=False)
                break
            except Exception:
                time.sleep(0.5)
        committed = consumer.committed([TopicPartition("work", p) for p in range(3)], 10)
        assert [tp.offset for tp in committed] == [200, 200, 200]
    finally:
        consumer.close()


def test_randomized_stops_and_starts_lose_nothing(cluster: BrokerThread) -> None:
    seed = int(os.environ.get("KAFKALITE_TEST_SEED", random.randrange(1 << 30)))
    print(f"seed {seed}")
    rng = random.Random(seed)
    _create(cluster, "chaos", 4, **{"min.insync.replicas": "2"})
    stop = threading.Event()
    acked: dict[int, list[bytes]] = {p: [] for p in range(4)}
    errors: list[Any] = []
    t = threading.Thread(target=_produce_loop, args=(_boot(cluster), "chaos", 4, stop,
                                                      acked, errors, 40000))
    t.start()
    down: set[int] = set()
    try:
        ends = time.monotonic() + 8
        for _ in range(12):  # bounded in count and time
            if time.monotonic() >= ends:
                break
            time.sleep(rng.uniform(0.2, 0.6))
            node = rng.randint(1, NODES)
            if node in down:
                cluster.start_node(node)
                down.discard(node)
            elif not down:  # at most one node down: min.insync.replicas=2 stays met
                cluster.stop_node(node)
                down.add(node)
        for node in sorted(down):
            cluster.start_node(node)
        time.sleep(0.5)
    finally:
        stop.set()
        t.join(90)
    assert not errors, f"seed {seed}: {errors[:3]}"
    total = sum(map(len, acked.values()))
    got = _read_all(cluster, "chaos", 4, total)
    _check_exactly_once(got, acked)
    assert sum(map(len, got.values())) == total, f"seed {seed}"


def test_ctl_and_admin_api_stop_and_start_brokers(
        make_broker: Callable[..., BrokerThread]) -> None:
    import json
    import subprocess
    import sys
    import urllib.request

    broker = make_broker({"default.replication.factor": "3"}, nodes=NODES, admin=True)
    _create(broker, "ctl", 3)

    def ctl(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "kafkalite", "ctl", "--admin",
                               broker.admin_url, "broker", *args],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "broker 2: stopped, leads 0" in ctl("stop", "2")
    assert all(2 not in broker.partition_state("ctl", p)[2] for p in range(3))
    listed = ctl("list")
    assert "\tstopped\t" in listed.splitlines()[1]
    assert "broker 2: running" in ctl("start", "2")
    assert all(2 in broker.partition_state("ctl", p)[2] for p in range(3))
    req = urllib.request.Request(f"{broker.admin_url}/api/v1/brokers/3/isolate", data=b"{}",
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert json.loads(resp.read())["status"] == "isolated"
    assert "broker 3: running" in ctl("heal", "3")
    bad = subprocess.run([sys.executable, "-m", "kafkalite", "ctl", "--admin",
                          broker.admin_url, "broker", "stop", "9"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "no broker 9" in bad.stderr


def test_isolation_and_crash_on_the_broker_clock(
        make_broker: Callable[..., BrokerThread]) -> None:
    """An isolated follower leaves the ISR after replica.lag.time.max.ms and an isolated
    or crashed leader loses leadership after broker.session.timeout.ms, both on the
    manual clock; healed, the node catches up and rejoins."""
    broker = make_broker({"default.replication.factor": "3",
                          "replica.lag.time.max.ms": "5000",
                          "broker.session.timeout.ms": "12000"},
                         nodes=NODES, manual_clock=True)
    _create(broker, "iso", 1)
    leader, replicas, isr = broker.partition_state("iso", 0)
    follower = next(n for n in replicas if n != leader)
    broker.isolate_node(follower)
    producer = KafkaProducer(bootstrap_servers=_boot(broker), acks=1, retries=0)
    producer.send("iso", b"a", partition=0).get(10)
    assert broker.partition_state("iso", 0)[2] == isr
    broker.advance(8000)
    # Behind for longer than replica.lag.time.max.ms: out of the ISR, not yet fenced.
    assert follower not in broker.partition_state("iso", 0)[2]
    assert broker.call(lambda: broker.inner.node_status(follower)) == "isolated"
    broker.advance(5000)
    assert broker.call(lambda: broker.inner.node_status(follower)) == "fenced"
    broker.heal_node(follower)
    assert follower in broker.partition_state("iso", 0)[2]
    assert len(set(_replica_ends(broker, "iso", 0).values())) == 1
    # A crash: the leader keeps leading until the controller fences it.
    broker.stop_node(leader, controlled=False)
    assert broker.partition_state("iso", 0)[0] == leader
    broker.advance(12000)
    moved = broker.partition_state("iso", 0)
    assert moved[0] not in (leader, -1) and leader not in moved[2]
    assert producer.send("iso", b"b", partition=0).get(30).offset == 1
    producer.close()
    broker.start_node(leader)
    assert leader in broker.partition_state("iso", 0)[2]


def test_transactions_survive_the_leader_stopping(cluster: BrokerThread) -> None:
    """Transaction markers reach the followers: after the leader's broker stops, a
    read_committed consumer of the new leader sees the committed transaction and not
    the aborted one, and the transaction coordinator's state moved with it."""
    _create(cluster, "txn", 1)
    boot = _boot(cluster)
    producer = Producer({"bootstrap.servers": boot, "transactional.id": "tx-1"})
    producer.init_transactions(10)
    producer.begin_transaction()
    for i in range(5):
        producer.produce("txn", f"c{i}".encode(), partition=0)
    producer.commit_transaction(10)
    producer.begin_transaction()
    producer.produce("txn", b"aborted", partition=0)
    producer.abort_transaction(10)
    leader = cluster.partition_state("txn", 0)[0]
    cluster.stop_node(leader)
    producer.begin_transaction()
    producer.produce("txn", b"after", partition=0)
    producer.commit_transaction(30)
    c = Consumer({"bootstrap.servers": boot, "group.id": "txn-reader",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    c.assign([TopicPartition("txn", 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(got) < 6 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    assert got == [b"c0", b"c1", b"c2", b"c3", b"c4", b"after"]


def test_elect_leaders_preferred_and_unclean(make_broker: Callable[..., BrokerThread]) -> None:
    from confluent_kafka import ElectionType

    broker = make_broker({"default.replication.factor": "3"}, nodes=NODES)
    _create(broker, "elect", 1)
    admin = AdminClient({"bootstrap.servers": _boot(broker)})
    tp = [TopicPartition("elect", 0)]

    def elect(kind: ElectionType) -> str | None:
        """The partition's error name, None when elected."""
        got = admin.elect_leaders(kind, tp).result(10)
        err = next(iter(got.values()))
        return None if err is None else str(err.name())
    preferred, replicas, _isr = broker.partition_state("elect", 0)
    # The preferred replica leads: nothing to elect.
    assert elect(ElectionType.PREFERRED) == "ELECTION_NOT_NEEDED"
    broker.stop_node(preferred)
    assert broker.partition_state("elect", 0)[0] != preferred
    assert elect(ElectionType.PREFERRED) == "PREFERRED_LEADER_NOT_AVAILABLE"
    broker.start_node(preferred)
    # Back in sync, the preferred replica leads again on request.
    assert elect(ElectionType.PREFERRED) is None
    assert broker.partition_state("elect", 0)[0] == preferred
    # Every replica but one stopped, that one out of the ISR: only unclean elects it.
    second, third = replicas[1], replicas[2]
    broker.stop_node(third)
    broker.stop_node(second)
    broker.stop_node(preferred)
    assert broker.partition_state("elect", 0)[0] == -1
    broker.start_node(third)
    assert broker.partition_state("elect", 0)[0] == -1
    assert elect(ElectionType.PREFERRED) == "PREFERRED_LEADER_NOT_AVAILABLE"
    assert elect(ElectionType.UNCLEAN) is None
    leader, _r, isr = broker.partition_state("elect", 0)
    assert leader == third and isr == (third,)


def test_fault_rule_for_one_node(cluster: BrokerThread) -> None:
    """A fault rule naming a node fires only for requests to that node: a produce error
    on one node, which a partition led by another node never sees."""
    from kafka.errors import PolicyViolationError

    _create(cluster, "faulty", 3, rf=1)
    leaders = {cluster.partition_state("faulty", p)[0]: p for p in range(3)}
    node, spared = sorted(leaders)[0], sorted(leaders)[1]
    producer = KafkaProducer(bootstrap_servers=_boot(cluster), acks=1, retries=0)
    with cluster.faults.injected("Produce", error="POLICY_VIOLATION", node=node):
        with pytest.raises(PolicyViolationError):
            producer.send("faulty", b"refused", partition=leaders[node]).get(10)
        assert producer.send("faulty", b"fine", partition=leaders[spared]).get(10).offset == 0
    assert producer.send("faulty", b"again", partition=leaders[node]).get(10).offset == 0
    producer.close()


def test_new_partitions_described_and_hosted_on_every_replica(cluster: BrokerThread) -> None:
    """CreatePartitions places replicas as CreateTopics does; DescribeTopicPartitions
    and DescribeLogDirs show them, followers included."""
    from confluent_kafka.admin import NewPartitions
    from kafka import KafkaAdminClient

    from kafkalite.broker.cluster.placement import place

    _create(cluster, "grow", 1)
    admin = AdminClient({"bootstrap.servers": _boot(cluster)})
    admin.create_partitions([NewPartitions("grow", 4)])["grow"].result(10)
    producer = Producer({"bootstrap.servers": _boot(cluster), "acks": "all"})
    for i in range(40):
        producer.produce("grow", b"x", partition=i % 4)
    assert producer.flush(10) == 0
    expected = place("grow", 0, 4, 3, (1, 2, 3))
    from confluent_kafka import TopicCollection

    described = admin.describe_topics(TopicCollection(["grow"]))["grow"].result(10)
    for p in described.partitions:
        assert [r.id for r in p.replicas] == expected[p.id]
        assert sorted(r.id for r in p.isr) == [1, 2, 3] and p.leader.id == expected[p.id][0]
        assert set(_replica_ends(cluster, "grow", p.id).values()) == {10}
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10000)
    try:
        entries = kp.describe_log_dirs()
    finally:
        kp.close()
    for e in entries:
        (log_dir,) = e["log_dirs"]
        sizes = {p["partition_index"]: p["partition_size"] for t in log_dir["topics"]
                 if t["name"] == "grow" for p in t["partitions"]}
        assert sorted(sizes) == [0, 1, 2, 3] and all(v > 0 for v in sizes.values())


def test_isolated_leader_is_truncated_when_it_heals(
        make_broker: Callable[..., BrokerThread]) -> None:
    """An isolated leader goes on taking acks=1 records until it is fenced; the new
    leader's epoch begins without them, and the old leader, healed, truncates them away
    (what OffsetForLeaderEpoch tells a consumer too)."""
    from kafkalite.client.kafka import RawConnection, request, request_class

    broker = make_broker({"default.replication.factor": "3",
                          "broker.session.timeout.ms": "6000"},
                         nodes=NODES, manual_clock=True)
    _create(broker, "trunc", 1)
    boot = _boot(broker)
    p = KafkaProducer(bootstrap_servers=boot, acks="all", retries=0)
    assert p.send("trunc", b"kept", partition=0).get(10).offset == 0
    p.close()
    old = broker.partition_state("trunc", 0)[0]
    broker.isolate_node(old)
    lone = KafkaProducer(bootstrap_servers=broker.bootstraps[old - 1], acks=1, retries=0)
    assert lone.send("trunc", b"lost", partition=0).get(10).offset == 1
    lone.close()
    broker.advance(6000)
    new = broker.partition_state("trunc", 0)[0]
    assert new not in (old, -1)
    again = KafkaProducer(bootstrap_servers=boot, acks="all", retries=0)
    assert again.send("trunc", b"after", partition=0).get(10).offset == 1
    again.close()
    # The new leader answers OffsetForLeaderEpoch for the first epoch: it ended at 1.
    conn = RawConnection(broker.bootstraps[new - 1])
    try:
        part_t = request_class(23, 4, "OffsetForLeaderPartition")
        topic_t = request_class(23, 4, "OffsetForLeaderTopic")
        resp = conn.call(request(23, 4, replica_id=-1, topics=(topic_t(
            topic="trunc", partitions=(part_t(partition=0, current_leader_epoch=-1,
                                              leader_epoch=0),)),)))
    finally:
        conn.close()
    part = resp.topics[0].partitions[0]
    assert (part.error_code, part.end_offset) == (0, 1)
    broker.heal_node(old)
    assert old in broker.partition_state("trunc", 0)[2]
    assert set(_replica_ends(broker, "trunc", 0).values()) == {2}
    got = _read_all(broker, "trunc", 1, 2, timeout=10)
    assert got[0] == [b"kept", b"after"]


def test_whole_process_restart_keeps_replicas_and_leaders(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker({"default.replication.factor": "3"}, nodes=NODES)
    _create(broker, "again", 2)
    producer = Producer({"bootstrap.servers": _boot(broker), "acks": "all"})
    for i in range(20):
        producer.produce("again", str(i).encode(), partition=i % 2)
    assert producer.flush(10) == 0
    first = broker.partition_state("again", 0)[0]
    broker.stop_node(first)
    moved = broker.partition_state("again", 0)[0]
    producer.produce("again", b"late", partition=0)
    assert producer.flush(20) == 0
    broker.restart()
    leader, replicas, isr = broker.partition_state("again", 0)
    assert leader == moved and len(replicas) == 3
    # The node stopped before the restart is back, caught up and in sync.
    assert sorted(isr) == [1, 2, 3]
    assert set(_replica_ends(broker, "again", 0).values()) == {11}
    got = _read_all(broker, "again", 2, 21, timeout=15)
    assert sorted(map(len, got.values())) == [10, 11]


def test_aiokafka_idempotent_producer_through_leader_stop(cluster: BrokerThread) -> None:
    """aiokafka's idempotent acks=all producer sends while the partition leader's broker
    stops and starts; the partition then holds each record once, in order."""
    import asyncio

    from aiokafka import AIOKafkaProducer

    _create(cluster, "aio", 1)
    leader = cluster.partition_state("aio", 0)[0]

    async def run() -> list[int]:
        producer = AIOKafkaProducer(bootstrap_servers=_boot(cluster), enable_idempotence=True,
                                    acks="all", request_timeout_ms=30000)
        await producer.start()
        try:
            async def flip() -> None:
                await asyncio.sleep(0.3)
                await asyncio.to_thread(cluster.stop_node, leader)
                await asyncio.sleep(0.3)
                await asyncio.to_thread(cluster.start_node, leader)

            flipping = asyncio.create_task(flip())
            futures = []
            for i in range(600):
                # In flight across the stop and the start: never more than a few waiting.
                futures.append(await producer.send("aio", f"{i:05d}".encode(), partition=0))
                await asyncio.sleep(0.002)
            done = await asyncio.gather(*futures)
            await flipping
        finally:
            await producer.stop()
        return [md.offset for md in done]

    offsets = asyncio.run(run())
    assert offsets == list(range(600))
    got = _read_all(cluster, "aio", 1, 600)
    assert got[0] == [f"{i:05d}".encode() for i in range(600)]
