"""The transaction coordinator over TCP: open transactions aborted at their timeout (a
manual-clock broker, and a short real one), and bad input answered with Kafka's error
codes, changing nothing: EndTxn for an unknown transactional id, AddPartitionsToTxn with
a stale epoch, TxnOffsetCommit from a member of an old generation, WriteTxnMarkers from a
client."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as TP

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.errors import ErrorCode as E
from kafkalite.protocol.names import TRANSACTION_STATE_TOPIC
from kafkalite.protocol.records import ATTR_TRANSACTIONAL, NewRecord, build_batch

FIND, JOIN, SYNC, OFFSET_FETCH, PRODUCE = 10, 11, 14, 9, 0
INIT, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, MARKERS, TXN_COMMIT = 22, 24, 25, 26, 27, 28
CREATE_ACLS, DESCRIBE_TXNS, LIST_TXNS = 30, 65, 66
SMALL = {"transaction.state.log.num.partitions": "2"}


class Txn:
    """One transactional id's requests, by hand."""

    def __init__(self, conn: RawConnection, tid: str) -> None:
        self.conn = conn
        self.tid = tid
        self.pid = self.epoch = -1

    def init(self, timeout_ms: int = 60_000) -> None:
        r = self.conn.call(request(INIT, 4, transactional_id=self.tid,
                                   transaction_timeout=timedelta(milliseconds=timeout_ms),
                                   producer_id=-1, producer_epoch=-1))
        assert r.error_code == E.none, r
        self.pid, self.epoch = r.producer_id, r.producer_epoch

    def add(self, topic: str, *parts: int, version: int = 3, epoch: int | None = None
            ) -> list[int]:
        t = request_class(ADD_PARTITIONS, version, "AddPartitionsToTxnTopic")
        r = self.conn.call(request(
            ADD_PARTITIONS, version, v3_and_below_transactional_id=self.tid,
            v3_and_below_producer_id=self.pid,
            v3_and_below_producer_epoch=self.epoch if epoch is None else epoch,
            v3_and_below_topics=(t(name=topic, partitions=parts),)))
        return [int(p.partition_error_code) for x in r.results_by_topic_v3_and_below
                for p in x.results_by_partition]

    def add_offsets(self, group: str) -> int:
        return int(self.conn.call(request(
            ADD_OFFSETS, 3, transactional_id=self.tid, producer_id=self.pid,
            producer_epoch=self.epoch, group_id=group)).error_code)

    def produce(self, topic: str, *values: bytes, seq: int = 0) -> int:
        batch = build_batch([NewRecord(None, v) for v in values], producer_id=self.pid,
                            producer_epoch=self.epoch, base_sequence=seq,
                            attributes=ATTR_TRANSACTIONAL)
        part = request_class(PRODUCE, 9, "PartitionProduceData")
        topic_t = request_class(PRODUCE, 9, "TopicProduceData")
        r = self.conn.call(request(PRODUCE, 9, transactional_id=self.tid, acks=-1,
                                   timeout=timedelta(seconds=5), topic_data=(
                                       topic_t(name=topic, partition_data=(
                                           part(index=0, records=batch),)),)))
        return int(r.responses[0].partition_responses[0].error_code)

    def end(self, commit: bool, tid: str | None = None) -> int:
        return int(self.conn.call(request(
            END_TXN, 3, transactional_id=tid or self.tid, producer_id=self.pid,
            producer_epoch=self.epoch, committed=commit)).error_code)

    def describe(self) -> Any:
        return self.conn.call(request(DESCRIBE_TXNS, 0, transactional_ids=(self.tid,))
                              ).transaction_states[0]


def txn_state_end_offsets(b: BrokerThread) -> list[int]:
    def read() -> list[int]:
        assert b.broker is not None
        return [lg.log_end_offset for lg in b.broker.logs.partitions(TRANSACTION_STATE_TOPIC)]
    return b.call(read)


def log_ends(b: BrokerThread, topic: str) -> tuple[int, int]:
    def read() -> tuple[int, int]:
        assert b.broker is not None
        plog = b.broker.logs.get(topic, 0)
        assert plog is not None
        return plog.log_end_offset, plog.last_stable_offset
    return b.call(read)


def read_committed(bootstrap: str, topic: str, expect: int, seconds: float = 15) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "rc",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.assign([TP(topic, 0, OFFSET_BEGINNING)])
    got: list[bytes] = []
    deadline = time.monotonic() + seconds
    try:
        while len(got) < expect and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    return got


# --- timeouts -------------------------------------------------------------------------------


def _open_transaction(bootstrap: str, tid: str, topic: str, timeout_ms: int) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                  "transaction.timeout.ms": timeout_ms, "linger.ms": 0})
    p.init_transactions(20)
    p.begin_transaction()
    p.produce(topic, b"left-open")
    assert p.flush(10) == 0
    return p


