"""The broker's share-partition manager on a manual clock (no sockets, no sleeps): where a
share-partition starts, its locks expiring on the broker's clock, the delivery count limit,
acknowledgements, read_committed, and its state written to ``__share_group_state`` and
read back by a broker started again on the same directory."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kafkalite.broker.context import RequestContext
from kafkalite.broker.share.manager import SharePartitionManager
from kafkalite.coordinator.share.partition import AckBatch, AcquiredRange, RecordState
from kafkalite.coordinator.share.state_store import ShareKey
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import nested
from kafkalite.protocol.headers import RequestHeader
from kafkalite.protocol.records import ATTR_TRANSACTIONAL, NewRecord, build_batch
from kafkalite.storage.log import PartitionLog
from kafkalite.timekeeping.clock import ManualClock

from .harness import Handlers

T0 = 1_700_000_000_000
LOCK = 15_000  # share.record.lock.duration.ms (the broker's smallest)
ACCEPT, RELEASE, REJECT = 1, 2, 3


def group_configs(h: Handlers, group: str = "g", **configs: str) -> None:
    h.broker.dynamic.groups.alter(group, {"share.auto.offset.reset": "earliest",
                                          "share.record.lock.duration.ms": str(LOCK),
                                          **{k.replace("_", "."): v
                                             for k, v in configs.items()}}, False)


async def open_broker(data: Path) -> Handlers:
    h = Handlers(data, {"group.share.min.record.lock.duration.ms": "1000"},
                 clock=ManualClock(T0))
    await h.open()
    return h


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Handlers]:
    h = await open_broker(tmp_path / "data")
    h.broker.create_topic("t", 1)
    group_configs(h)
    yield h
    await h.close()


def manager(h: Handlers) -> SharePartitionManager:
    assert h.broker.share is not None
    return h.broker.share


def key(h: Handlers, group: str = "g") -> ShareKey:
    info = h.broker.storage.catalog.get("t")
    assert info is not None
    return (group, info.topic_id, 0)


def log_of(h: Handlers) -> PartitionLog:
    plog = h.broker.logs.get("t", 0)
    assert plog is not None
    return plog


def append(h: Handlers, *values: bytes, producer_id: int = -1, transactional: bool = False
           ) -> None:
    log_of(h).append(build_batch(
        [NewRecord(None, v) for v in values], timestamp=T0, producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
        attributes=ATTR_TRANSACTIONAL if transactional else 0))


def acquire(h: Handlers, member: str, max_records: int = 500) -> list[AcquiredRange]:
    m = manager(h)
    got = m.acquire(key(h), member, m.now(), max_records, 1 << 20)
    assert got.error.value == 0, got.error
    return list(got.ranges)


def persisted(h: Handlers) -> list[tuple[int, int, int, int]]:
    m = manager(h)
    state = m.state.query(lambda c: c.read(key(h)))
    assert state is not None
    return [(state.start_offset, b.first_offset, b.last_offset, b.delivery_state)
            for b in state.batches] or [(state.start_offset, -1, -1, -1)]


async def test_a_new_share_partition_starts_where_the_reset_says_and_is_persisted_first(
        h: Handlers) -> None:
    append(h, b"a", b"b")
    group_configs(h, "late", share_auto_offset_reset="latest")
    m = manager(h)
    late = m.acquire(key(h, "late"), "m1", m.now(), 500, 1 << 20)
    assert late.ranges == ()
    assert m.partitions[key(h, "late")].start_offset == 2
    assert acquire(h, "m1") == [AcquiredRange(0, 1, 1)]
    # Acquired records are persisted as available, to be delivered again after a restart.
    assert persisted(h) == [(0, 0, 1, RecordState.AVAILABLE)]


async def test_a_lock_expires_on_the_broker_clock_and_the_record_comes_again(
        h: Handlers) -> None:
    append(h, b"a", b"b", b"c")
    m = manager(h)
    woken: list[int] = []
    m.waiters.add(lambda: woken.append(1))
    assert acquire(h, "m1") == [AcquiredRange(0, 2, 1)]
    assert acquire(h, "m2") == []
    h.broker.scheduler.advance(LOCK - 1)
    assert acquire(h, "m2") == [] and woken == []
    h.broker.scheduler.advance(1)
    assert woken == [1]
    sp = m.partitions[key(h)]
    assert all(sp.records[o].state is RecordState.AVAILABLE for o in range(3))
    assert acquire(h, "m2") == [AcquiredRange(0, 2, 2)]
    assert sp.stats.lock_expiries == 3


async def test_the_delivery_count_limit_archives_a_poison_record(h: Handlers) -> None:
    group_configs(h, share_delivery_count_limit="2")
    append(h, b"poison")
    append(h, b"fine")
    m = manager(h)
    k = key(h)
    assert acquire(h, "m1") == [AcquiredRange(0, 1, 1)]
    assert m.acknowledge(k, "m1", m.now(), [AckBatch(0, 1, (RELEASE, ACCEPT))]).value == 0
    assert acquire(h, "m1") == [AcquiredRange(0, 0, 2)]
    assert m.acknowledge(k, "m1", m.now(), [AckBatch(0, 0, (RELEASE,))]).value == 0
    # Released at its second delivery: archived, and the share-partition moves past it.
    assert acquire(h, "m1") == []
    assert m.partitions[key(h)].start_offset == 2
    assert persisted(h) == [(2, -1, -1, -1)]


async def test_acknowledgements_of_records_not_held_are_refused_and_change_nothing(
        h: Handlers) -> None:
    append(h, b"a", b"b", b"c")
    m = manager(h)
    k = key(h)
    acquire(h, "m1", max_records=1)  # a batch is acquired whole
    now = m.now()
    invalid_state, invalid_request = 121, 42
    assert m.acknowledge(k, "m2", now, [AckBatch(0, 0, (ACCEPT,))]).value == invalid_state
    assert m.acknowledge(k, "m1", now, [AckBatch(0, 5, (ACCEPT,))]).value == invalid_request
    assert m.acknowledge(k, "m1", now, [AckBatch(0, 0, (9,))]).value == invalid_request
    assert m.acknowledge(k, "m1", now, [AckBatch(1, 1, (ACCEPT,)),
                                        AckBatch(0, 0, (ACCEPT,))]).value == invalid_request
    assert m.acknowledge(k, "m1", now, [AckBatch(0, 1, (ACCEPT, REJECT))]).value == 0
    # Twice: those records are no longer acquired.
    assert m.acknowledge(k, "m1", now, [AckBatch(0, 0, (ACCEPT,))]).value == invalid_state
    assert m.acknowledge(k, "m1", now, [AckBatch(2, 2, (ACCEPT,))]).value == 0
    assert m.acknowledge(k, "m1", now, [AckBatch(2, 2, (ACCEPT,))]).value == invalid_state
    assert m.partitions[k].start_offset == 3


async def test_read_committed_skips_the_records_of_an_aborted_transaction(
        h: Handlers) -> None:
    group_configs(h, share_isolation_level="read_committed")
    append(h, b"x1", b"x2", producer_id=7, transactional=True)
    log_of(h).append_control_marker(7, 0, 0, commit=False)
    append(h, b"ok")
    ranges = acquire(h, "m1")
    # 0-1 aborted (archived, never delivered), 2 the abort marker, 3 the record.
    assert [(r.first_offset, r.last_offset) for r in ranges] == [(2, 3)]
    sp = manager(h).partitions[key(h)]
    assert sp.start_offset == 2  # archived at the front: forgotten


async def test_an_open_transaction_holds_read_committed_back(h: Handlers) -> None:
    group_configs(h, share_isolation_level="read_committed")
    append(h, b"pending", producer_id=9, transactional=True)
    assert acquire(h, "m1") == []
    log_of(h).append_control_marker(9, 0, 0, commit=True)
    assert [(r.first_offset, r.last_offset) for r in acquire(h, "m1")] == [(0, 1)]


async def test_the_state_is_read_back_after_a_restart(tmp_path: Path) -> None:
    h = await open_broker(tmp_path / "data")
    h.broker.create_topic("t", 1)
    group_configs(h)
    append(h, b"a", b"b", b"c", b"d", b"e")
    assert acquire(h, "m1") == [AcquiredRange(0, 4, 1)]
    m = manager(h)
    assert m.acknowledge(key(h), "m1", m.now(), [AckBatch(0, 1, (ACCEPT,))]).value == 0
    await h.close()
    h = await open_broker(tmp_path / "data")
    try:
        # Accepted records are gone for good; acquired ones come again, counted.
        assert acquire(h, "m2") == [AcquiredRange(2, 4, 2)]
        assert manager(h).partitions[key(h)].start_offset == 2
    finally:
        await h.close()


async def test_a_member_whose_session_expires_loses_its_records(h: Handlers) -> None:
    info = h.broker.storage.catalog.get("t")
    assert info is not None
    append(h, b"a", b"b")
    hb = await h.call(76, 1, group_id="g", member_id="m1", member_epoch=0, rack_id=None,
                      subscribed_topic_names=("t",))
    assert hb.error_code == 0
    assert acquire(h, "m1") == [AcquiredRange(0, 1, 1)]
    h.broker.scheduler.advance(45_000)  # group.share.session.timeout.ms
    sp = manager(h).partitions[key(h)]
    assert [sp.records[o].state for o in (0, 1)] == [RecordState.AVAILABLE] * 2


async def test_renew_extends_a_lock_on_the_broker_clock(h: Handlers) -> None:
    append(h, b"a")
    m = manager(h)
    assert acquire(h, "m1") == [AcquiredRange(0, 0, 1)]
    h.broker.scheduler.advance(LOCK - 1)
    assert m.acknowledge(key(h), "m1", m.now(), [AckBatch(0, 0, (4,))]).value == 0  # RENEW
    h.broker.scheduler.advance(LOCK - 1)
    sp = m.partitions[key(h)]
    assert sp.records[0].state is RecordState.ACQUIRED and sp.records[0].member == "m1"
    h.broker.scheduler.advance(1)
    assert sp.records[0].state is RecordState.AVAILABLE


async def test_record_limit_mode_splits_a_batch(h: Handlers) -> None:
    append(h, b"a", b"b", b"c", b"d", b"e")
    m = manager(h)
    got = m.acquire(key(h), "m1", m.now(), 2, 1 << 20, record_limit=True)
    assert got.ranges == (AcquiredRange(0, 1, 1),)
    got = m.acquire(key(h), "m2", m.now(), 2, 1 << 20, record_limit=True)
    assert got.ranges == (AcquiredRange(2, 3, 1),)
    # Batch-optimized (the default): the rest of the batch, whole.
    assert acquire(h, "m3", max_records=1) == [AcquiredRange(4, 4, 1)]


async def test_records_deleted_from_the_log_leave_the_share_partition(h: Handlers) -> None:
    append(h, b"a", b"b")
    append(h, b"c")
    assert acquire(h, "m1", max_records=1) == [AcquiredRange(0, 1, 1)]
    log_of(h).move_start(2)  # DeleteRecords or retention
    assert acquire(h, "m2") == [AcquiredRange(2, 2, 1)]
    assert manager(h).partitions[key(h)].start_offset == 2


async def test_a_parked_share_fetch_waits_for_records_and_lets_go_when_cancelled(
        h: Handlers) -> None:
    info = h.broker.storage.catalog.get("t")
    assert info is not None
    reg = h.broker.apis.registration(78)
    assert reg is not None
    req_t = codecs.codec(78, 2).request_type

    def share_fetch(epoch: int) -> Any:
        req = h.request(78, 2, group_id="g", member_id="m1", share_session_epoch=epoch,
                        max_wait=timedelta(seconds=5), min_bytes=1, max_bytes=1 << 20,
                        max_records=500, batch_size=500, topics=(
                            nested(req_t, "FetchTopic")(
                                topic_id=info.topic_id, partitions=(nested(
                                    req_t, "FetchPartition")(
                                    partition_index=0, acknowledgement_batches=()),)),),
                        forgotten_topics_data=())
        ctx = RequestContext(RequestHeader(78, 2, epoch + 1, "t", 0), "User:ANONYMOUS",
                             "127.0.0.1", 50000, "PLAINTEXT", 7)
        return reg.handler(ctx, req)

    m = manager(h)
    parked = share_fetch(0)
    assert isinstance(parked, asyncio.Future) and len(m.waiters) == 1
    append(h, b"a")
    resp = await asyncio.wait_for(parked, 5)
    [topic] = resp.responses
    assert [(a.first_offset, a.last_offset) for a in topic.partitions[0].acquired_records] \
        == [(0, 0)]
    assert m.waiters == set()
    parked = share_fetch(1)
    assert isinstance(parked, asyncio.Future) and len(m.waiters) == 1
    parked.cancel()
    await asyncio.sleep(0)
    assert m.waiters == set() and not log_of(h).watchers


async def test_by_duration_starts_at_the_first_record_that_recent(h: Handlers) -> None:
    old = build_batch([NewRecord(None, b"old")], timestamp=T0 - 60_000)
    log_of(h).append(old)
    append(h, b"new")  # at T0, the broker's now
    group_configs(h, "recent", share_auto_offset_reset="by_duration:PT30S")
    m = manager(h)
    got = m.acquire(key(h, "recent"), "m1", m.now(), 500, 1 << 20)
    assert got.ranges == (AcquiredRange(1, 1, 1),)


async def test_deleting_a_share_group_deletes_its_share_partition_state(h: Handlers) -> None:
    append(h, b"a")
    hb = await h.call(76, 1, group_id="g", member_id="m1", member_epoch=0, rack_id=None,
                      subscribed_topic_names=("t",))
    assert hb.error_code == 0
    assert acquire(h, "m1") == [AcquiredRange(0, 0, 1)]
    m = manager(h)
    assert m.acknowledge(key(h), "m1", m.now(), [AckBatch(0, 0, (ACCEPT,))]).value == 0
    left = await h.call(76, 1, group_id="g", member_id="m1", member_epoch=-1, rack_id=None,
                        subscribed_topic_names=None)
    assert left.error_code == 0
    deleted = await h.call(42, 2, groups_names=("g",))
    assert [r.error_code for r in deleted.results] == [0]
    assert m.state.query(lambda c: c.read(key(h))) is None and key(h) not in m.partitions
    # The group made again starts afresh, where its reset says.
    assert acquire(h, "m2") == [AcquiredRange(0, 0, 1)]


async def test_deleting_a_topic_deletes_its_share_partition_state(h: Handlers) -> None:
    append(h, b"a")
    k = key(h)
    assert acquire(h, "m1") == [AcquiredRange(0, 0, 1)]
    m = manager(h)
    h.broker.storage.catalog.delete("t")
    assert m.state.query(lambda c: c.read(k)) is None and k not in m.partitions
    assert k[1] not in {key[1] for key in m.partitions}


async def test_an_acknowledgement_that_moves_the_start_wakes_parked_fetches(
        h: Handlers) -> None:
    # At max_record_locks nothing more is acquired: a parked ShareFetch must hear when an
    # acceptance frees room, not only when records are released.
    group_configs(h, share_partition_max_record_locks="100")  # the smallest allowed
    append(h, *[b"a"] * 100)
    append(h, b"c")
    m = manager(h)
    woken: list[int] = []
    m.waiters.add(lambda: woken.append(1))
    assert acquire(h, "m1") == [AcquiredRange(0, 99, 1)]
    assert acquire(h, "m2") == []
    assert m.acknowledge(key(h), "m1", m.now(), [AckBatch(1, 99, (4,))]).value == 0  # RENEW
    assert woken == []
    assert m.acknowledge(key(h), "m1", m.now(), [AckBatch(1, 99, (ACCEPT,))]).value == 0
    assert woken == []  # offset 0 still held: the start offset stays
    assert m.acknowledge(key(h), "m1", m.now(), [AckBatch(0, 0, (ACCEPT,))]).value == 0
    assert woken == [1]
    assert acquire(h, "m2") == [AcquiredRange(100, 100, 1)]


async def test_acquisition_reads_on_past_a_chunk_of_aborted_records(
        h: Handlers, monkeypatch: pytest.MonkeyPatch) -> None:
    import kafkalite.broker.share.manager as manager_module

    group_configs(h, share_isolation_level="read_committed")
    for pid in range(7, 11):
        append(h, *[b"x" * 40] * 3, producer_id=pid, transactional=True)
    for pid in range(7, 11):
        log_of(h).append_control_marker(pid, 0, 0, commit=False)
    append(h, b"kept")
    monkeypatch.setattr(manager_module, "READ_CHUNK", 200)  # about one batch a read
    m = manager(h)
    # Offsets 0-11 aborted, archived chunk after chunk within one acquisition, up to the
    # abort markers (12-15, handed out as Kafka does) and the committed record.
    got = m.acquire(key(h), "m1", m.now(), 10, 1 << 20)
    assert got.ranges and got.ranges[0].first_offset == 12
    assert b"x" * 40 not in got.records
    assert m.partitions[key(h)].start_offset == 12
