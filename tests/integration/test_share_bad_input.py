"""Bad acknowledgements and stale share sessions over TCP (raw ShareFetch and
ShareAcknowledge requests): Kafka's error codes for the one partition or request at fault,
while the connection, the member's other partitions and the other members carry on."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode as E

from .share_helpers import create_topic, produce, set_group_configs

HEARTBEAT, FETCH, ACK = 76, 78, 79
ACCEPT, RENEW = 1, 4
Acks = dict[int, Sequence[tuple[int, int, tuple[int, ...]]]]


class Member:
    """A share group member speaking ShareFetch and ShareAcknowledge itself."""

    def __init__(self, broker: BrokerThread, member: str, topic_id: uuid.UUID) -> None:
        self.conn = RawConnection(broker.bootstrap, member)
        self.member = member
        self.topic_id = topic_id
        self.epoch = 0
        hb = self.conn.call(request(HEARTBEAT, 1, group_id="g", member_id=member,
                                    member_epoch=0, rack_id=None,
                                    subscribed_topic_names=("t",)))
        assert hb.error_code == E.none

    def fetch(self, acks: Acks | None = None, partitions: Sequence[int] = (0, 1),
              epoch: int | None = None, version: int = 2) -> Any:
        batch_t = request_class(FETCH, version, "AcknowledgementBatch")
        part_t = request_class(FETCH, version, "FetchPartition")
        topic_t = request_class(FETCH, version, "FetchTopic")
        acks = acks or {}
        parts = tuple(part_t(partition_index=p,
                             acknowledgement_batches=tuple(
                                 batch_t(first_offset=f, last_offset=last, acknowledge_types=t)
                                 for f, last, t in acks.get(p, ())))
                      for p in sorted(set(partitions) | set(acks)))
        resp = self.conn.call(request(
            FETCH, version, group_id="g", member_id=self.member,
            share_session_epoch=self.epoch if epoch is None else epoch,
            max_wait=timedelta(0), min_bytes=1, max_bytes=1 << 20, max_records=500,
            batch_size=500, share_acquire_mode=0, is_renew_ack=False,
            topics=(topic_t(topic_id=self.topic_id, partitions=parts),),
            forgotten_topics_data=()))
        if resp.error_code == E.none and epoch is None:
            self.epoch += 1
        return resp

    def acknowledge(self, acks: Acks, epoch: int | None = None, version: int = 2) -> Any:
        batch_t = request_class(ACK, version, "AcknowledgementBatch")
        part_t = request_class(ACK, version, "AcknowledgePartition")
        topic_t = request_class(ACK, version, "AcknowledgeTopic")
        resp = self.conn.call(request(
            ACK, version, group_id="g", member_id=self.member,
            share_session_epoch=self.epoch if epoch is None else epoch, is_renew_ack=False,
            topics=(topic_t(topic_id=self.topic_id, partitions=tuple(
                part_t(partition_index=p, acknowledgement_batches=tuple(
                    batch_t(first_offset=f, last_offset=last, acknowledge_types=t)
                    for f, last, t in batches))
                for p, batches in sorted(acks.items()))),)))
        if resp.error_code == E.none and epoch is None:
            self.epoch += 1
        return resp


def acquired(resp: Any) -> dict[int, list[tuple[int, int, int]]]:
    return {p.partition_index: [(a.first_offset, a.last_offset, a.delivery_count)
                                for a in p.acquired_records]
            for t in resp.responses for p in t.partitions if p.acquired_records}


def ack_errors(resp: Any, field: str = "acknowledge_error_code") -> dict[int, int]:
    return {p.partition_index: int(getattr(p, field)) for t in resp.responses
            for p in t.partitions}


def test_bad_acknowledgements_fail_their_partition_only(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory()
    create_topic(broker.bootstrap, "t", 2)
    set_group_configs(broker.bootstrap, "g", {"share.auto.offset.reset": "earliest"})
    produce(broker.bootstrap, "t", (f"r{i}" for i in range(8)), partitions=2)
    info = broker.call(lambda: broker.inner.storage.catalog.get("t"))
    assert info is not None
    a = Member(broker, "member-a", info.topic_id)
    b = Member(broker, "member-b", info.topic_id)
    try:
        # The fetch that makes the share-partitions answers once the first is ready with
        # records (as Kafka's); the next one reads the other.
        assert acquired(a.fetch()) == {0: [(0, 3, 1)]}
        assert acquired(a.fetch()) == {1: [(0, 3, 1)]}
        # Past the end of what was acquired; the other partition's acknowledgement holds.
        resp = a.acknowledge({0: [(2, 9, (ACCEPT,))], 1: [(0, 0, (ACCEPT,))]})
        assert resp.error_code == E.none
        assert ack_errors(resp, "error_code") == {0: E.invalid_request, 1: E.none}
        # Twice: offset 0 of partition 1 is no longer held.
        resp = a.acknowledge({1: [(1, 1, (ACCEPT,)), (0, 0, (ACCEPT,))]})
        assert ack_errors(resp, "error_code") == {1: E.invalid_request}  # out of order
        resp = a.acknowledge({1: [(1, 1, (ACCEPT,))]})
        assert ack_errors(resp, "error_code") == {1: E.none}
        resp = a.acknowledge({1: [(1, 1, (ACCEPT,))]})
        assert ack_errors(resp, "error_code") == {1: E.invalid_record_state}
        # An acknowledgement type out of range, and RENEW before v2.
        resp = a.fetch({0: [(0, 0, (9,))]}, partitions=())
        assert ack_errors(resp) == {0: E.invalid_request}
        resp = a.fetch({0: [(0, 0, (RENEW,))]}, partitions=(), version=1)
        assert ack_errors(resp) == {0: E.invalid_request}
        # Another member's records, and records nobody acquired.
        assert acquired(b.fetch()) == {}
        resp = b.acknowledge({0: [(0, 1, (ACCEPT,))]})
        assert ack_errors(resp, "error_code") == {0: E.invalid_record_state}
        # member-a carries on, on the same connection: its records are still its own.
        resp = a.acknowledge({0: [(0, 3, (ACCEPT,))], 1: [(2, 3, (ACCEPT,))]})
        assert ack_errors(resp, "error_code") == {0: E.none, 1: E.none}
        produce(broker.bootstrap, "t", ["late"])
        assert acquired(b.fetch()) == {0: [(4, 4, 1)]}
    finally:
        a.conn.close()
        b.conn.close()


def test_stale_and_missing_share_sessions_get_kafkas_errors(
        kafkalite_factory: Callable[..., BrokerThread]) -> None:
    broker = kafkalite_factory(overrides={"group.share.max.share.sessions": "1"})
    create_topic(broker.bootstrap, "t", 2)
    set_group_configs(broker.bootstrap, "g", {"share.auto.offset.reset": "earliest"})
    produce(broker.bootstrap, "t", ["x"])
    info = broker.call(lambda: broker.inner.storage.catalog.get("t"))
    assert info is not None
    a = Member(broker, "member-a", info.topic_id)
    b = Member(broker, "member-b", info.topic_id)
    try:
        assert a.fetch().error_code == E.none
        assert a.fetch(epoch=7).error_code == E.invalid_share_session_epoch
        assert a.acknowledge({}, epoch=0).error_code == E.invalid_share_session_epoch
        assert b.fetch(epoch=3).error_code == E.share_session_not_found
        assert b.acknowledge({}, epoch=3).error_code == E.share_session_not_found
        # Acknowledgements in the request opening a session.
        assert b.fetch({0: [(0, 0, (ACCEPT,))]}, epoch=0).error_code == E.invalid_request
        # One session is all the broker takes.
        assert b.fetch().error_code == E.share_session_limit_reached
        # member-a's session is intact and in step.
        assert a.fetch().error_code == E.none
        assert a.acknowledge({}, epoch=-1).error_code == E.none
        assert b.fetch().error_code == E.none
    finally:
        a.conn.close()
        b.conn.close()