def test_open_transaction_is_aborted_when_the_manual_clock_passes_its_timeout(
        make_broker: Callable[..., BrokerThread]) -> None:
    b = make_broker(SMALL, manual_clock=True)
    p = _open_transaction(b.bootstrap, "slow-app", "slow", 30_000)
    plain = Producer({"bootstrap.servers": b.bootstrap})
    plain.produce("slow", b"after")
    assert plain.flush(10) == 0
    conn = RawConnection(b.bootstrap)
    try:
        t = Txn(conn, "slow-app")
        assert t.describe().transaction_state == "Ongoing"
        assert log_ends(b, "slow") == (2, 0)  # the open transaction holds the LSO
        b.advance(30_000)
        assert t.describe().transaction_state == "Ongoing"
        b.advance(1)
        # Aborted by the coordinator under a bumped epoch: the ABORT marker moves the LSO.
        state = t.describe()
        assert (state.transaction_state, state.producer_epoch) == ("CompleteAbort", 2)
        assert log_ends(b, "slow") == (3, 3)
        assert read_committed(b.bootstrap, "slow", 1) == [b"after"]
        # The producer finds itself fenced, as with Kafka.
        with pytest.raises(KafkaException) as raised:
            p.commit_transaction(20)
        assert raised.value.args[0].code() == KafkaError._FENCED
    finally:
        conn.close()


def test_open_transaction_is_aborted_after_a_short_real_timeout(
        make_broker: Callable[..., BrokerThread]) -> None:
    b = make_broker(SMALL)
    _open_transaction(b.bootstrap, "short-app", "short", 1000)
    conn = RawConnection(b.bootstrap)
    try:
        t = Txn(conn, "short-app")
        deadline = time.monotonic() + 10
        while t.describe().transaction_state != "CompleteAbort":
            assert time.monotonic() < deadline, t.describe()
            time.sleep(0.1)
        assert log_ends(b, "short") == (2, 2)  # data and ABORT marker; nothing undecided
    finally:
        conn.close()


# --- bad input ------------------------------------------------------------------------------


@pytest.fixture
def conn(make_broker: Callable[..., BrokerThread]
         ) -> Iterator[tuple[BrokerThread, RawConnection]]:
    b = make_broker({**SMALL, "group.initial.rebalance.delay.ms": "0"})
    c = RawConnection(b.bootstrap)
    c.call(request(FIND, 4, key_type=1, coordinator_keys=("x",)))
    yield b, c
    c.close()


def test_end_txn_for_an_unknown_transactional_id(
        conn: tuple[BrokerThread, RawConnection]) -> None:
    b, c = conn
    before = txn_state_end_offsets(b)
    t = Txn(c, "nobody")
    t.pid, t.epoch = 5, 0
    assert t.end(True) == E.invalid_producer_id_mapping
    assert t.end(False) == E.invalid_producer_id_mapping
    assert txn_state_end_offsets(b) == before
    assert c.call(request(LIST_TXNS, 1, state_filters=(), producer_id_filters=(),
                          duration_filter=-1)).transaction_states == ()


def test_add_partitions_with_a_stale_epoch(conn: tuple[BrokerThread, RawConnection]) -> None:
    b, c = conn
    b.call(lambda: b.broker.create_topic("data", 1))  # type: ignore[union-attr]
    t = Txn(c, "stale")
    t.init()
    t.init()  # a second InitProducerId bumps the epoch: 0 is stale now
    assert t.epoch == 1
    before = txn_state_end_offsets(b)
    assert t.add("data", 0, epoch=0) == [E.producer_fenced]
    assert t.add("data", 0, epoch=0, version=1) == [E.invalid_producer_epoch]
    assert txn_state_end_offsets(b) == before

    def described() -> tuple[str, int, set[tuple[str, int]]]:
        assert b.broker is not None
        meta = b.broker.transactions.transaction("stale")
        assert meta is not None
        return meta.state.label, meta.producer_epoch, meta.partitions

    # (DescribeTransactions answers an Empty transaction's start time as -1, which kio,
    # the test's decoder, refuses to read.)
    assert b.call(described) == ("Empty", 1, set())


