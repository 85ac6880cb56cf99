"""ShareFetch and ShareAcknowledge with several nodes (``kafkalite.nodes``), over TCP: a
node serves the share-partitions it leads; for another's it answers
NOT_LEADER_OR_FOLLOWER with the current leader, its epoch and its endpoint, acquiring and
acknowledging nothing there, as Kafka's brokers answer."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from contextlib import closing
from datetime import timedelta
from typing import Any

from confluent_kafka.admin import AdminClient

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode as E

from .share_helpers import (
    create_topic,
    poll_until,
    produce,
    set_group_configs,
    share_consumer,
    values,
)

HEARTBEAT, FETCH, ACK = 76, 78, 79
ACCEPT = 1
NODES = 2


def _member(address: str, coordinator: str, member: str) -> RawConnection:
    """A member joined through the group's coordinator, then a connection to ``address``
    for its share requests."""
    with closing(RawConnection(coordinator, member)) as hb_conn:
        hb = hb_conn.call(request(HEARTBEAT, 1, group_id="g", member_id=member,
                                  member_epoch=0, rack_id=None,
                                  subscribed_topic_names=("t",)))
    assert hb.error_code == E.none
    return RawConnection(address, member)


def _fetch(conn: RawConnection, member: str, topic_id: uuid.UUID, p: int,
           epoch: int = 0) -> Any:
    part_t = request_class(FETCH, 2, "FetchPartition")
    topic_t = request_class(FETCH, 2, "FetchTopic")
    return conn.call(request(
        FETCH, 2, group_id="g", member_id=member, share_session_epoch=epoch,
        max_wait=timedelta(0), min_bytes=1, max_bytes=1 << 20, max_records=500,
        batch_size=500, share_acquire_mode=0, is_renew_ack=False,
        topics=(topic_t(topic_id=topic_id, partitions=(
            part_t(partition_index=p, acknowledgement_batches=()),)),),
        forgotten_topics_data=()))


def _acknowledge(conn: RawConnection, member: str, topic_id: uuid.UUID, p: int) -> Any:
    batch_t = request_class(ACK, 2, "AcknowledgementBatch")
    part_t = request_class(ACK, 2, "AcknowledgePartition")
    topic_t = request_class(ACK, 2, "AcknowledgeTopic")
    return conn.call(request(
        ACK, 2, group_id="g", member_id=member, share_session_epoch=1, is_renew_ack=False,
        topics=(topic_t(topic_id=topic_id, partitions=(part_t(
            partition_index=p, acknowledgement_batches=(
                batch_t(first_offset=0, last_offset=0, acknowledge_types=(ACCEPT,)),)),)),)))


def _partition(resp: Any) -> Any:
    (topic,) = resp.responses
    (part,) = topic.partitions
    return part


def test_share_fetch_and_acknowledge_only_on_the_leader(
        make_broker: Callable[..., BrokerThread]) -> None:
    cluster = make_broker({"broker.rack": "r1,r2"}, nodes=NODES)
    create_topic(cluster.bootstrap, "t", NODES)
    set_group_configs(cluster.bootstrap, "g", {"share.auto.offset.reset": "earliest"})
    produce(cluster.bootstrap, "t", (f"r{i}" for i in range(4)), partitions=NODES)
    md = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics("t", timeout=10)
    leaders = {p: m.leader for p, m in md.topics["t"].partitions.items()}
    assert sorted(leaders.values()) == [1, 2]
    info = cluster.call(lambda: cluster.inner.storage.catalog.get("t"))
    assert info is not None
    tid = info.topic_id
    node = cluster.call(lambda: cluster.inner.cluster.coordinator(0, "g"))
    coordinator = cluster.bootstraps[node - 1]
    # Share groups are the group coordinator's: another node refuses their heartbeat.
    with closing(RawConnection(cluster.bootstraps[node % NODES], "x")) as elsewhere:
        refused = elsewhere.call(request(HEARTBEAT, 1, group_id="g", member_id="x",
                                         member_epoch=0, rack_id=None,
                                         subscribed_topic_names=("t",)))
    assert refused.error_code == E.not_coordinator
    for p, leader in leaders.items():
        other = leader % NODES + 1
        away = _member(cluster.bootstraps[other - 1], coordinator, f"away-{p}")
        home = _member(cluster.bootstraps[leader - 1], coordinator, f"home-{p}")
        try:
            refused = _fetch(away, f"away-{p}", tid, p)
            assert refused.error_code == E.none
            part = _partition(refused)
            assert part.error_code == E.not_leader_or_follower, (p, leader)
            assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (
                leader, 0)
            assert not part.acquired_records and not part.records
            (endpoint,) = refused.node_endpoints
            assert (endpoint.node_id, f"{endpoint.host}:{endpoint.port}", endpoint.rack) == (
                leader, cluster.bootstraps[leader - 1], f"r{leader}")
            # The leader still has every record to give.
            got = _partition(_fetch(home, f"home-{p}", tid, p))
            assert got.error_code == E.none
            assert [(a.first_offset, a.last_offset) for a in got.acquired_records] == [(0, 1)]

            not_here = _acknowledge(away, f"away-{p}", tid, p)
            assert not_here.error_code == E.none
            part = _partition(not_here)
            assert part.error_code == E.not_leader_or_follower
            assert part.current_leader.leader_id == leader
            assert [e.node_id for e in not_here.node_endpoints] == [leader]
            assert _partition(_acknowledge(home, f"home-{p}", tid, p)).error_code == E.none
        finally:
            away.close()
            home.close()


def test_a_member_holds_a_share_session_on_each_node(
        make_broker: Callable[..., BrokerThread]) -> None:
    """Each node keeps its own share sessions, as each Kafka broker does: one member's
    sessions on two nodes go on side by side, each with its own epochs, and closing the
    one on a node releases only the records that node leads."""
    cluster = make_broker({}, nodes=NODES)
    create_topic(cluster.bootstrap, "t", NODES)
    set_group_configs(cluster.bootstrap, "g", {"share.auto.offset.reset": "earliest"})
    produce(cluster.bootstrap, "t", (f"r{i}" for i in range(4)), partitions=NODES)
    md = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics("t", timeout=10)
    leaders = {p: m.leader for p, m in md.topics["t"].partitions.items()}
    info = cluster.call(lambda: cluster.inner.storage.catalog.get("t"))
    assert info is not None and sorted(leaders.values()) == [1, 2]
    node = cluster.call(lambda: cluster.inner.cluster.coordinator(0, "g"))
    conns = {p: _member(cluster.bootstraps[leader - 1], cluster.bootstraps[node - 1], "m")
             for p, leader in leaders.items()}
    try:
        for p, conn in conns.items():
            opened = _partition(_fetch(conn, "m", info.topic_id, p))
            assert opened.error_code == E.none and opened.acquired_records, p
        for p, conn in conns.items():
            # Epoch 1 on both nodes: neither session replaced the other.
            again = _fetch(conn, "m", info.topic_id, p, epoch=1)
            assert again.error_code == E.none, (p, again.error_code)
        first, second = sorted(conns)
        conns[first].close()
        # The first node's session ended with its connection: another member gets its
        # records again there (delivery count 2); the second node's stay with "m".
        other = {p: _member(cluster.bootstraps[leaders[p] - 1],
                            cluster.bootstraps[node - 1], "m2") for p in (first, second)}
        conns.update({-1: other[first], -2: other[second]})
        deadline, got, epoch = time.monotonic() + 10, None, 0
        while time.monotonic() < deadline:
            got = _partition(_fetch(other[first], "m2", info.topic_id, first, epoch=epoch))
            epoch += 1
            if got.acquired_records:
                break
            time.sleep(0.05)
        assert got is not None and [(a.first_offset, a.last_offset, a.delivery_count)
                                    for a in got.acquired_records] == [(0, 1, 2)]
        held = _partition(_fetch(other[second], "m2", info.topic_id, second))
        assert held.error_code == E.none and not held.acquired_records
    finally:
        for conn in conns.values():
            conn.close()


def test_share_consumer_reads_partitions_led_by_several_nodes(
        make_broker: Callable[..., BrokerThread]) -> None:
    """confluent-kafka's ShareConsumer fetches from every leader, one share session on
    each node, and receives each record once."""
    cluster = make_broker({}, nodes=NODES)
    create_topic(cluster.bootstrap, "spread", 4)
    set_group_configs(cluster.bootstrap, "sg", {"share.auto.offset.reset": "earliest"})
    sent = [f"v{i}" for i in range(200)]
    produce(cluster.bootstrap, "spread", sent, partitions=4)
    md = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics("spread",
                                                                         timeout=10)
    assert {m.leader for m in md.topics["spread"].partitions.values()} == {1, 2}
    consumer = share_consumer(cluster.bootstrap, "sg", "spread")
    try:
        (got,) = poll_until([consumer], lambda got: len(got[0]) >= len(sent), timeout=30)
        # A few more polls: nothing comes twice.
        (more,) = poll_until([consumer], lambda _got: False, timeout=1.5)
    finally:
        consumer.close()
    assert sorted(values(got + more)) == sorted(sent)
