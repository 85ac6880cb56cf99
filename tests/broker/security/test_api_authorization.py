"""Authorization on every API, as KafkaApis does it: each request is sent through the
broker's dispatch (``KafkaApis.handle``, the route's check included) as ``User:alice``
with the StandardAuthorizer holding no ACL for her, and must be refused with Kafka's
error, in Kafka's place (top level, per topic, per partition, per group); then the one
ACL Kafka asks for lets it through. Every registered API has a case here, so an API
added without its authorization fails ``test_every_api_has_a_case``."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafkalite.broker.cluster import BoundListener
from kafkalite.broker.compose import build_broker
from kafkalite.broker.config import Config
from kafkalite.broker.security.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermission,
    AclResourceType,
    PatternType,
)
from kafkalite.broker.server import Broker
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.headers import encode_request_header, parse_response_header
from kafkalite.protocol.records import NewRecord, build_batch

ALICE, HOST = "User:alice", "10.0.0.1"
TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, TXN_DENIED = 29, 30, 31, 53
NO_OPS = -2147483648
SECOND = datetime.timedelta(seconds=1)
T, G, C = AclResourceType.TOPIC, AclResourceType.GROUP, AclResourceType.CLUSTER
X = AclResourceType.TRANSACTIONAL_ID
O = AclOperation  # noqa: E741
#: Served before (or without) authorization, as in Kafka.
UNAUTHORIZED_APIS = {18: "ApiVersions", 17: "SaslHandshake", 36: "SaslAuthenticate"}


@dataclass
class Peer:
    principal: str = ALICE
    peer_host: str = HOST
    peer_port: int = 50000
    listener_name: str = "PLAINTEXT"
    connection_id: int = 1
    client_id_raw: bytes | None = None
    client_id: str | None = None
    received_at: float = 0.0


class Api:
    """The broker, dispatch-level calls as alice, and her ACLs."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.peer = Peer()
        self._corr = 0
        store = broker.acls
        assert store is not None
        self.store = store

    def req(self, api: int, version: int, **fields: Any) -> Any:
        return build(codecs.codec(api, version).request_type, **fields)

    def n(self, api: int, version: int, entity_name: str, /, **fields: Any) -> Any:
        """A nested request entity of that API version."""
        return build(nested(codecs.codec(api, version).request_type, entity_name), **fields)

    async def call(self, api: int, version: int, **fields: Any) -> Any:
        c = codecs.codec(api, version)
        self._corr += 1
        frame = encode_request_header(api, version, self._corr, "authz", c.request_flexible) + \
            codecs.encode_request(build(c.request_type, **fields))
        out = self.broker.apis.handle(self.peer, frame)
        if isinstance(out, asyncio.Future):
            out = await asyncio.wait_for(out, 10)
        assert isinstance(out, bytes), out
        body = out[4:]
        _corr, off = parse_response_header(body, c.response_header_flexible)
        return codecs.decode_response(api, version, body, off)

    def allow(self, rtype: AclResourceType, name: str, op: AclOperation,
              pattern: PatternType = PatternType.LITERAL) -> None:
        self.store.add([AclBinding(rtype, name, pattern, ALICE, "*", op, AclPermission.ALLOW)])

    def revoke_all(self) -> None:
        self.store.delete([AclFilter(AclResourceType.ANY, None, PatternType.ANY, None, None,
                                     AclOperation.ANY, AclPermission.ANY)])


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    config = Config.build(environ={}, overrides={
        "log.dirs": str(tmp_path / "data"),
        "group.initial.rebalance.delay.ms": "0",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    })
    broker = build_broker(config)
    # What Metadata and FindCoordinator advertise; nothing listens there.
    broker.cluster.listeners.append(
        BoundListener("PLAINTEXT", "127.0.0.1", 9092, "127.0.0.1", 9092))
    await broker.open()
    broker.create_topic("t", 1)
    try:
        yield Api(broker)
    finally:
        await broker.stop()


Case = Callable[[Api], Awaitable[None]]
CASES: dict[int, Case] = {}


def case(api_key: int) -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        CASES[api_key] = fn
        return fn
    return register


def codes_of(resp: Any, *path: str) -> list[int]:
    """Every error code found by walking ``path`` (lists flattened) from ``resp``."""
    items = [resp]
    for attr in path:
        nxt: list[Any] = []
        for it in items:
            v = getattr(it, attr)
            nxt.extend(v if isinstance(v, tuple) else [v])
        items = nxt
    return [int(x) for x in items]


# --- data --------------------------------------------------------------------------------

@case(0)
async def produce(a: Api) -> None:
    batch = build_batch([NewRecord(None, b"v")])

    def request(topic: str) -> dict[str, Any]:
        part = a.n(0, 9, "PartitionProduceData", index=0, records=batch)
        return dict(transactional_id=None, acks=1, timeout=SECOND, topic_data=(
            a.n(0, 9, "TopicProduceData", name=topic, partition_data=(part,)),))

    path = ("responses", "partition_responses", "error_code")
    assert codes_of(await a.call(0, 9, **request("t")), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.WRITE)
    assert codes_of(await a.call(0, 9, **request("t")), *path) == [0]
    # Auto-creation by Produce needs Create too (on the topic or the cluster).
    a.allow(T, "auto-p", O.WRITE)
    assert codes_of(await a.call(0, 9, **request("auto-p")), *path) == [3]
    assert a.broker.topics.get("auto-p") is None
    a.allow(T, "auto-p", O.CREATE)
    assert codes_of(await a.call(0, 9, **request("auto-p")), *path) == [0]


