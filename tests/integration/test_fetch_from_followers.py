"""Fetch from followers (KIP-392) on three nodes in racks r0, r1 and r2: a confluent-kafka
consumer with ``client.rack`` reads its rack's follower when the rack-aware selector is
configured (each node's bytes sent, from ``/metrics``, show who served it) and the leader
otherwise; raw Fetch requests over TCP show the leader's preferred read replica, a
follower serving up to the high watermark it knows, and replicas out of the ISR left out."""

from __future__ import annotations

import datetime
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.build import build
from kafkalite.protocol.errors import ErrorCode

FETCH = 1
NODES = 3
RACKS = "r0,r1,r2"
RACK_AWARE = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
RECORDS = 300


def rack(node: int) -> str:
    return f"r{node - 1}"


def start(make_broker: Callable[..., BrokerThread], selector: str | None,
          settings: dict[str, str] | None = None, **extra: Any) -> BrokerThread:
    overrides = {"broker.rack": RACKS, "default.replication.factor": "3", **(settings or {})}
    if selector is not None:
        overrides["replica.selector.class"] = selector
    return make_broker(overrides, nodes=NODES, admin=True, **extra)


def create(broker: BrokerThread, topic: str, rf: int = 3) -> None:
    admin = AdminClient({"bootstrap.servers": ",".join(broker.bootstraps)})
    admin.create_topics([NewTopic(topic, 1, rf)])[topic].result(10)


def produce(broker: BrokerThread, topic: str, n: int, acks: str = "all") -> None:
    p = Producer({"bootstrap.servers": ",".join(broker.bootstraps), "acks": acks,
                  "linger.ms": 5})
    for i in range(n):
        p.produce(topic, f"{i:06d}".encode(), partition=0)
    assert p.flush(30) == 0


class Reader:
    """A confluent-kafka consumer of partition 0 from offset 0 with ``client.rack``."""

    def __init__(self, broker: BrokerThread, topic: str, client_rack: str,
                 bootstrap: str | None = None) -> None:
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap or ",".join(broker.bootstraps),
            "group.id": f"ff-{topic}", "client.rack": client_rack,
            "enable.auto.commit": False, "fetch.wait.max.ms": 500})
        self.consumer.assign([TopicPartition(topic, 0, 0)])
        self.got: list[bytes] = []

    def until(self, n: int, timeout: float = 30) -> list[bytes]:
        deadline = time.monotonic() + timeout
        while len(self.got) < n and time.monotonic() < deadline:
            m = self.consumer.poll(0.2)
            if m is not None and not m.error():
                self.got.append(m.value())
        return self.got

    def close(self) -> None:
        self.consumer.close()


def consume(broker: BrokerThread, topic: str, client_rack: str, n: int) -> list[bytes]:
    reader = Reader(broker, topic, client_rack)
    try:
        return reader.until(n)
    finally:
        reader.close()


def values(start: int, stop: int) -> list[bytes]:
    return [f"{i:06d}".encode() for i in range(start, stop)]


