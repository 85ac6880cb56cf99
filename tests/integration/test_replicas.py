"""Replication across the nodes of one process, seen by real clients over TCP: replicas
and ISRs in Metadata and DescribeTopicPartitions, followers filled, min.insync.replicas
and the high watermark for acks=all, isolation, crash stops and fencing on the broker
clock, truncation of a healed leader, ElectLeaders, fault rules for one node, the ctl and
admin API switches, and a whole-process restart. Clients carrying on through stops are
in ``test_replicas_failover.py``."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer
from kafka.errors import NotEnoughReplicasError

from kafkalite.broker.testing.fixtures import BrokerThread

from .replica_helpers import (
    NODES,
    addresses,
    cluster,
    create,
    read_all,
    replica_ends,
)

__all__ = ["cluster"]  # the fixture, used by name


def test_replicas_and_isr_shown_and_filled(cluster: BrokerThread) -> None:
    create(cluster, "rf3", 3)
    md = AdminClient({"bootstrap.servers": addresses(cluster)}).list_topics("rf3", timeout=10)
    parts = md.topics["rf3"].partitions
    assert {p.leader for p in parts.values()} == {1, 2, 3}
    for p in parts.values():
        assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3]
        assert p.replicas[0] == p.leader
    producer = Producer({"bootstrap.servers": addresses(cluster), "acks": "all"})
    for i in range(300):
        producer.produce("rf3", str(i).encode(), partition=i % 3)
    assert producer.flush(10) == 0
    for p in range(3):
        assert set(replica_ends(cluster, "rf3", p).values()) == {100}
    # A replication factor above the node count is refused, as Kafka refuses it.
    admin = AdminClient({"bootstrap.servers": addresses(cluster)})
    with pytest.raises(Exception, match=r"INVALID_REPLICATION_FACTOR|replication factor"):
        admin.create_topics([NewTopic("rf4", 1, 4)])["rf4"].result(10)


def test_acks_all_needs_min_insync_replicas(cluster: BrokerThread) -> None:
    create(cluster, "minisr", 1, **{"min.insync.replicas": "2"})
    leader, replicas, _isr = cluster.partition_state("minisr", 0)
    followers = [n for n in replicas if n != leader]
    for n in followers:
        cluster.stop_node(n)
    assert cluster.partition_state("minisr", 0)[2] == (leader,)
    boot = addresses(cluster)
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


def test_ctl_and_admin_api_stop_and_start_brokers(
        make_broker: Callable[..., BrokerThread]) -> None:
    import json
    import subprocess
    import sys
    import urllib.request

    broker = make_broker({"default.replication.factor": "3"}, nodes=NODES, admin=True)
    create(broker, "ctl", 3)

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
    create(broker, "iso", 1)
    leader, replicas, isr = broker.partition_state("iso", 0)
    follower = next(n for n in replicas if n != leader)
    broker.isolate_node(follower)
    producer = KafkaProducer(bootstrap_servers=addresses(broker), acks=1, retries=0)
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
    assert len(set(replica_ends(broker, "iso", 0).values())) == 1
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


def test_elect_leaders_preferred_and_unclean(make_broker: Callable[..., BrokerThread]) -> None:
    from confluent_kafka import ElectionType

    broker = make_broker({"default.replication.factor": "3"}, nodes=NODES)
    create(broker, "elect", 1)
    admin = AdminClient({"bootstrap.servers": addresses(broker)})
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

    create(cluster, "faulty", 3, rf=1)
    leaders = {cluster.partition_state("faulty", p)[0]: p for p in range(3)}
    node, spared = sorted(leaders)[0], sorted(leaders)[1]
    producer = KafkaProducer(bootstrap_servers=addresses(cluster), acks=1, retries=0)
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

    create(cluster, "grow", 1)
    admin = AdminClient({"bootstrap.servers": addresses(cluster)})
    admin.create_partitions([NewPartitions("grow", 4)])["grow"].result(10)
    producer = Producer({"bootstrap.servers": addresses(cluster), "acks": "all"})
    for i in range(40):
        producer.produce("grow", b"x", partition=i % 4)
    assert producer.flush(10) == 0
    expected = place("grow", 0, 4, 3, (1, 2, 3))
    from confluent_kafka import TopicCollection

    described = admin.describe_topics(TopicCollection(["grow"]))["grow"].result(10)
    for p in described.partitions:
        assert [r.id for r in p.replicas] == expected[p.id]
        assert sorted(r.id for r in p.isr) == [1, 2, 3] and p.leader.id == expected[p.id][0]
        assert set(replica_ends(cluster, "grow", p.id).values()) == {10}
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
    create(broker, "trunc", 1)
    boot = addresses(broker)
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
    assert set(replica_ends(broker, "trunc", 0).values()) == {2}
    got = read_all(broker, "trunc", 1, 2, timeout=10)
    assert got[0] == [b"kept", b"after"]


def test_whole_process_restart_keeps_replicas_and_leaders(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker({"default.replication.factor": "3"}, nodes=NODES)
    create(broker, "again", 2)
    producer = Producer({"bootstrap.servers": addresses(broker), "acks": "all"})
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
    assert set(replica_ends(broker, "again", 0).values()) == {11}
    got = read_all(broker, "again", 2, 21, timeout=15)
    assert sorted(map(len, got.values())) == [10, 11]


def test_whole_process_restart_opens_single_replica_logs_on_use(
        make_broker: Callable[..., BrokerThread], monkeypatch: pytest.MonkeyPatch) -> None:
    """After a clean stop the partitions of one replica are announced in their next epoch
    without being opened, each opened under its node's directory when first asked for;
    those of several replicas are opened by the replica manager as it starts."""
    from kafkalite.broker import topic_store

    monkeypatch.setattr(topic_store, "OPEN_REST_AFTER_S", 600.0)  # no background pass
    broker = make_broker({"default.replication.factor": "3"}, nodes=NODES)
    create(broker, "single", 6, rf=1)
    create(broker, "triple", 2)
    producer = Producer({"bootstrap.servers": addresses(broker), "acks": "all"})
    for i in range(60):
        producer.produce("single" if i % 3 else "triple", str(i).encode(), partition=i % 2)
    assert producer.flush(10) == 0

    def opened() -> set[tuple[str, int]]:
        return {k for k in broker.inner.storage.logs.logs if not k[0].startswith("__")}

    def epochs(topic: str, n: int) -> list[int]:
        return broker.call(lambda: [broker.inner.storage.logs.leader_epoch(topic, p)
                                    for p in range(n)])

    before = epochs("single", 6)
    broker.restart()
    assert broker.call(opened) == {("triple", 0), ("triple", 1)}
    announced = epochs("single", 6)
    assert announced == [e + 1 for e in before]
    got = read_all(broker, "single", 6, 40, timeout=15)
    assert sorted(map(len, got.values())) == [0, 0, 0, 0, 20, 20]
    assert broker.call(opened) == {("triple", 0), ("triple", 1),
                                   *(("single", p) for p in range(6))}
    # Opened in the epochs announced, each under its leader's directory.
    assert epochs("single", 6) == announced
    root = broker.call(lambda: broker.inner.storage.logs.data_dir)
    for p in range(6):
        leader = broker.partition_state("single", p)[0]
        assert (root / "nodes" / str(leader) / f"single-{p}").is_dir()
    assert sorted(map(len, read_all(broker, "triple", 2, 20).values())) == [10, 10]


def test_acks_all_waits_for_the_isr(make_broker: Callable[..., BrokerThread]) -> None:
    """An acks=all append waits while an in-sync follower lags; when the ISR shrinks on
    the broker clock it is answered, NOT_ENOUGH_REPLICAS_AFTER_APPEND where the ISR fell
    below min.insync.replicas."""
    from kafka.errors import NotEnoughReplicasAfterAppendError

    broker = make_broker({"default.replication.factor": "3",
                          "replica.lag.time.max.ms": "4000",
                          "broker.session.timeout.ms": "60000"},
                         nodes=NODES, manual_clock=True)
    create(broker, "waits", 1)
    create(broker, "strict", 1, **{"min.insync.replicas": "3"})
    boot = addresses(broker)
    producer = KafkaProducer(bootstrap_servers=boot, acks="all", retries=0,
                             request_timeout_ms=30000)
    assert producer.send("waits", b"a", partition=0).get(10).offset == 0
    assert producer.send("strict", b"a", partition=0).get(10).offset == 0
    leader, replicas, _isr = broker.partition_state("waits", 0)
    follower = next(n for n in replicas if n != leader)
    broker.isolate_node(follower)
    waiting = producer.send("waits", b"b", partition=0)
    time.sleep(0.5)
    assert not waiting.is_done
    broker.advance(6000)
    assert waiting.get(10).offset == 1
    # Three nodes, three replicas: the follower holds one of "strict" too.
    broker.heal_node(follower)
    broker.isolate_node(follower)
    strict = producer.send("strict", b"b", partition=0)
    time.sleep(0.5)
    assert not strict.is_done
    broker.advance(6000)
    with pytest.raises(NotEnoughReplicasAfterAppendError):
        strict.get(10)
    producer.close()


def test_preferred_leaders_come_back_on_the_broker_clock(
        make_broker: Callable[..., BrokerThread]) -> None:
    """auto.leader.rebalance.enable (Kafka's default, true): a preferred replica back in
    sync leads again at the next leader.imbalance.check.interval.seconds."""
    broker = make_broker({"default.replication.factor": "3",
                          "leader.imbalance.check.interval.seconds": "60"},
                         nodes=NODES, manual_clock=True)
    create(broker, "pref", 3)
    preferred = [broker.partition_state("pref", p)[1][0] for p in range(3)]
    broker.stop_node(preferred[0])
    broker.start_node(preferred[0])
    assert broker.partition_state("pref", 0)[0] != preferred[0]
    producer = KafkaProducer(bootstrap_servers=addresses(broker), acks="all", retries=5,
                             max_in_flight_requests_per_connection=1)
    assert producer.send("pref", b"a", partition=0).get(10).offset == 0
    broker.advance(60_000)
    assert [broker.partition_state("pref", p)[0] for p in range(3)] == preferred
    assert producer.send("pref", b"b", partition=0).get(20).offset == 1
    producer.close()
    assert set(replica_ends(broker, "pref", 0).values()) == {2}


def _reassign(cluster: BrokerThread, topic: str, partition: int,
              replicas: list[int] | None) -> int:
    """AlterPartitionReassignments for one partition; its error code."""
    import datetime

    from kafkalite.client.kafka import RawConnection, request, request_class

    part_t = request_class(45, 0, "ReassignablePartition")
    topic_t = request_class(45, 0, "ReassignableTopic")
    conn = RawConnection(cluster.bootstrap)
    try:
        resp = conn.call(request(45, 0, timeout=datetime.timedelta(seconds=30), topics=(
            topic_t(name=topic, partitions=(part_t(partition_index=partition,
                                                  replicas=replicas),)),)))
    finally:
        conn.close()
    return int(resp.responses[0].partitions[0].error_code)


def _ongoing(cluster: BrokerThread) -> list[tuple[str, int, tuple[int, ...], tuple[int, ...],
                                                  tuple[int, ...]]]:
    import datetime

    from kafkalite.client.kafka import RawConnection, request

    conn = RawConnection(cluster.bootstrap)
    try:
        resp = conn.call(request(46, 0, timeout=datetime.timedelta(seconds=30), topics=None))
    finally:
        conn.close()
    return [(t.name, p.partition_index, tuple(p.replicas), tuple(p.adding_replicas),
             tuple(p.removing_replicas)) for t in resp.topics for p in t.partitions]


def test_reassignment_moves_replicas_and_leader(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker({}, nodes=NODES)
    create(broker, "moved", 1, rf=2)
    producer = Producer({"bootstrap.servers": addresses(broker), "acks": "all"})
    for i in range(10):
        producer.produce("moved", str(i).encode(), partition=0)
    assert producer.flush(10) == 0
    leader, replicas, _isr = broker.partition_state("moved", 0)
    spare = next(n for n in range(1, NODES + 1) if n not in replicas)
    other = next(n for n in replicas if n != leader)
    # Off the leader's node, onto the spare one: the leader hands over.
    assert _reassign(broker, "moved", 0, [spare, other]) == 0
    assert _ongoing(broker) == []
    new = broker.partition_state("moved", 0)
    assert new[1] == (spare, other) and sorted(new[2]) == sorted([spare, other])
    assert new[0] == spare
    assert not (broker.data_dir / "nodes" / str(leader) / "moved-0").exists()
    assert set(replica_ends(broker, "moved", 0).values()) == {10}
    got = read_all(broker, "moved", 1, 10, timeout=10)
    assert len(got[0]) == 10
    # A target replica on a stopped node keeps the reassignment going until it is back;
    # a cancelled one goes back to where it began.
    broker.stop_node(leader)
    assert _reassign(broker, "moved", 0, [spare, other, leader]) == 0
    assert _ongoing(broker) == [("moved", 0, (spare, other, leader), (leader,), ())]
    assert _reassign(broker, "moved", 0, None) == 0
    assert _ongoing(broker) == [] and broker.partition_state("moved", 0)[1] == (spare, other)
    assert _reassign(broker, "moved", 0, None) == 85  # NO_REASSIGNMENT_IN_PROGRESS
    assert _reassign(broker, "moved", 0, [spare, spare]) == 39  # INVALID_REPLICA_ASSIGNMENT
    assert _reassign(broker, "moved", 0, [spare, other, leader]) == 0
    broker.start_node(leader)
    assert _ongoing(broker) == []
    assert broker.partition_state("moved", 0)[1] == (spare, other, leader)
    assert set(replica_ends(broker, "moved", 0).values()) == {10}


def test_coordinator_not_available_while_its_partition_has_no_leader(
        make_broker: Callable[..., BrokerThread]) -> None:
    """With one replica of __consumer_offsets, a group whose partition's only replica is
    stopped has no coordinator until that node is back."""
    from kafkalite.client.kafka import RawConnection, request

    broker = make_broker({"offsets.topic.replication.factor": "1"}, nodes=NODES)

    def find(group: str) -> tuple[int, int]:
        conn = RawConnection(broker.bootstraps[-1])
        try:
            resp = conn.call(request(10, 3, key=group, key_type=0))
        finally:
            conn.close()
        return int(resp.error_code), int(resp.node_id)

    err, node = find("lonely")
    assert err == 0
    group = next(g for g in (f"lonely-{i}" for i in range(100))
                 if find(g)[1] not in (NODES, -1))
    _err, node = find(group)
    broker.stop_node(node)
    assert find(group) == (15, -1)  # COORDINATOR_NOT_AVAILABLE
    broker.start_node(node)
    assert find(group) == (0, node)


def test_replicas_span_racks(make_broker: Callable[..., BrokerThread]) -> None:
    """With every node in a rack, CreateTopics puts each partition's replicas in as many
    racks as its replication factor allows, and a rack's loss leaves a copy elsewhere."""
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    broker = make_broker({"broker.rack": ",".join(racks.values())}, nodes=4)
    admin = AdminClient({"bootstrap.servers": addresses(broker)})
    admin.create_topics([NewTopic("racked", 12, replication_factor=2)])["racked"].result(10)
    md = admin.list_topics("racked", timeout=10)
    assert set(md.brokers) == set(racks)
    parts = md.topics["racked"].partitions
    assert len(parts) == 12
    for p in parts.values():
        assert len(p.replicas) == 2 and {racks[n] for n in p.replicas} == {"a", "b"}, p
    assert {p.leader for p in parts.values()} == set(racks)