@case(1)
async def fetch(a: Api) -> None:
    def request(replica: int) -> dict[str, Any]:
        part = a.n(1, 12, "FetchPartition", partition=0, current_leader_epoch=-1,
                   fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
                   partition_max_bytes=1 << 20)
        return dict(cluster_id=None, replica_id=replica, max_wait=datetime.timedelta(0),
                    min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                    session_epoch=-1, topics=(a.n(1, 12, "FetchTopic", topic="t",
                                                  partitions=(part,)),),
                    forgotten_topics_data=(), rack_id="")

    path = ("responses", "partitions", "error_code")
    assert codes_of(await a.call(1, 12, **request(-1)), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.READ)
    assert codes_of(await a.call(1, 12, **request(-1)), *path) == [0]
    # A follower's fetch needs ClusterAction on the cluster, Read is not enough.
    assert codes_of(await a.call(1, 12, **request(1)), *path) == [TOPIC_DENIED]
    a.allow(C, "kafka-cluster", O.CLUSTER_ACTION)
    assert codes_of(await a.call(1, 12, **request(1)), *path) == [0]


@case(2)
async def list_offsets(a: Api) -> None:
    part = a.n(2, 7, "ListOffsetsPartition", partition_index=0, current_leader_epoch=-1,
               timestamp=-1)
    fields = dict(replica_id=-1, isolation_level=0,
                  topics=(a.n(2, 7, "ListOffsetsTopic", name="t", partitions=(part,)),))
    path = ("topics", "partitions", "error_code")
    assert codes_of(await a.call(2, 7, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.DESCRIBE)
    assert codes_of(await a.call(2, 7, **fields), *path) == [0]


@case(21)
async def delete_records(a: Api) -> None:
    part = a.n(21, 2, "DeleteRecordsPartition", partition_index=0, offset=0)
    fields = dict(timeout=SECOND,
                  topics=(a.n(21, 2, "DeleteRecordsTopic", name="t", partitions=(part,)),))
    path = ("topics", "partitions", "error_code")
    assert codes_of(await a.call(21, 2, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.READ)  # Read, Describe: not Delete
    assert codes_of(await a.call(21, 2, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.DELETE)
    assert codes_of(await a.call(21, 2, **fields), *path) == [0]


@case(22)
async def init_producer_id(a: Api) -> None:
    fields = dict(transactional_id=None, transaction_timeout=SECOND, producer_id=-1,
                  producer_epoch=-1)
    assert (await a.call(22, 4, **fields)).error_code == CLUSTER_DENIED
    # KIP-679: Write on any topic (here by prefix) is enough for an idempotent producer.
    a.allow(T, "orders-", O.WRITE, PatternType.PREFIXED)
    assert (await a.call(22, 4, **fields)).error_code == 0
    a.revoke_all()
    a.allow(C, "kafka-cluster", O.IDEMPOTENT_WRITE)
    assert (await a.call(22, 4, **fields)).error_code == 0
    # With a transactional id: Write on it, whatever the cluster ACLs.
    fields["transactional_id"] = "tx"
    assert (await a.call(22, 4, **fields)).error_code == TXN_DENIED
    a.allow(X, "tx", O.DESCRIBE)  # not enough
    assert (await a.call(22, 4, **fields)).error_code == TXN_DENIED
    a.allow(X, "tx", O.WRITE)
    resp = await a.call(22, 4, **fields)
    assert (resp.error_code, resp.producer_epoch) == (0, 0)


# --- transactions --------------------------------------------------------------------------


async def _begun(a: Api, tid: str = "tx") -> tuple[int, int]:
    """A transactional id alice may write, initialized: (producer id, epoch)."""
    a.allow(X, tid, O.WRITE)
    resp = await a.call(22, 4, transactional_id=tid, transaction_timeout=SECOND * 60,
                        producer_id=-1, producer_epoch=-1)
    assert resp.error_code == 0
    a.revoke_all()
    return resp.producer_id, resp.producer_epoch


@case(24)
async def add_partitions_to_txn(a: Api) -> None:
    pid, epoch = await _begun(a)
    fields = dict(v3_and_below_transactional_id="tx", v3_and_below_producer_id=pid,
                  v3_and_below_producer_epoch=epoch, v3_and_below_topics=(
                      a.n(24, 3, "AddPartitionsToTxnTopic", name="t", partitions=(0,)),))
    path = ("results_by_topic_v3_and_below", "results_by_partition", "partition_error_code")
    assert codes_of(await a.call(24, 3, **fields), *path) == [TXN_DENIED]
    a.allow(X, "tx", O.WRITE)
    assert codes_of(await a.call(24, 3, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.WRITE)
    assert codes_of(await a.call(24, 3, **fields), *path) == [0]
    # v4+ comes from brokers: ClusterAction, and no transactional id or topic checks.
    a.revoke_all()
    txn = a.n(24, 5, "AddPartitionsToTxnTransaction", transactional_id="tx", producer_id=pid,
              producer_epoch=epoch, verify_only=True, topics=(
                  a.n(24, 5, "AddPartitionsToTxnTopic", name="t", partitions=(0,)),))
    assert (await a.call(24, 5, transactions=(txn,))).error_code == CLUSTER_DENIED
    a.allow(C, "kafka-cluster", O.CLUSTER_ACTION)
    resp = await a.call(24, 5, transactions=(txn,))
    assert resp.error_code == 0
    assert codes_of(resp, "results_by_transaction", "topic_results",
                    "results_by_partition", "partition_error_code") == [0]


@case(25)
async def add_offsets_to_txn(a: Api) -> None:
    pid, epoch = await _begun(a)
    fields = dict(transactional_id="tx", producer_id=pid, producer_epoch=epoch, group_id="g")
    assert (await a.call(25, 3, **fields)).error_code == TXN_DENIED
    a.allow(X, "tx", O.WRITE)
    await _group_read(a, 25, 3, **fields)
    assert (await a.call(25, 3, **fields)).error_code == 0


@case(26)
async def end_txn(a: Api) -> None:
    pid, epoch = await _begun(a)
    fields = dict(transactional_id="tx", producer_id=pid, producer_epoch=epoch,
                  committed=False)
    assert (await a.call(26, 4, **fields)).error_code == TXN_DENIED
    a.allow(X, "tx", O.DESCRIBE)
    assert (await a.call(26, 4, **fields)).error_code == TXN_DENIED
    a.allow(X, "tx", O.WRITE)
    assert (await a.call(26, 4, **fields)).error_code == 48  # INVALID_TXN_STATE: none open


@case(27)
async def write_txn_markers(a: Api) -> None:
    marker = a.n(27, 1, "WritableTxnMarker", producer_id=7, producer_epoch=0,
                 transaction_result=False, coordinator_epoch=0, topics=(
                     a.n(27, 1, "WritableTxnMarkerTopic", name="t", partition_indexes=(0,)),))
    path = ("markers", "topics", "partitions", "error_code")
    end = a.broker.logs.get("t", 0)
    assert end is not None
    before = end.log_end_offset
    assert codes_of(await a.call(27, 1, markers=(marker,)), *path) == [CLUSTER_DENIED]
    assert end.log_end_offset == before  # nothing written
    a.allow(C, "kafka-cluster", O.CLUSTER_ACTION)
    assert codes_of(await a.call(27, 1, markers=(marker,)), *path) == [0]
    assert end.log_end_offset == before + 1


@case(28)
async def txn_offset_commit(a: Api) -> None:
    pid, epoch = await _begun(a)
    part = a.n(28, 3, "TxnOffsetCommitRequestPartition", partition_index=0,
               committed_offset=1, committed_leader_epoch=-1, committed_metadata="")
    fields = dict(transactional_id="tx", group_id="g", producer_id=pid, producer_epoch=epoch,
                  generation_id=-1, member_id="", group_instance_id=None,
                  topics=(a.n(28, 3, "TxnOffsetCommitRequestTopic", name="t",
                              partitions=(part,)),))
    path = ("topics", "partitions", "error_code")
    assert codes_of(await a.call(28, 3, **fields), *path) == [TXN_DENIED]
    a.allow(X, "tx", O.WRITE)
    assert codes_of(await a.call(28, 3, **fields), *path) == [GROUP_DENIED]
    a.allow(G, "g", O.READ)
    assert codes_of(await a.call(28, 3, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.READ)
    # Authorized; the group's partition is not in the transaction (no AddOffsetsToTxn).
    assert codes_of(await a.call(28, 3, **fields), *path) == [48]


@case(61)
async def describe_producers(a: Api) -> None:
    fields = dict(topics=(a.n(61, 0, "TopicRequest", name="t", partition_indexes=(0,)),))
    path = ("topics", "partitions", "error_code")
    assert codes_of(await a.call(61, 0, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.DESCRIBE)  # Read is what Kafka asks for
    assert codes_of(await a.call(61, 0, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.READ)
    assert codes_of(await a.call(61, 0, **fields), *path) == [0]


@case(65)
async def describe_transactions(a: Api) -> None:
    pid, epoch = await _begun(a)
    a.allow(X, "tx", O.WRITE)
    a.allow(G, "g", O.READ)
    assert (await a.call(25, 3, transactional_id="tx", producer_id=pid, producer_epoch=epoch,
                         group_id="g")).error_code == 0
    a.revoke_all()
    path = ("transaction_states", "error_code")
    assert codes_of(await a.call(65, 0, transactional_ids=("tx",)), *path) == [TXN_DENIED]
    a.allow(X, "tx", O.DESCRIBE)
    resp = await a.call(65, 0, transactional_ids=("tx",))
    assert codes_of(resp, *path) == [0]
    # Ongoing, its partitions shown only where alice may describe the topic.
    assert (resp.transaction_states[0].transaction_state,
            resp.transaction_states[0].topics) == ("Ongoing", ())
    a.allow(T, "__consumer_offsets", O.DESCRIBE)
    resp = await a.call(65, 0, transactional_ids=("tx",))
    assert [t.topic for t in resp.transaction_states[0].topics] == ["__consumer_offsets"]


@case(66)
async def list_transactions(a: Api) -> None:
    await _begun(a, "tx")
    await _begun(a, "other")
    fields = dict(state_filters=(), producer_id_filters=(), duration_filter=-1)
    # Only the transactional ids alice may describe are listed.
    assert (await a.call(66, 1, **fields)).transaction_states == ()
    a.allow(X, "tx", O.DESCRIBE)
    resp = await a.call(66, 1, **fields)
    assert [t.transactional_id for t in resp.transaction_states] == ["tx"]


@case(23)
async def offset_for_leader_epoch(a: Api) -> None:
    part = a.n(23, 4, "OffsetForLeaderPartition", partition=0, current_leader_epoch=-1,
               leader_epoch=0)
    fields = dict(replica_id=-1, topics=(a.n(23, 4, "OffsetForLeaderTopic", topic="t",
                                             partitions=(part,)),))
    path = ("topics", "partitions", "error_code")
    assert codes_of(await a.call(23, 4, **fields), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.DESCRIBE)  # a consumer's check (KIP-320)
    assert codes_of(await a.call(23, 4, **fields), *path) == [0]
    a.revoke_all()
    a.allow(C, "kafka-cluster", O.CLUSTER_ACTION)  # a broker's
    assert codes_of(await a.call(23, 4, **fields), *path) == [0]


# --- metadata, topics and configs --------------------------------------------------------

@case(75)
async def describe_topic_partitions(a: Api) -> None:
    def request(*names: str) -> dict[str, Any]:
        return dict(topics=tuple(a.n(75, 0, "TopicRequest", name=n) for n in names),
                    response_partition_limit=100, cursor=None)

    (t,) = (await a.call(75, 0, **request("t"))).topics
    assert (t.name, t.error_code) == ("t", TOPIC_DENIED)
    assert (await a.call(75, 0, **request())).topics == ()  # all topics: denied ones out
    a.allow(T, "t", O.DESCRIBE)
    (t,) = (await a.call(75, 0, **request("t"))).topics
    assert (t.error_code, t.topic_authorized_operations) == (0, 1 << 8)

@case(3)
async def metadata(a: Api) -> None:
    def named(*names: str, create: bool = False) -> dict[str, Any]:
        return dict(topics=tuple(a.n(3, 12, "MetadataRequestTopic", topic_id=None, name=n)
                                 for n in names),
                    allow_auto_topic_creation=create, include_topic_authorized_operations=True)

    resp = await a.call(3, 12, **named("t"))
    assert [(t.name, t.error_code, t.topic_authorized_operations) for t in resp.topics] == [
        ("t", TOPIC_DENIED, NO_OPS)]
    every = dict(topics=None, allow_auto_topic_creation=False,
                 include_topic_authorized_operations=True)
    assert (await a.call(3, 12, **every)).topics == ()  # a listing leaves denied ones out
    a.allow(T, "t", O.READ)
    (t,) = (await a.call(3, 12, **every)).topics
    # Read implies Describe: both bits, nothing else.
    assert (t.name, t.error_code, t.topic_authorized_operations) == ("t", 0, 1 << 3 | 1 << 8)
    # Auto-creation: Describe lets the name through, Create (topic or cluster) creates it.
    a.allow(T, "auto-m", O.DESCRIBE)
    (t,) = (await a.call(3, 12, **named("auto-m", create=True))).topics
    assert t.error_code == TOPIC_DENIED and a.broker.topics.get("auto-m") is None
    a.allow(C, "kafka-cluster", O.CREATE)
    (t,) = (await a.call(3, 12, **named("auto-m", create=True))).topics
    assert t.error_code == 0 and a.broker.topics.get("auto-m") is not None
    # v8-v10: the cluster's operations, 0 without Describe on the cluster.
    v10 = dict(topics=(), allow_auto_topic_creation=False,
               include_cluster_authorized_operations=True,
               include_topic_authorized_operations=False)
    a.store.add([AclBinding(C, "kafka-cluster", PatternType.LITERAL, ALICE, "*", O.DESCRIBE,
                            AclPermission.DENY)])
    assert (await a.call(3, 10, **v10)).cluster_authorized_operations == 0
    a.revoke_all()
    a.allow(C, "kafka-cluster", O.ALTER)
    assert (await a.call(3, 10, **v10)).cluster_authorized_operations == 1 << 7 | 1 << 8


@case(19)
async def create_topics(a: Api) -> None:
    def request(*names: str) -> dict[str, Any]:
        return dict(timeout=SECOND, validate_only=False, topics=tuple(
            a.n(19, 7, "CreatableTopic", name=n, num_partitions=1, replication_factor=-1,
                assignments=(), configs=()) for n in names))

    (r,) = (await a.call(19, 7, **request("n1"))).topics
    assert r.error_code == TOPIC_DENIED
    dup = (await a.call(19, 7, **request("d", "d"))).topics  # duplicates before authorization
    assert [r.error_code for r in dup] == [42, 42]
    a.allow(T, "n1", O.CREATE)
    (r,) = (await a.call(19, 7, **request("n1"))).topics
    # Created, but its configs only go to a principal with DescribeConfigs on it.
    assert (r.error_code, r.topic_config_error_code, r.num_partitions, r.configs) == \
        (0, TOPIC_DENIED, -1, ())
    a.allow(T, "n2", O.CREATE)
    a.allow(T, "n2", O.DESCRIBE_CONFIGS)
    (r,) = (await a.call(19, 7, **request("n2"))).topics
    assert (r.error_code, r.topic_config_error_code, r.num_partitions) == (0, 0, 1)
    assert r.configs


@case(20)
async def delete_topics(a: Api) -> None:
    def request(name: str | None, tid: uuid.UUID | None = None) -> dict[str, Any]:
        return dict(timeout=SECOND, topics=(
            a.n(20, 6, "DeleteTopicState", name=name, topic_id=tid or uuid.UUID(int=0)),))

    # Authorized before it is looked up: a missing name is not revealed as missing.
    for name in ("t", "missing"):
        (r,) = (await a.call(20, 6, **request(name))).responses
        assert r.error_code == TOPIC_DENIED
    info = a.broker.topics.get("t")
    assert info is not None
    (r,) = (await a.call(20, 6, **request(None, info.topic_id))).responses
    assert r.error_code == TOPIC_DENIED
    a.allow(T, "t", O.DELETE)
    (r,) = (await a.call(20, 6, **request("t"))).responses
    assert r.error_code == 0 and a.broker.topics.get("t") is None


@case(37)
async def create_partitions(a: Api) -> None:
    fields = dict(timeout=SECOND, validate_only=True, topics=(
        a.n(37, 3, "CreatePartitionsTopic", name="t", count=2, assignments=None),))
    assert codes_of(await a.call(37, 3, **fields), "results", "error_code") == [TOPIC_DENIED]
    a.allow(T, "t", O.ALTER)
    assert codes_of(await a.call(37, 3, **fields), "results", "error_code") == [0]


TOPIC_RES, BROKER_RES = 2, 4


@case(32)
async def describe_configs(a: Api) -> None:
    fields = dict(include_synonyms=False, include_documentation=False, resources=(
        a.n(32, 4, "DescribeConfigsResource", resource_type=TOPIC_RES, resource_name="t",
            configuration_keys=None),
        a.n(32, 4, "DescribeConfigsResource", resource_type=BROKER_RES, resource_name="1",
            configuration_keys=None)))
    path = ("results", "error_code")
    assert codes_of(await a.call(32, 4, **fields), *path) == [TOPIC_DENIED, CLUSTER_DENIED]
    a.allow(T, "t", O.ALTER_CONFIGS)  # implies DescribeConfigs
    a.allow(C, "kafka-cluster", O.DESCRIBE_CONFIGS)
    assert codes_of(await a.call(32, 4, **fields), *path) == [0, 0]


async def _alter_configs(a: Api, api: int, version: int) -> None:
    extra = {"config_operation": 0} if api == 44 else {}
    cfg = a.n(api, version, "AlterableConfig", name="retention.ms", value="1000", **extra)
    fields = dict(validate_only=True, resources=(
        a.n(api, version, "AlterConfigsResource", resource_type=TOPIC_RES, resource_name="t",
            configs=(cfg,)),
        a.n(api, version, "AlterConfigsResource", resource_type=BROKER_RES,
            resource_name="1", configs=())))
    path = ("responses", "error_code")
    assert codes_of(await a.call(api, version, **fields), *path) == [TOPIC_DENIED,
                                                                      CLUSTER_DENIED]
    a.allow(T, "t", O.DESCRIBE_CONFIGS)  # not enough to alter
    a.allow(C, "kafka-cluster", O.ALTER_CONFIGS)
    assert codes_of(await a.call(api, version, **fields), *path)[0] == TOPIC_DENIED
    a.allow(T, "t", O.ALTER_CONFIGS)
    assert codes_of(await a.call(api, version, **fields), *path) == [0, 0]


@case(74)
async def list_config_resources(a: Api) -> None:
    await _cluster_op(a, 74, 1, O.DESCRIBE_CONFIGS, resource_types=())


@case(48)
async def describe_client_quotas(a: Api) -> None:
    await _cluster_op(a, 48, 1, O.DESCRIBE_CONFIGS, components=(), strict=False)


@case(49)
async def alter_client_quotas(a: Api) -> None:
    entity = a.n(49, 1, "EntityData", entity_type="client-id", entity_name="app")
    op = a.n(49, 1, "OpData", key="producer_byte_rate", value=1024.0, remove=False)
    fields = dict(validate_only=True, entries=(a.n(49, 1, "EntryData", entity=(entity,),
                                                   ops=(op,)),))
    path = ("entries", "error_code")
    assert codes_of(await a.call(49, 1, **fields), *path) == [CLUSTER_DENIED]
    a.allow(C, "kafka-cluster", O.DESCRIBE_CONFIGS)  # not enough
    assert codes_of(await a.call(49, 1, **fields), *path) == [CLUSTER_DENIED]
    a.allow(C, "kafka-cluster", O.ALTER_CONFIGS)
    assert codes_of(await a.call(49, 1, **fields), *path) == [0]


@case(33)
async def alter_configs(a: Api) -> None:
    await _alter_configs(a, 33, 2)


@case(44)
async def incremental_alter_configs(a: Api) -> None:
    await _alter_configs(a, 44, 1)


# --- cluster -------------------------------------------------------------------------------

@case(60)
async def describe_cluster(a: Api) -> None:
    # Served to anyone, as Kafka; only the authorized operations need Describe.
    resp = await a.call(60, 1, include_cluster_authorized_operations=True, endpoint_type=1)
    assert (resp.error_code, resp.cluster_authorized_operations) == (0, 0)
    assert [b.broker_id for b in resp.brokers] == [1]
    a.allow(C, "kafka-cluster", O.DESCRIBE)
    resp = await a.call(60, 1, include_cluster_authorized_operations=True, endpoint_type=1)
    assert resp.cluster_authorized_operations == 1 << 8


async def _cluster_op(a: Api, api: int, version: int, op: AclOperation,
                      **fields: Any) -> None:
    assert (await a.call(api, version, **fields)).error_code == CLUSTER_DENIED
    a.allow(C, "kafka-cluster", op)
    assert (await a.call(api, version, **fields)).error_code == 0


@case(34)
async def alter_replica_log_dirs(a: Api) -> None:
    log_dir = str(a.broker.data_dir)
    fields = dict(dirs=(a.n(34, 2, "AlterReplicaLogDir", path=log_dir, topics=(
        a.n(34, 2, "AlterReplicaLogDirTopic", name="t", partitions=(0,)),)),))
    path = ("results", "partitions", "error_code")
    assert codes_of(await a.call(34, 2, **fields), *path) == [CLUSTER_DENIED]
    a.allow(C, "kafka-cluster", O.ALTER)
    assert codes_of(await a.call(34, 2, **fields), *path) == [0]


@case(55)
async def describe_quorum(a: Api) -> None:
    part = a.n(55, 2, "PartitionData", partition_index=0)
    await _cluster_op(a, 55, 2, O.DESCRIBE, topics=(
        a.n(55, 2, "TopicData", topic_name="__cluster_metadata", partitions=(part,)),))


@case(57)
async def update_features(a: Api) -> None:
    await _cluster_op(a, 57, 2, O.ALTER, timeout=SECOND, feature_updates=(),
                      validate_only=True)


@case(35)
async def describe_log_dirs(a: Api) -> None:
    await _cluster_op(a, 35, 4, O.DESCRIBE, topics=None)


@case(43)
async def elect_leaders(a: Api) -> None:
    await _cluster_op(a, 43, 2, O.ALTER, election_type=0, topic_partitions=None,
                      timeout=SECOND)


@case(46)
async def list_partition_reassignments(a: Api) -> None:
    await _cluster_op(a, 46, 0, O.DESCRIBE, timeout=SECOND, topics=None)


@case(45)
async def alter_partition_reassignments(a: Api) -> None:
    await _cluster_op(a, 45, 0, O.ALTER, timeout=SECOND, topics=())


# --- groups --------------------------------------------------------------------------------

@case(10)
async def find_coordinator(a: Api) -> None:
    path = ("coordinators", "error_code")
    assert codes_of(await a.call(10, 4, key_type=0, coordinator_keys=("g",)), *path) == \
        [GROUP_DENIED]
    a.allow(G, "g", O.READ)  # Read implies the Describe FindCoordinator asks for
    assert codes_of(await a.call(10, 4, key_type=0, coordinator_keys=("g",)), *path) == [0]
    assert codes_of(await a.call(10, 4, key_type=1, coordinator_keys=("tx",)), *path) == \
        [TXN_DENIED]
    a.allow(AclResourceType.TRANSACTIONAL_ID, "tx", O.DESCRIBE)
    assert codes_of(await a.call(10, 4, key_type=1, coordinator_keys=("tx",)), *path) == [0]


async def _group_read(a: Api, api: int, version: int, **fields: Any) -> None:
    """Read on the group, checked before the coordinator sees the request."""
    assert (await a.call(api, version, **fields)).error_code == GROUP_DENIED
    a.allow(G, "g", O.DESCRIBE)  # not enough
    assert (await a.call(api, version, **fields)).error_code == GROUP_DENIED
    a.allow(G, "g", O.READ)
    assert (await a.call(api, version, **fields)).error_code != GROUP_DENIED


@case(11)
async def join_group(a: Api) -> None:
    proto = a.n(11, 9, "JoinGroupRequestProtocol", name="range", metadata=b"")
    await _group_read(a, 11, 9, group_id="g", session_timeout=10 * SECOND,
                      rebalance_timeout=10 * SECOND, member_id="", group_instance_id=None,
                      protocol_type="consumer", protocols=(proto,), reason=None)


@case(14)
async def sync_group(a: Api) -> None:
    await _group_read(a, 14, 5, group_id="g", generation_id=1, member_id="m",
                      group_instance_id=None, protocol_type="consumer", protocol_name="range",
                      assignments=())


@case(12)
async def heartbeat(a: Api) -> None:
    await _group_read(a, 12, 4, group_id="g", generation_id=1, member_id="m",
                      group_instance_id=None)


@case(13)
async def leave_group(a: Api) -> None:
    member = a.n(13, 5, "MemberIdentity", member_id="m", group_instance_id=None, reason=None)
    await _group_read(a, 13, 5, group_id="g", members=(member,))


@case(68)
async def consumer_group_heartbeat(a: Api) -> None:
    """Read on the group; then Describe on every subscribed topic (KafkaApis, 4.0)."""
    fields = dict(group_id="g", member_id="m", member_epoch=0, instance_id=None,
                  rack_id=None, rebalance_timeout=10 * SECOND, subscribed_topic_names=("t",),
                  subscribed_topic_regex=None, server_assignor=None, topic_partitions=())
    await _group_read(a, 68, 1, **fields)
    assert (await a.call(68, 1, **fields)).error_code == TOPIC_DENIED
    a.allow(T, "t", O.DESCRIBE)
    r = await a.call(68, 1, **fields)
    assert (r.error_code, r.member_epoch) == (0, 1)


@case(69)
async def consumer_group_describe(a: Api) -> None:
    fields = dict(group_ids=("g",), include_authorized_operations=True)
    (g,) = (await a.call(69, 1, **fields)).groups
    assert (g.error_code, g.authorized_operations) == (GROUP_DENIED, NO_OPS)
    a.allow(G, "g", O.DESCRIBE)
    (g,) = (await a.call(69, 1, **fields)).groups
    assert g.error_code == 69  # GROUP_ID_NOT_FOUND: allowed, and there is no such group


# --- offsets and group administration ---------------------------------------------------

async def _commit(a: Api, group: str) -> Any:
    part = a.n(8, 9, "OffsetCommitRequestPartition", partition_index=0, committed_offset=0,
               committed_leader_epoch=-1, committed_metadata=None)
    return await a.call(8, 9, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                        group_instance_id=None, topics=(
                            a.n(8, 9, "OffsetCommitRequestTopic", name="t",
                                partitions=(part,)),))


@case(8)
async def offset_commit(a: Api) -> None:
    path = ("topics", "partitions", "error_code")
    assert codes_of(await _commit(a, "g"), *path) == [GROUP_DENIED]
    a.allow(G, "g", O.READ)
    assert codes_of(await _commit(a, "g"), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.READ)
    assert codes_of(await _commit(a, "g"), *path) == [0]


@case(9)
async def offset_fetch(a: Api) -> None:
    def request(topics: Any) -> dict[str, Any]:
        return dict(require_stable=False, groups=(a.n(
            9, 9, "OffsetFetchRequestGroup", group_id="g", member_id=None, member_epoch=-1,
            topics=topics),))

    named = (a.n(9, 9, "OffsetFetchRequestTopics", name="t", partition_indexes=(0,)),)
    (g,) = (await a.call(9, 9, **request(named))).groups
    assert (g.error_code, g.topics) == (GROUP_DENIED, ())
    a.allow(G, "g", O.READ)
    a.allow(T, "t", O.READ)
    assert codes_of(await _commit(a, "g"), "topics", "partitions", "error_code") == [0]
    a.revoke_all()
    a.allow(G, "g", O.DESCRIBE)
    (g,) = (await a.call(9, 9, **request(named))).groups
    assert codes_of(g, "topics", "partitions", "error_code") == [TOPIC_DENIED]
    (g,) = (await a.call(9, 9, **request(None))).groups
    assert (g.error_code, g.topics) == (0, ())  # all topics: denied ones left out
    a.allow(T, "t", O.DESCRIBE)
    (g,) = (await a.call(9, 9, **request(None))).groups
    assert [(t.name, [p.committed_offset for p in t.partitions]) for t in g.topics] == \
        [("t", [0])]


@case(47)
async def offset_delete(a: Api) -> None:
    fields = dict(group_id="g", topics=(a.n(
        47, 0, "OffsetDeleteRequestTopic", name="t",
        partitions=(a.n(47, 0, "OffsetDeleteRequestPartition", partition_index=0),)),))
    assert (await a.call(47, 0, **fields)).error_code == GROUP_DENIED
    a.allow(G, "g", O.READ)  # OffsetDelete asks for Delete on the group
    assert (await a.call(47, 0, **fields)).error_code == GROUP_DENIED
    a.allow(G, "g", O.DELETE)
    resp = await a.call(47, 0, **fields)
    assert resp.error_code == 69  # GROUP_ID_NOT_FOUND: authorization passed
    a.allow(T, "t", O.READ)
    assert codes_of(await _commit(a, "g"), "topics", "partitions", "error_code") == [0]
    a.revoke_all()
    a.allow(G, "g", O.DELETE)
    resp = await a.call(47, 0, **fields)
    assert resp.error_code == 0
    assert codes_of(resp, "topics", "partitions", "error_code") == [TOPIC_DENIED]


@case(15)
async def describe_groups(a: Api) -> None:
    fields = dict(groups=("g",), include_authorized_operations=True)
    (g,) = (await a.call(15, 5, **fields)).groups
    assert (g.error_code, g.authorized_operations) == (GROUP_DENIED, NO_OPS)
    a.allow(G, "g", O.DESCRIBE)
    (g,) = (await a.call(15, 5, **fields)).groups
    assert (g.error_code, g.authorized_operations) == (0, 1 << 8)


@case(16)
async def list_groups(a: Api) -> None:
    a.allow(G, "g", O.READ)
    a.allow(T, "t", O.READ)
    assert codes_of(await _commit(a, "g"), "topics", "partitions", "error_code") == [0]
    a.revoke_all()
    resp = await a.call(16, 5, states_filter=(), types_filter=())
    assert (resp.error_code, resp.groups) == (0, ())  # filtered, not refused
    a.allow(G, "g", O.DESCRIBE)
    assert [g.group_id for g in (await a.call(16, 5, states_filter=(), types_filter=())).groups] \
        == ["g"]
    a.revoke_all()
    a.allow(C, "kafka-cluster", O.DESCRIBE)  # Describe on the cluster lists every group
    assert [g.group_id for g in (await a.call(16, 5, states_filter=(), types_filter=())).groups] \
        == ["g"]


@case(42)
async def delete_groups(a: Api) -> None:
    path = ("results", "error_code")
    assert codes_of(await a.call(42, 2, groups_names=("g",)), *path) == [GROUP_DENIED]
    a.allow(G, "g", O.DELETE)
    assert codes_of(await a.call(42, 2, groups_names=("g",)), *path) == [69]


# --- security ----------------------------------------------------------------------------

def _acl_fields(a: Api, api: int) -> dict[str, Any]:
    filt = dict(resource_type_filter=2, resource_name_filter="t", pattern_type_filter=3,
                principal_filter=None, host_filter=None, operation=1, permission_type=1)
    if api == 30:
        return dict(creations=(a.n(30, 3, "AclCreation", resource_type=2, resource_name="x",
                                   resource_pattern_type=3, principal="User:bob", host="*",
                                   operation=3, permission_type=3),))
    if api == 31:
        return dict(filters=(a.n(31, 3, "DeleteAclsFilter", **filt),))
    return filt


@case(30)
async def create_acls(a: Api) -> None:
    path = ("results", "error_code")
    assert codes_of(await a.call(30, 3, **_acl_fields(a, 30)), *path) == [CLUSTER_DENIED]
    a.allow(C, "kafka-cluster", O.ALTER)
    assert codes_of(await a.call(30, 3, **_acl_fields(a, 30)), *path) == [0]


@case(29)
async def describe_acls(a: Api) -> None:
    await _cluster_op(a, 29, 3, O.DESCRIBE, **_acl_fields(a, 29))


@case(31)
async def delete_acls(a: Api) -> None:
    path = ("filter_results", "error_code")
    assert codes_of(await a.call(31, 3, **_acl_fields(a, 31)), *path) == [CLUSTER_DENIED]
    a.allow(C, "kafka-cluster", O.ALTER)
    assert codes_of(await a.call(31, 3, **_acl_fields(a, 31)), *path) == [0]


@case(50)
async def describe_user_scram_credentials(a: Api) -> None:
    await _cluster_op(a, 50, 0, O.DESCRIBE, users=None)


@case(51)
async def alter_user_scram_credentials(a: Api) -> None:
    up = a.n(51, 0, "ScramCredentialUpsertion", name="carol", mechanism=1, iterations=4096,
             salt=b"salt", salted_password=b"x" * 32)
    path = ("results", "error_code")
    assert codes_of(await a.call(51, 0, deletions=(), upsertions=(up,)), *path) == \
        [CLUSTER_DENIED]
    a.allow(C, "kafka-cluster", O.ALTER)
    assert codes_of(await a.call(51, 0, deletions=(), upsertions=(up,)), *path) == [0]


# --- the tests -------------------------------------------------------------------------------

def test_every_api_has_a_case(tmp_path: Path) -> None:
    config = Config.build(environ={}, overrides={"log.dirs": str(tmp_path)})
    registered = {key for key, _lo, _hi in build_broker(config).apis.supported()}
    missing = sorted(codecs.API_NAMES.get(k, str(k))
                     for k in registered - set(UNAUTHORIZED_APIS) - set(CASES))
    assert not missing, f"no authorization case for {missing}: add one to CASES here"
    assert set(CASES) <= registered


@pytest.mark.parametrize("api_key", sorted(CASES), ids=lambda k: codecs.API_NAMES.get(k, k))
async def test_api_authorization(api: Api, api_key: int) -> None:
    await CASES[api_key](api)


async def test_unauthorized_apis_are_served(api: Api) -> None:
    resp = await api.call(18, 3, client_software_name="x", client_software_version="1")
    assert resp.error_code == 0
    # On a listener without SASL, Kafka answers both SASL APIs ILLEGAL_SASL_STATE.
    assert (await api.call(17, 1, mechanism="PLAIN")).error_code == 34
    assert (await api.call(36, 2, auth_bytes=b"")).error_code == 34
