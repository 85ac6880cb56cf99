"""Clients carrying on while brokers stop, start and get cut off: idempotent producers
(confluent-kafka, aiokafka) through a leader's stop and start, a consumer group through
its coordinator's stop, a transactional producer through the leader's stop, a
consume-transform-produce loop through its transaction coordinator's stop, and seeded
randomized runs of stops, starts, isolations and heals that lose or duplicate no
acknowledged record."""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafkalite.broker.testing.fixtures import BrokerThread

from .replica_helpers import (
    NODES,
    addresses,
    check_exactly_once,
    cluster,
    create,
    produce_loop,
    read_all,
    replica_ends,
)

__all__ = ["cluster"]  # the fixture, used by name


def test_idempotent_producer_through_leader_stop_and_start(cluster: BrokerThread) -> None:
    create(cluster, "failover", 3)
    leader = cluster.partition_state("failover", 0)[0]
    stop = threading.Event()
    acked: dict[int, list[bytes]] = {p: [] for p in range(3)}
    errors: list[Any] = []
    t = threading.Thread(target=produce_loop, args=(addresses(cluster), "failover", 3, stop,
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
    got = read_all(cluster, "failover", 3, total)
    check_exactly_once(got, acked)
    assert sum(map(len, got.values())) == total
    # Every replica holds the same log again.
    for p in range(3):
        assert len(set(replica_ends(cluster, "failover", p).values())) == 1


def test_group_keeps_consuming_while_its_coordinator_stops(cluster: BrokerThread) -> None:
    create(cluster, "work", 3)
    producer = Producer({"bootstrap.servers": addresses(cluster), "acks": "all"})
    for i in range(600):
        producer.produce("work", str(i).encode(), partition=i % 3)
    assert producer.flush(10) == 0
    group = "movers"
    coordinator = cluster.call(lambda: cluster.inner.cluster.coordinator(0, group))
    consumer = Consumer({"bootstrap.servers": addresses(cluster), "group.id": group,
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
    create(cluster, "chaos", 4, **{"min.insync.replicas": "2"})
    stop = threading.Event()
    acked: dict[int, list[bytes]] = {p: [] for p in range(4)}
    errors: list[Any] = []
    t = threading.Thread(target=produce_loop, args=(addresses(cluster), "chaos", 4, stop,
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
    got = read_all(cluster, "chaos", 4, total)
    check_exactly_once(got, acked)
    assert sum(map(len, got.values())) == total, f"seed {seed}"


def test_transactions_survive_the_leader_stopping(cluster: BrokerThread) -> None:
    """Transaction markers reach the followers: after the leader's broker stops, a
    read_committed consumer of the new leader sees the committed transaction and not
    the aborted one, and the transaction coordinator's state moved with it."""
    create(cluster, "txn", 1)
    boot = addresses(cluster)
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


def test_aiokafka_idempotent_producer_through_leader_stop(cluster: BrokerThread) -> None:
    """aiokafka's idempotent acks=all producer sends while the partition leader's broker
    stops and starts; the partition then holds each record once, in order."""
    import asyncio

    from aiokafka import AIOKafkaProducer

    create(cluster, "aio", 1)
    leader = cluster.partition_state("aio", 0)[0]

    async def run() -> list[int]:
        producer = AIOKafkaProducer(bootstrap_servers=addresses(cluster), enable_idempotence=True,
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
    got = read_all(cluster, "aio", 1, 600)
    assert got[0] == [f"{i:05d}".encode() for i in range(600)]


def test_randomized_stops_isolations_and_a_group(
        make_broker: Callable[..., BrokerThread]) -> None:
    """Nodes stopped, started, isolated and healed at random (seeded, printed) under an
    idempotent producer and a consumer group: no acknowledged record lost or duplicated,
    the group's committed offsets never go backwards and end at the log ends."""
    seed = int(os.environ.get("KAFKALITE_TEST_SEED", random.randrange(1 << 30)))
    print(f"seed {seed}")
    rng = random.Random(seed)
    broker = make_broker({"group.initial.rebalance.delay.ms": "0",
                          "offsets.topic.replication.factor": "3",
                          "offsets.topic.num.partitions": "3",
                          "replica.lag.time.max.ms": "1000",
                          "broker.session.timeout.ms": "1500"}, nodes=NODES)
    create(broker, "mixed", 3, **{"min.insync.replicas": "2"})
    boot = addresses(broker)
    stop = threading.Event()
    acked: dict[int, list[bytes]] = {p: [] for p in range(3)}
    errors: list[Any] = []
    producing = threading.Thread(target=produce_loop, args=(boot, "mixed", 3, stop, acked,
                                                             errors, 20000))
    seen: dict[int, set[bytes]] = {p: set() for p in range(3)}
    commits: dict[int, list[int]] = {p: [] for p in range(3)}
    consumer_errors: list[BaseException] = []

    def consume() -> None:
        c = Consumer({"bootstrap.servers": boot, "group.id": "mixed-group",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                      "session.timeout.ms": 6000})
        c.subscribe(["mixed"])
        n = 0
        try:
            idle_until = None
            while True:
                m = c.poll(0.2)
                if m is None or m.error():
                    if stop.is_set():
                        idle_until = idle_until or time.monotonic() + 3
                        if time.monotonic() > idle_until:
                            break
                    continue
                idle_until = None
                seen[m.partition()].add(m.value())
                n += 1
                if n % 100 == 0:
                    _commit(c, commits)
            for _ in range(20):
                if _commit(c, commits):
                    break
                time.sleep(0.3)
        except BaseException as e:
            consumer_errors.append(e)
        finally:
            c.close()

    consuming = threading.Thread(target=consume)
    producing.start()
    consuming.start()
    disturbed: tuple[str, int] | None = None
    try:
        ends = time.monotonic() + 10
        for _ in range(12):  # bounded in count and time
            if time.monotonic() >= ends:
                break
            time.sleep(rng.uniform(0.3, 0.9))
            if disturbed is None:
                how, node = rng.choice(["stop", "isolate"]), rng.randint(1, NODES)
                (broker.stop_node if how == "stop" else broker.isolate_node)(node)
                disturbed = (how, node)
            else:
                how, node = disturbed
                (broker.start_node if how == "stop" else broker.heal_node)(node)
                disturbed = None
        if disturbed is not None:
            how, node = disturbed
            (broker.start_node if how == "stop" else broker.heal_node)(node)
        time.sleep(0.5)
    finally:
        stop.set()
        producing.join(90)
        consuming.join(90)
    assert not errors, f"seed {seed}: {errors[:3]}"
    assert not consumer_errors, f"seed {seed}: {consumer_errors[:1]}"
    total = sum(map(len, acked.values()))
    got = read_all(broker, "mixed", 3, total)
    check_exactly_once(got, acked)
    assert sum(map(len, got.values())) == total, f"seed {seed}"
    for p, offsets in commits.items():
        assert offsets == sorted(offsets), f"seed {seed}: partition {p} went back"
        assert offsets and offsets[-1] == len(got[p]), f"seed {seed}: partition {p}"
        assert seen[p] == set(got[p]), f"seed {seed}: partition {p} not consumed"


def _commit(c: Any, commits: dict[int, list[int]]) -> bool:
    """Commit the consumer's positions; on success note each partition's committed
    offset as the coordinator answers it."""
    try:
        c.commit(asynchronous=False)
        done = c.committed([TopicPartition("mixed", p) for p in range(3)], 10)
    except Exception:
        return False
    for tp in done:
        if tp.offset >= 0:
            commits[tp.partition].append(tp.offset)
    return True


def test_consume_transform_produce_survives_the_coordinator_stopping(
        cluster: BrokerThread) -> None:
    """A transactional consume-transform-produce loop carries on while the broker of its
    transaction coordinator stops: the output, read_committed, holds every input record
    transformed exactly once."""
    create(cluster, "ctp-in", 2)
    create(cluster, "ctp-out", 2)
    boot = addresses(cluster)
    source = Producer({"bootstrap.servers": boot, "acks": "all"})
    for i in range(400):
        source.produce("ctp-in", f"{i:04d}".encode(), partition=i % 2)
    assert source.flush(10) == 0
    txn_id = "ctp-1"
    coordinator = cluster.call(lambda: cluster.inner.cluster.coordinator(1, txn_id))
    consumer = Consumer({"bootstrap.servers": boot, "group.id": "ctp-group",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.subscribe(["ctp-in"])
    producer = Producer({"bootstrap.servers": boot, "transactional.id": txn_id})
    producer.init_transactions(30)
    done = 0
    stopped = False
    deadline = time.monotonic() + 90
    try:
        while done < 400 and time.monotonic() < deadline:
            batch = consumer.consume(50, 1)
            batch = [m for m in batch if not m.error()]
            if not batch:
                continue
            producer.begin_transaction()
            for m in batch:
                producer.produce("ctp-out", m.value() + b"!", partition=m.partition())
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()),
                consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(60)
            done += len(batch)
            if done >= 150 and not stopped:
                cluster.stop_node(coordinator)
                stopped = True
    finally:
        consumer.close()
    assert stopped and done == 400
    moved = cluster.call(lambda: cluster.inner.cluster.coordinator(1, txn_id))
    assert moved not in (coordinator, -1)
    reader = Consumer({"bootstrap.servers": boot, "group.id": "ctp-check",
                       "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    reader.assign([TopicPartition("ctp-out", p, 0) for p in range(2)])
    out: list[bytes] = []
    end = time.monotonic() + 20
    while len(out) < 400 and time.monotonic() < end:
        m = reader.poll(0.5)
        if m is not None and not m.error():
            out.append(m.value())
    reader.close()
    assert sorted(out) == [f"{i:04d}!".encode() for i in range(400)]
