"""Produce, Fetch and ListOffsets with transactional data: handlers called with decoded
requests on a broker built by the composition root (no socket)."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.fetch.v12 import request as fr
from kio.schema.list_offsets.v7 import request as lo
from kio.schema.produce.v9 import request as pr

from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.records import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    NewRecord,
    build_batch,
    iter_records,
)
from kafkalite.storage.log import PartitionLog

from .harness import Handlers
from .test_handlers import CREATE_TOPICS, create_topics

PRODUCE, FETCH, LIST_OFFSETS = 0, 1, 2
T0 = 1_700_000_000_000
PID, OTHER = 4000, 5000
E = ErrorCode


@pytest.fixture
async def handlers(tmp_path: Path) -> AsyncIterator[Handlers]:
    """Producer ids these tests make up are unknown to the transaction coordinator, so its
    check of the partitions a batch opens a transaction on (KIP-890) is off here."""
    h = Handlers(tmp_path / "data", {"transaction.partition.verification.enable": "false"})
    await h.open()
    yield h
    await h.close()


def batch(pid: int, seq: int, *values: bytes, transactional: bool = True,
          attributes: int = 0) -> bytes:
    return build_batch([NewRecord(None, v) for v in values], timestamp=T0, producer_id=pid,
                       producer_epoch=0, base_sequence=seq,
                       attributes=attributes | (ATTR_TRANSACTIONAL if transactional else 0))


def produce(records: bytes, transactional_id: str | None = "tx") -> pr.ProduceRequest:
    return pr.ProduceRequest(  # type: ignore[call-arg]
        transactional_id=transactional_id, acks=-1,  # type: ignore[arg-type]
        timeout=datetime.timedelta(seconds=1),  # type: ignore[arg-type]
        topic_data=(pr.TopicProduceData(name="t", partition_data=(  # type: ignore[arg-type]
            pr.PartitionProduceData(index=0, records=records),)),))  # type: ignore[arg-type]


def fetch(offset: int, isolation: int, wait_ms: int = 0) -> fr.FetchRequest:
    part = fr.FetchPartition(partition=0, current_leader_epoch=-1,  # type: ignore[arg-type]
                             fetch_offset=offset, last_fetched_epoch=-1,  # type: ignore[arg-type]
                             log_start_offset=-1, partition_max_bytes=1 << 20)  # type: ignore[arg-type]
    return fr.FetchRequest(  # type: ignore[call-arg]
        replica_id=-1, max_wait=datetime.timedelta(milliseconds=wait_ms),  # type: ignore[arg-type]
        min_bytes=1, max_bytes=1 << 20, isolation_level=isolation,  # type: ignore[arg-type]
        session_id=0, session_epoch=-1,  # type: ignore[arg-type]
        topics=(fr.FetchTopic(topic="t", partitions=(part,)),),  # type: ignore[arg-type]
        forgotten_topics_data=(), rack_id="")


def list_offsets(timestamp: int, isolation: int) -> lo.ListOffsetsRequest:
    return lo.ListOffsetsRequest(  # type: ignore[arg-type]
        replica_id=-1, isolation_level=isolation,  # type: ignore[arg-type]
        topics=(lo.ListOffsetsTopic(name="t", partitions=(  # type: ignore[arg-type]
            lo.ListOffsetsPartition(partition_index=0, timestamp=timestamp),)),))  # type: ignore[arg-type]


def part_of(resp: Any) -> Any:
    return resp.responses[0].partitions[0]


def produced(resp: Any) -> tuple[ErrorCode, int]:
    p = resp.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def values(records: bytes | None) -> list[bytes | None]:
    """Record values, markers left out (as a consumer shows them)."""
    return [r.value for h, r in iter_records(records or b"") if not h.is_control]


async def setup(handlers: Handlers) -> PartitionLog:
    await handlers.call(CREATE_TOPICS, 7, create_topics("t", partitions=1))
    plog = handlers.broker.logs.get("t", 0)
    assert plog is not None
    return plog


async def test_produce_takes_transactional_batches_with_a_transactional_id(
        handlers: Handlers) -> None:
    plog = await setup(handlers)
    # Transactional records need a transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
    resp = await handlers.call(PRODUCE, 9, produce(batch(PID, 0, b"a"), transactional_id=None))
    assert produced(resp) == (E.transactional_id_authorization_failed, -1)
    assert plog.log_end_offset == 0
    assert produced(await handlers.call(PRODUCE, 9, produce(batch(PID, 0, b"a")))) == (E.none, 0)
    assert produced(await handlers.call(PRODUCE, 9, produce(batch(PID, 1, b"b")))) == (E.none, 1)
    # A retry gets its first offset back; a plain batch inside the transaction is refused.
    assert produced(await handlers.call(PRODUCE, 9, produce(batch(PID, 1, b"b")))) == (E.none, 1)
    plain = batch(PID, 2, b"c", transactional=False)
    assert produced(await handlers.call(PRODUCE, 9, produce(plain)))[0] is E.invalid_txn_state
    # Clients may not write markers themselves.
    marker = batch(PID, 2, b"m", attributes=ATTR_CONTROL)
    assert produced(await handlers.call(PRODUCE, 9, produce(marker)))[0] is E.invalid_record
    assert (plog.log_end_offset, plog.last_stable_offset) == (2, 0)


async def test_read_committed_fetch_stops_at_the_lso_and_lists_aborted(
        handlers: Handlers) -> None:
    plog = await setup(handlers)
    plog.append(build_batch([NewRecord(None, b"p0")], timestamp=T0))
    plog.append(batch(PID, 0, b"a1"))
    plog.append(batch(OTHER, 0, b"o2"))
    plog.append(build_batch([NewRecord(None, b"p3")], timestamp=T0))

    committed = part_of(await handlers.call(FETCH, 12, fetch(0, 1)))
    assert (committed.high_watermark, committed.last_stable_offset) == (4, 1)
    assert values(committed.records) == [b"p0"]
    assert committed.aborted_transactions == ()
    uncommitted = part_of(await handlers.call(FETCH, 12, fetch(0, 0)))
    assert values(uncommitted.records) == [b"p0", b"a1", b"o2", b"p3"]
    assert uncommitted.last_stable_offset == 1 and uncommitted.aborted_transactions is None
    # At the LSO there is nothing to read yet, and no error.
    at_lso = part_of(await handlers.call(FETCH, 12, fetch(1, 1)))
    assert (at_lso.error_code, values(at_lso.records)) == (E.none, [])

    plog.append_control_marker(PID, 0, 0, commit=False)
    assert plog.last_stable_offset == 2
    plog.append_control_marker(OTHER, 0, 0, commit=True)
    committed = part_of(await handlers.call(FETCH, 12, fetch(0, 1)))
    assert committed.last_stable_offset == committed.high_watermark == 6
    # All the data; the consumer drops PID's batches from offset 1 to its ABORT marker.
    assert values(committed.records) == [b"p0", b"a1", b"o2", b"p3"]
    assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(PID, 1)]
    # A fetch past the aborted transaction's marker does not list it.
    later = part_of(await handlers.call(FETCH, 12, fetch(5, 1)))
    assert later.aborted_transactions == ()


async def test_a_parked_read_committed_fetch_completes_on_the_marker(
        handlers: Handlers) -> None:
    plog = await setup(handlers)
    plog.append(batch(PID, 0, b"a"))
    parked = asyncio.ensure_future(handlers.call(FETCH, 12, fetch(0, 1, wait_ms=5000)))
    await asyncio.sleep(0.05)
    assert not parked.done()
    plog.append_control_marker(PID, 0, 0, commit=True)
    got = part_of(await asyncio.wait_for(parked, 2))
    assert got.last_stable_offset == 2 and values(got.records) == [b"a"]


async def test_list_offsets_latest_is_the_lso_under_read_committed(handlers: Handlers) -> None:
    plog = await setup(handlers)
    plog.append(build_batch([NewRecord(None, b"p")], timestamp=T0))
    plog.append(batch(PID, 0, b"a"))
    plog.append(build_batch([NewRecord(None, b"late")], timestamp=T0 + 500))

    async def offset(timestamp: int, isolation: int) -> tuple[int, int]:
        resp = await handlers.call(LIST_OFFSETS, 7, list_offsets(timestamp, isolation))
        p = resp.topics[0].partitions[0]
        assert p.error_code is E.none
        return p.offset, p.timestamp

    assert await offset(-1, 0) == (3, -1)
    assert await offset(-1, 1) == (1, -1)
    # By timestamp (and max timestamp): nothing at or past the LSO under read_committed.
    assert await offset(T0 + 100, 0) == (2, T0 + 500)
    assert await offset(T0 + 100, 1) == (-1, -1)
    assert await offset(-3, 1) == (-1, -1)
    assert await offset(T0, 1) == (0, T0)
    plog.append_control_marker(PID, 0, 0, commit=True)
    assert await offset(-1, 1) == (4, -1)
    assert await offset(T0 + 100, 1) == (2, T0 + 500)
