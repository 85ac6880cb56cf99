"""Handlers called with decoded requests, through the route table, with no socket: the
real catalogue, logs and coordinator runtime on a temporary data directory."""

from __future__ import annotations

import datetime
import uuid

from kio.schema.create_topics.v7 import request as ct
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9 import request as jg
from kio.schema.list_offsets.v7 import request as lo
from kio.schema.metadata.v12 import request as md
from kio.schema.produce.v9 import request as pr
from kio.schema.sync_group.v5 import request as sg

from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.protocol.records import NewRecord, build_batch

from .harness import Handlers

PRODUCE, LIST_OFFSETS, METADATA = 0, 2, 3
FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, SYNC_GROUP = 10, 11, 12, 14
CREATE_TOPICS = 19
LATEST = -1
SECOND = datetime.timedelta(seconds=1)


def create_topics(*names: str, partitions: int = 3) -> ct.CreateTopicsRequest:
    return ct.CreateTopicsRequest(topics=tuple(  # type: ignore[arg-type]
        ct.CreatableTopic(name=n, num_partitions=partitions, replication_factor=-1,  # type: ignore[arg-type]
                          assignments=(), configs=())
        for n in names))


def metadata(*names: str) -> md.MetadataRequest:
    return md.MetadataRequest(  # type: ignore[arg-type]
        topics=tuple(md.MetadataRequestTopic(topic_id=None, name=n) for n in names),  # type: ignore[arg-type]
        allow_auto_topic_creation=False, include_topic_authorized_operations=False)


async def test_created_topics_are_in_metadata(handlers: Handlers) -> None:
    created = await handlers.call(CREATE_TOPICS, 7, create_topics("orders", "audit"))
    assert [(t.name, t.error_code, t.num_partitions) for t in created.topics] == [
        ("orders", ErrorCode.none, 3), ("audit", ErrorCode.none, 3)]
    again = await handlers.call(CREATE_TOPICS, 7, create_topics("orders"))
    assert again.topics[0].error_code is ErrorCode.topic_already_exists

    resp = await handlers.call(METADATA, 12, metadata("orders", "missing"))
    node = handlers.broker.node_id
    assert resp.cluster_id == handlers.broker.cluster_id
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [(node, "127.0.0.1", 9092)]
    orders, missing = resp.topics
    assert orders.error_code is ErrorCode.none
    assert orders.topic_id == created.topics[0].topic_id != uuid.UUID(int=0)
    assert [(p.partition_index, p.leader_id) for p in orders.partitions] == [
        (0, node), (1, node), (2, node)]
    assert missing.error_code is ErrorCode.unknown_topic_or_partition


def produce(topic: str, partition: int, *values: bytes) -> pr.ProduceRequest:
    batch = build_batch([NewRecord(None, v) for v in values], timestamp=1_700_000_000_000)
    return pr.ProduceRequest(  # type: ignore[call-arg]
        transactional_id=None, acks=-1, timeout=SECOND,  # type: ignore[arg-type]
        topic_data=(pr.TopicProduceData(name=topic, partition_data=(  # type: ignore[arg-type]
            pr.PartitionProduceData(index=partition, records=batch),)),))  # type: ignore[arg-type]


def latest(topic: str, *partitions: int) -> lo.ListOffsetsRequest:
    return lo.ListOffsetsRequest(  # type: ignore[arg-type]
        replica_id=-1, isolation_level=0,  # type: ignore[arg-type]
        topics=(lo.ListOffsetsTopic(name=topic, partitions=tuple(  # type: ignore[arg-type]
            lo.ListOffsetsPartition(partition_index=p, timestamp=LATEST)  # type: ignore[arg-type]
            for p in partitions)),))


async def test_produced_batches_move_the_latest_offset(handlers: Handlers) -> None:
    await handlers.call(CREATE_TOPICS, 7, create_topics("events", partitions=2))
    first = await handlers.call(PRODUCE, 9, produce("events", 1, b"a", b"b", b"c"))
    second = await handlers.call(PRODUCE, 9, produce("events", 1, b"d"))
    assert [(p.index, p.error_code, p.base_offset) for t in first.responses
            for p in t.partition_responses] == [(1, ErrorCode.none, 0)]
    assert second.responses[0].partition_responses[0].base_offset == 3

    resp = await handlers.call(LIST_OFFSETS, 7, latest("events", 0, 1, 2))
    assert [(p.partition_index, p.error_code, p.offset) for p in resp.topics[0].partitions] == [
        (0, ErrorCode.none, 0), (1, ErrorCode.none, 4),
        (2, ErrorCode.unknown_topic_or_partition, -1)]
    assert handlers.broker.logs.get("events", 1).log_end_offset == 4  # type: ignore[union-attr]


async def test_a_group_forms_and_heartbeats(handlers: Handlers) -> None:
    found = await handlers.call(FIND_COORDINATOR, 4, FindCoordinatorRequest(
        key_type=0, coordinator_keys=("g",)))  # type: ignore[arg-type]
    assert [(c.key, c.error_code, c.node_id, c.port) for c in found.coordinators] == [
        ("g", ErrorCode.none, handlers.broker.node_id, 9092)]
    # As Kafka, the first FindCoordinator for a group creates __consumer_offsets.
    assert handlers.broker.topics.get(OFFSETS_TOPIC) is not None

    def join(member_id: str) -> jg.JoinGroupRequest:
        return jg.JoinGroupRequest(  # type: ignore[arg-type]
            group_id="g", session_timeout=10 * SECOND, rebalance_timeout=10 * SECOND,  # type: ignore[arg-type]
            member_id=member_id, protocol_type="consumer",
            protocols=(jg.JoinGroupRequestProtocol(name="range", metadata=b"m"),))  # type: ignore[arg-type]

    # v4 and up: an unknown member first gets its id with MEMBER_ID_REQUIRED.
    first = await handlers.call(JOIN_GROUP, 9, join(""))
    assert first.error_code is ErrorCode.member_id_required
    member = first.member_id
    assert member.startswith("test-")
    joined = await handlers.call(JOIN_GROUP, 9, join(member))
    assert (joined.error_code, joined.generation_id, joined.leader, joined.protocol_name) == (
        ErrorCode.none, 1, member, "range")
    assert [(m.member_id, m.metadata) for m in joined.members] == [(member, b"m")]

    synced = await handlers.call(SYNC_GROUP, 5, sg.SyncGroupRequest(  # type: ignore[arg-type]
        group_id="g", generation_id=1, member_id=member, protocol_type="consumer",  # type: ignore[arg-type]
        protocol_name="range",
        assignments=(sg.SyncGroupRequestAssignment(member_id=member, assignment=b"a"),)))
    assert (synced.error_code, synced.assignment) == (ErrorCode.none, b"a")

    beat = await handlers.call(HEARTBEAT, 4, HeartbeatRequest(
        group_id="g", generation_id=1, member_id=member))  # type: ignore[arg-type]
    assert beat.error_code is ErrorCode.none
    stale = await handlers.call(HEARTBEAT, 4, HeartbeatRequest(
        group_id="g", generation_id=0, member_id=member))  # type: ignore[arg-type]
    assert stale.error_code is ErrorCode.illegal_generation
