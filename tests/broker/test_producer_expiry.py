"""producer.id.expiration.ms on the broker's clock: an idle idempotent producer leaves each
partition's state (DescribeProducers shows it no more) once the expiry check after the
expiration time runs; a producer with a transaction open stays."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from kafkalite.protocol.apis import codec
from kafkalite.protocol.build import nested
from kafkalite.protocol.records import NewRecord, build_batch
from kafkalite.timekeeping.clock import ManualClock

from .harness import Handlers
from .test_handlers import CREATE_TOPICS, create_topics

PRODUCE, INIT, DESCRIBE_PRODUCERS = 0, 22, 61
START = 1_700_000_000_000
EXPIRATION = 3_600_000
CHECK = 60_000


async def produce(h: Handlers, topic: str, pid: int, epoch: int, seq: int) -> int:
    batch = build_batch([NewRecord(None, b"v", START)], timestamp=START, producer_id=pid,
                        producer_epoch=epoch, base_sequence=seq)
    req_t = codec(PRODUCE, 9).request_type
    topic_t, part_t = nested(req_t, "TopicProduceData"), nested(req_t, "PartitionProduceData")
    resp = await h.call(PRODUCE, 9, transactional_id=None, acks=-1,
                        timeout=datetime.timedelta(seconds=1),
                        topic_data=(topic_t(name=topic, partition_data=(
                            part_t(index=0, records=batch),)),))
    return int(resp.responses[0].partition_responses[0].error_code)


async def producers(h: Handlers, topic: str) -> list[int]:
    topic_t = nested(codec(DESCRIBE_PRODUCERS, 0).request_type, "TopicRequest")
    resp = await h.call(DESCRIBE_PRODUCERS, 0,
                        topics=(topic_t(name=topic, partition_indexes=(0,)),))
    return [p.producer_id for p in resp.topics[0].partitions[0].active_producers]


async def test_idle_producers_expire_on_the_broker_clock(tmp_path: Path) -> None:
    clock = ManualClock(START)
    h = Handlers(tmp_path, {"producer.id.expiration.ms": str(EXPIRATION),
                            "producer.id.expiration.check.interval.ms": str(CHECK)}, clock)
    await h.open()
    try:
        await h.call(CREATE_TOPICS, 7, create_topics("t", partitions=1))
        r: Any = await h.call(INIT, 4, transactional_id=None,
                              transaction_timeout=datetime.timedelta(seconds=60),
                              producer_id=-1, producer_epoch=-1)
        assert await produce(h, "t", r.producer_id, r.producer_epoch, 0) == 0
        assert await producers(h, "t") == [r.producer_id]
        h.broker.scheduler.advance(EXPIRATION - CHECK)  # a check before the expiration
        assert await producers(h, "t") == [r.producer_id]
        h.broker.scheduler.advance(CHECK)  # the first check at the expiration time
        assert await producers(h, "t") == []
    finally:
        await h.close()


def test_a_producer_with_an_open_transaction_is_kept() -> None:
    from kafkalite.storage.producer_state import ProducerStateTable

    table = ProducerStateTable()
    table.update(1, 0, 0, 0, 10, 10, timestamp=START)
    table.update(2, 0, 0, 0, 11, 11, timestamp=START, transactional=True)
    assert table.remove_expired(START + EXPIRATION - 1, EXPIRATION) == 0
    assert table.remove_expired(START + EXPIRATION, EXPIRATION) == 1
    assert list(table.producers) == [2] and table.has_ongoing_transaction(2)
