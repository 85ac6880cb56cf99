"""Leader epochs through the handlers: OffsetForLeaderEpoch answers from the partition's
epoch cache, and Metadata, ListOffsets and Fetch report and check the same epoch."""

from __future__ import annotations

import datetime
from typing import Any

from kafkalite.client.kafka import request_class
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.records import NewRecord, build_batch, decode_batch
from kafkalite.storage.log import PartitionLog

from .harness import Handlers

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
CREATE_TOPICS, OFFSET_FOR_LEADER_EPOCH = 19, 23
SECOND = datetime.timedelta(seconds=1)


async def create(handlers: Handlers, name: str, partitions: int = 1) -> None:
    topic_t = request_class(CREATE_TOPICS, 7, "CreatableTopic")
    resp = await handlers.call(CREATE_TOPICS, 7, topics=(topic_t(
        name=name, num_partitions=partitions, replication_factor=-1, assignments=(),
        configs=()),), timeout=SECOND, validate_only=False)
    assert resp.topics[0].error_code is ErrorCode.none


async def produce(handlers: Handlers, topic: str, n: int) -> None:
    data_t = request_class(PRODUCE, 9, "TopicProduceData")
    part_t = request_class(PRODUCE, 9, "PartitionProduceData")
    batch = build_batch([NewRecord(None, b"x") for _ in range(n)])
    resp = await handlers.call(PRODUCE, 9, transactional_id=None, acks=-1, timeout=SECOND,
                               topic_data=(data_t(name=topic, partition_data=(
                                   part_t(index=0, records=batch),)),))
    assert resp.responses[0].partition_responses[0].error_code is ErrorCode.none


def plog(handlers: Handlers, topic: str) -> PartitionLog:
    found = handlers.broker.logs.get(topic, 0)
    assert found is not None
    return found


async def end_offsets(handlers: Handlers, topic: str, *asks: tuple[int, int],
                      version: int = 4) -> list[tuple[ErrorCode, int, int]]:
    """OffsetForLeaderEpoch for partition 0: (current leader epoch, leader epoch) pairs."""
    topic_t = request_class(OFFSET_FOR_LEADER_EPOCH, version, "OffsetForLeaderTopic")
    part_t = request_class(OFFSET_FOR_LEADER_EPOCH, version, "OffsetForLeaderPartition")
    out = []
    for current, epoch in asks:
        resp = await handlers.call(OFFSET_FOR_LEADER_EPOCH, version, replica_id=-1,
                                   topics=(topic_t(topic=topic, partitions=(part_t(
                                       partition=0, current_leader_epoch=current,
                                       leader_epoch=epoch),)),))
        p = resp.topics[0].partitions[0]
        out.append((p.error_code, p.leader_epoch, p.end_offset))
    return out


async def test_offset_for_leader_epoch_answers_from_the_epoch_cache(handlers: Handlers) -> None:
    await create(handlers, "ep")
    await produce(handlers, "ep", 5)
    # The current epoch (0, where a partition starts) ends at the log end.
    assert await end_offsets(handlers, "ep", (0, 0), (-1, 0)) == [
        (ErrorCode.none, 0, 5), (ErrorCode.none, 0, 5)]
    # A leadership change at offset 5, then three more records in epoch 1.
    plog(handlers, "ep").become_leader(1)
    await produce(handlers, "ep", 3)
    assert await end_offsets(handlers, "ep", (1, 0), (1, 1), (1, 2), (-1, -1)) == [
        (ErrorCode.none, 0, 5),  # epoch 0 ended where epoch 1 began
        (ErrorCode.none, 1, 8),
        (ErrorCode.none, -1, -1),  # an epoch newer than any known
        (ErrorCode.none, -1, -1),  # no epoch asked
    ]
    # The client's idea of the current epoch is checked first.
    assert await end_offsets(handlers, "ep", (0, 0), (2, 0)) == [
        (ErrorCode.fenced_leader_epoch, -1, -1), (ErrorCode.unknown_leader_epoch, -1, -1)]
    for version in (2, 3):
        assert await end_offsets(handlers, "ep", (1, 0), version=version) == [
            (ErrorCode.none, 0, 5)]
    assert await end_offsets(handlers, "missing", (0, 0)) == [
        (ErrorCode.unknown_topic_or_partition, -1, -1)]


async def test_offset_for_leader_epoch_authorization(handlers: Handlers) -> None:
    await create(handlers, "secret")

    class DescribeNothing:
        def authorize(self, principal: str, action: Any, host: str = "") -> bool:
            return False

    handlers.broker.apis.access.authorizer = DescribeNothing()
    assert await end_offsets(handlers, "secret", (0, 0)) == [
        (ErrorCode.topic_authorization_failed, -1, -1)]

    class ClusterActionOnly:
        def authorize(self, principal: str, action: Any, host: str = "") -> bool:
            return bool(action.operation.value == "ClusterAction")

    handlers.broker.apis.access.authorizer = ClusterActionOnly()
    assert await end_offsets(handlers, "secret", (0, 0)) == [(ErrorCode.none, 0, 0)]