def test_txn_offset_commit_from_an_old_generation(
        conn: tuple[BrokerThread, RawConnection]) -> None:
    b, c = conn
    group = "gen-group"
    c.call(request(FIND, 4, key_type=0, coordinator_keys=(group,)))
    proto = request_class(JOIN, 9, "JoinGroupRequestProtocol")
    assign = request_class(SYNC, 5, "SyncGroupRequestAssignment")

    def join_and_sync(member: str, metadata: bytes) -> tuple[str, int]:
        for _ in range(3):
            r = c.call(request(JOIN, 9, group_id=group, session_timeout=timedelta(seconds=30),
                               rebalance_timeout=timedelta(seconds=30), member_id=member,
                               group_instance_id=None, protocol_type="consumer", reason=None,
                               protocols=(proto(name="range", metadata=metadata),)))
            if r.error_code == E.member_id_required:
                member = r.member_id
                continue
            assert r.error_code == E.none, r
            s = c.call(request(SYNC, 5, group_id=group, generation_id=r.generation_id,
                               member_id=member, group_instance_id=None,
                               protocol_type="consumer", protocol_name="range",
                               assignments=(assign(member_id=member, assignment=b""),)))
            assert s.error_code == E.none, s
            return member, int(r.generation_id)
        raise AssertionError("no member id")

    member, gen = join_and_sync("", b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
    # The member rejoins with a new subscription: the group moves to the next generation.
    member, new_gen = join_and_sync(member, b"\x00\x00\x00\x00\x00\x01\x00\x01t\x00\x00")
    assert new_gen == gen + 1
    t = Txn(c, "gen-app")
    t.init()
    assert t.add_offsets(group) == E.none
    part = request_class(TXN_COMMIT, 3, "TxnOffsetCommitRequestPartition")
    topic = request_class(TXN_COMMIT, 3, "TxnOffsetCommitRequestTopic")
    b.call(lambda: b.broker.create_topic("data", 1))  # type: ignore[union-attr]

    def commit(generation: int) -> int:
        r = c.call(request(TXN_COMMIT, 3, transactional_id="gen-app", group_id=group,
                           producer_id=t.pid, producer_epoch=t.epoch, generation_id=generation,
                           member_id=member, group_instance_id=None, topics=(topic(
                               name="data", partitions=(part(
                                   partition_index=0, committed_offset=9,
                                   committed_leader_epoch=-1, committed_metadata=""),)),)))
        return int(r.topics[0].partitions[0].error_code)

    fetch_topic = request_class(OFFSET_FETCH, 7, "OffsetFetchRequestTopic")

    def stable_fetch() -> tuple[int, int]:
        r = c.call(request(OFFSET_FETCH, 7, group_id=group, require_stable=True,
                           topics=(fetch_topic(name="data", partition_indexes=(0,)),)))
        p = r.topics[0].partitions[0]
        return int(p.error_code), int(p.committed_offset)

    assert commit(gen) == E.illegal_generation
    assert stable_fetch() == (E.none, -1)  # nothing pending, nothing committed
    assert commit(new_gen) == E.none
    assert stable_fetch() == (E.unstable_offset_commit, -1)
    assert t.end(True) == E.none
    assert stable_fetch() == (E.none, 9)


def _markers_request(pid: int, epoch: int, topic: str) -> Any:
    marker = request_class(MARKERS, 1, "WritableTxnMarker")
    mt = request_class(MARKERS, 1, "WritableTxnMarkerTopic")
    return request(MARKERS, 1, markers=(marker(
        producer_id=pid, producer_epoch=epoch, transaction_result=True, coordinator_epoch=0,
        topics=(mt(name=topic, partition_indexes=(0,)),)),))


def _marker_codes(resp: Any) -> list[int]:
    return [int(p.error_code) for m in resp.markers for t in m.topics for p in t.partitions]


def test_write_txn_markers_from_a_client(make_broker: Callable[..., BrokerThread]) -> None:
    """A client without ClusterAction asking for a COMMIT marker is refused with Kafka's
    CLUSTER_AUTHORIZATION_FAILED and the transaction stays open; without an authorizer
    Kafka carries the request out, but a marker of a stale epoch is refused there too."""
    b = make_broker({**SMALL, "allow.everyone.if.no.acl.found": "true",
                     "authorizer.class.name":
                     "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    c = RawConnection(b.bootstrap)
    try:
        # An ACL on the cluster for another principal: from now on only it has cluster rights.
        creation = request_class(CREATE_ACLS, 3, "AclCreation")
        r = c.call(request(CREATE_ACLS, 3, creations=(creation(
            resource_type=4, resource_name="kafka-cluster", resource_pattern_type=3,
            principal="User:broker", host="*", operation=9, permission_type=3),)))
        assert r.results[0].error_code == E.none
        b.call(lambda: b.broker.create_topic("m", 1))  # type: ignore[union-attr]
        t = Txn(c, "marked")
        t.init()
        assert t.add("m", 0) == [E.none]
        assert t.produce("m", b"undecided") == E.none
        assert log_ends(b, "m") == (1, 0)
        resp = c.call(_markers_request(t.pid, t.epoch, "m"))
        assert _marker_codes(resp) == [E.cluster_authorization_failed]
        assert log_ends(b, "m") == (1, 0)  # no marker written: still undecided
        assert t.describe().transaction_state == "Ongoing"
        assert read_committed(b.bootstrap, "m", 1, seconds=1) == []
    finally:
        c.close()
    # No authorizer: a marker of an epoch older than the partition's producer is refused.
    open_broker = make_broker(SMALL, name="open")
    c = RawConnection(open_broker.bootstrap)
    try:
        open_broker.call(lambda: open_broker.broker.create_topic("m", 1))  # type: ignore[union-attr]
        t = Txn(c, "marked")
        t.init()
        t.init()  # epoch 1
        assert t.add("m", 0) == [E.none]
        assert t.produce("m", b"undecided") == E.none
        resp = c.call(_markers_request(t.pid, 0, "m"))
        assert _marker_codes(resp) == [E.invalid_producer_epoch]
        assert log_ends(open_broker, "m") == (1, 0)
        assert t.describe().transaction_state == "Ongoing"
    finally:
        c.close()
