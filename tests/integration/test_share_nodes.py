"""ShareFetch and ShareAcknowledge with several nodes (``kafkalite.nodes``), over TCP: a
node serves the share-partitions it leads; for another's it answers
NOT_LEADER_OR_FOLLOWER with the current leader, its epoch and its endpoint, acquiring and
acknowledging nothing there, as Kafka's brokers answer."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import closing
from datetime import timedelta
from typing import Any

from confluent_kafka.admin import AdminClient

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode as E

from .share_helpers import create_topic, produce, set_group_configs

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


def _fetch(conn: RawConnection, member: str, topic_id: uuid.UUID, p: int) -> Any:
    part_t = request_class(FETCH, 2, "FetchPartition")
    topic_t = request_class(FETCH, 2, "FetchTopic")
    return conn.call(request(
        FETCH, 2, group_id="g", member_id=member, share_session_epoch=0,
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