async def metadata_epochs(handlers: Handlers, topic: str) -> list[int]:
    topic_t = request_class(METADATA, 12, "MetadataRequestTopic")
    resp = await handlers.call(METADATA, 12, topics=(topic_t(topic_id=None, name=topic),),
                               allow_auto_topic_creation=False,
                               include_topic_authorized_operations=False)
    return [p.leader_epoch for p in resp.topics[0].partitions]


async def list_offset(handlers: Handlers, topic: str, timestamp: int, current: int = -1
                      ) -> tuple[ErrorCode, int, int]:
    topic_t = request_class(LIST_OFFSETS, 9, "ListOffsetsTopic")
    part_t = request_class(LIST_OFFSETS, 9, "ListOffsetsPartition")
    resp = await handlers.call(LIST_OFFSETS, 9, replica_id=-1, isolation_level=0,
                               topics=(topic_t(name=topic, partitions=(part_t(
                                   partition_index=0, current_leader_epoch=current,
                                   timestamp=timestamp),)),))
    p = resp.topics[0].partitions[0]
    return p.error_code, p.offset, p.leader_epoch


async def fetch(handlers: Handlers, topic: str, current: int) -> tuple[int, int, bytes]:
    topic_t = request_class(FETCH, 12, "FetchTopic")
    part_t = request_class(FETCH, 12, "FetchPartition")
    resp = await handlers.call(FETCH, 12, replica_id=-1, max_wait=datetime.timedelta(0),
                               min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                               session_id=0, session_epoch=-1, forgotten_topics_data=(),
                               rack_id="", topics=(topic_t(topic=topic, partitions=(part_t(
                                   partition=0, current_leader_epoch=current, fetch_offset=0,
                                   last_fetched_epoch=-1, log_start_offset=-1,
                                   partition_max_bytes=1 << 20),)),))
    p = resp.responses[0].partitions[0]
    return int(p.error_code), p.high_watermark, p.records or b""


async def test_metadata_list_offsets_and_fetch_agree_on_the_epoch(handlers: Handlers) -> None:
    await create(handlers, "agree")
    await produce(handlers, "agree", 2)
    assert await metadata_epochs(handlers, "agree") == [0]
    assert await list_offset(handlers, "agree", -1) == (ErrorCode.none, 2, 0)
    assert (await fetch(handlers, "agree", 0))[:2] == (0, 2)

    plog(handlers, "agree").become_leader(3)
    await produce(handlers, "agree", 1)
    assert await metadata_epochs(handlers, "agree") == [3]
    # Latest is in the current epoch; earliest in the first one the log holds.
    assert await list_offset(handlers, "agree", -1, current=3) == (ErrorCode.none, 3, 3)
    assert await list_offset(handlers, "agree", -2, current=3) == (ErrorCode.none, 0, 0)
    assert await list_offset(handlers, "agree", -1, current=2) == (
        ErrorCode.fenced_leader_epoch, -1, -1)
    assert await list_offset(handlers, "agree", -1, current=4) == (
        ErrorCode.unknown_leader_epoch, -1, -1)

    err, hw, records = await fetch(handlers, "agree", 3)
    assert (err, hw) == (0, 3)
    epochs = []
    pos = 0
    while pos < len(records):
        h, _ = decode_batch(records, pos)
        epochs.append((h.base_offset, h.partition_leader_epoch))
        pos += h.size
    assert epochs == [(0, 0), (2, 3)]  # each batch carries the epoch it was written in
    assert await fetch(handlers, "agree", 2) == (ErrorCode.fenced_leader_epoch.value, -1, b"")
    assert await fetch(handlers, "agree", 9) == (ErrorCode.unknown_leader_epoch.value, -1, b"")
    assert (await fetch(handlers, "agree", -1))[:2] == (0, 3)  # no epoch given: no check


async def test_epochs_survive_a_restart_which_starts_the_next(tmp_path: Any) -> None:
    first = Handlers(tmp_path / "data")
    await first.open()
    await create(first, "kept")
    await produce(first, "kept", 2)
    plog(first, "kept").become_leader(1)
    await produce(first, "kept", 2)
    await first.close()
    assert (tmp_path / "data" / "kept-0" / "leader-epoch-checkpoint").read_text() == \
        "0\n2\n0 0\n1 2\n"

    again = Handlers(tmp_path / "data")
    await again.open()
    try:
        # As after a Kafka broker's restart: leadership came back in a new epoch.
        assert await metadata_epochs(again, "kept") == [2]
        assert await end_offsets(again, "kept", (2, 0), (2, 1), (2, 2)) == [
            (ErrorCode.none, 0, 2), (ErrorCode.none, 1, 4), (ErrorCode.none, 2, 4)]
        await produce(again, "kept", 1)
    finally:
        await again.close()
    assert (tmp_path / "data" / "kept-0" / "leader-epoch-checkpoint").read_text() == \
        "0\n3\n0 0\n1 2\n2 4\n"