def bytes_out(broker: BrokerThread, topic: str) -> dict[int, float]:
    """Bytes of ``topic`` each node sent in Fetch responses (kafkalite_node_bytesout)."""
    with urllib.request.urlopen(f"{broker.admin_url}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out = dict.fromkeys(range(1, NODES + 1), 0.0)
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "kafkalite_node_bytesout_total" and s.labels["topic"] == topic:
                out[int(s.labels["node"])] = s.value
    return out


def test_consumer_reads_from_the_follower_in_its_rack(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = start(make_broker, RACK_AWARE)
    create(broker, "near")
    leader, replicas, isr = broker.partition_state("near", 0)
    assert len(isr) == 3
    follower = next(n for n in replicas if n != leader)
    produce(broker, "near", RECORDS)
    reader = Reader(broker, "near", rack(follower))
    try:
        assert reader.until(RECORDS) == values(0, RECORDS)
        # Caught up, it waits on the follower, which the next appends wake.
        assert bytes_out(broker, "near")[follower] > 0
        p = Producer({"bootstrap.servers": ",".join(broker.bootstraps), "acks": "all"})
        for i in range(RECORDS, RECORDS + 20):
            p.produce("near", f"{i:06d}".encode(), partition=0)
            p.flush(10)
        assert reader.until(RECORDS + 20) == values(0, RECORDS + 20)
    finally:
        reader.close()
    sent = bytes_out(broker, "near")
    assert sent[follower] > 0, sent
    # The leader answered with the preferred read replica only, never with records.
    assert sent[leader] == 0, sent
    # A consumer in the leader's rack reads from the leader.
    assert len(consume(broker, "near", rack(leader), RECORDS)) == RECORDS
    assert bytes_out(broker, "near")[leader] > 0


def test_without_a_selector_the_consumer_reads_from_the_leader(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = start(make_broker, None)
    create(broker, "far")
    leader, replicas, _isr = broker.partition_state("far", 0)
    follower = next(n for n in replicas if n != leader)
    produce(broker, "far", RECORDS)
    assert len(consume(broker, "far", rack(follower), RECORDS)) == RECORDS
    sent = bytes_out(broker, "far")
    assert sent[leader] > 0 and sent[follower] == 0, sent


def _fetch(address: str, topic_id: Any, offset: int, version: int = 12,
           client_rack: str = "") -> Any:
    part_t = request_class(FETCH, version, "FetchPartition")
    topic_t = request_class(FETCH, version, "FetchTopic")
    fields: dict[str, Any] = {"topic_id": topic_id} if version >= 13 else {"topic": "lag"}
    req = request(FETCH, version, replica_id=-1, max_wait=datetime.timedelta(0),
                  min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                  session_epoch=-1,
                  topics=(build(topic_t, **fields, partitions=(build(
                      part_t, partition=0, current_leader_epoch=-1, fetch_offset=offset,
                      last_fetched_epoch=-1, log_start_offset=-1,
                      partition_max_bytes=1 << 20),)),),
                  forgotten_topics_data=(), rack_id=client_rack)
    conn = RawConnection(address)
    try:
        resp = conn.call(req)
    finally:
        conn.close()
    return resp.responses[0].partitions[0]


def _topic_id(broker: BrokerThread, topic: str) -> Any:
    md = RawConnection(broker.bootstrap)
    try:
        resp = md.call(request(3, 12, topics=None, allow_auto_topic_creation=False,
                               include_topic_authorized_operations=False))
    finally:
        md.close()
    return next(t.topic_id for t in resp.topics if t.name == topic)


def test_preferred_replica_and_follower_reads_over_the_wire(
        make_broker: Callable[..., BrokerThread]) -> None:
    """The leader's preferred_read_replica (only in-sync followers), a follower reading up
    to the high watermark it knows, and what a follower refuses."""
    broker = start(make_broker, RACK_AWARE, {"replica.lag.time.max.ms": "5000",
                                             "broker.session.timeout.ms": "60000"},
                   manual_clock=True)
    create(broker, "lag")
    tid = _topic_id(broker, "lag")
    leader, replicas, _isr = broker.partition_state("lag", 0)
    follower = next(n for n in replicas if n != leader)
    lead_at, follow_at = broker.bootstraps[leader - 1], broker.bootstraps[follower - 1]
    produce(broker, "lag", 10)

    # The leader sends a consumer of the follower's rack there, with no records.
    part = _fetch(lead_at, tid, 0, 16, rack(follower))
    assert (part.error_code, part.preferred_read_replica, part.high_watermark) == (
        ErrorCode.none, follower, 10)
    assert not part.records
    # Its own rack, no rack, or a rack no replica is in: read here.
    for client_rack in (rack(leader), "", "elsewhere"):
        part = _fetch(lead_at, tid, 0, 16, client_rack)
        assert part.preferred_read_replica == -1 and part.records, client_rack
    # Fetch v10 carries no client metadata: the leader reads, the follower refuses.
    assert _fetch(lead_at, tid, 0, 10, "").records
    assert _fetch(follow_at, tid, 0, 10).error_code == ErrorCode.not_leader_or_follower

    # The follower serves a consumer up to its high watermark; past its end, out of range.
    part = _fetch(follow_at, tid, 0, 16, rack(follower))
    assert (part.error_code, part.high_watermark, part.preferred_read_replica) == (
        ErrorCode.none, 10, -1)
    assert part.records
    at_end = _fetch(follow_at, tid, 10, 16)
    assert at_end.error_code == ErrorCode.none and not at_end.records
    assert _fetch(follow_at, tid, 11, 16).error_code == ErrorCode.offset_out_of_range

    # Cut off, the follower falls behind: still in the ISR it is not chosen for offsets
    # it does not hold; out of the ISR it is not chosen at all, and serves what it knew.
    broker.isolate_node(follower)
    produce(broker, "lag", 5, acks="1")
    assert _fetch(lead_at, tid, 12, 16, rack(follower)).preferred_read_replica == -1
    broker.advance(8000)
    assert follower not in broker.partition_state("lag", 0)[2]
    part = _fetch(lead_at, tid, 0, 16, rack(follower))
    assert (part.preferred_read_replica, part.high_watermark) == (-1, 15)
    assert part.records
    part = _fetch(follow_at, tid, 0, 16, rack(follower))
    assert (part.error_code, part.high_watermark) == (ErrorCode.none, 10)
    broker.heal_node(follower)
    assert follower in broker.partition_state("lag", 0)[2]
    part = _fetch(lead_at, tid, 0, 16, rack(follower))
    assert part.preferred_read_replica == follower
    assert _fetch(follow_at, tid, 0, 16).high_watermark == 15


def test_node_without_a_replica_refuses_a_consumer(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = start(make_broker, RACK_AWARE)
    create(broker, "two", rf=2)
    leader, replicas, _isr = broker.partition_state("two", 0)
    (outsider,) = set(range(1, NODES + 1)) - set(replicas)
    tid = _topic_id(broker, "two")
    part = _fetch(broker.bootstraps[outsider - 1], tid, 0, 16, rack(outsider))
    assert part.error_code == ErrorCode.not_leader_or_follower
    assert part.current_leader.leader_id == leader


def test_java_consumer_reads_from_the_follower_in_its_rack(
        make_broker: Callable[..., BrokerThread]) -> None:
    """The Java consumer (fetch sessions, several fetches) with client.rack."""
    from .java_support import run_java

    broker = start(make_broker, RACK_AWARE)
    create(broker, "java-near")
    leader, replicas, _isr = broker.partition_state("java-near", 0)
    follower = next(n for n in replicas if n != leader)
    produce(broker, "java-near", RECORDS)
    lines = run_java("RackConsumer", broker.bootstrap, "java-near", rack(follower),
                     str(RECORDS), timeout=120)
    assert (lines["read"], lines["in.order"], lines["last"]) == (
        str(RECORDS), "true", f"{RECORDS - 1:06d}")
    sent = bytes_out(broker, "java-near")
    assert sent[follower] > 0 and sent[leader] == 0, sent


def test_consumer_goes_back_to_the_leader_when_its_follower_stops(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = start(make_broker, RACK_AWARE)
    create(broker, "gone")
    leader, replicas, _isr = broker.partition_state("gone", 0)
    follower = next(n for n in replicas if n != leader)
    produce(broker, "gone", RECORDS)
    reader = Reader(broker, "gone", rack(follower), broker.bootstraps[leader - 1])
    try:
        reader.until(RECORDS)
        assert bytes_out(broker, "gone")[follower] > 0
        broker.stop_node(follower)
        assert broker.partition_state("gone", 0)[0] == leader
        produce(broker, "gone", RECORDS)
        got = reader.until(2 * RECORDS)
    finally:
        reader.close()
    assert got == values(0, RECORDS) * 2
    sent = bytes_out(broker, "gone")
    # The rest came from the leader, or from the third replica (in another rack: never).
    assert sent[leader] > 0, sent
