"""A share-partition's in-flight records kept as batches (coordinator/share/inflight.py):
a batch acquired whole keeps one state, splits into one state per offset only when its
offsets are treated apart, and joins again when they agree; then random operations on the
fake clock against the one-state-per-offset model (share_partition_model.py): the same
answers, states, persisted batches and counters. The state store's range merge is checked
against an offset-by-offset merge."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.coordinator.share.partition import (
    AckBatch,
    AckType,
    AcquiredRange,
    LogBatch,
    PersistedBatch,
    RecordState,
    SharePartition,
    SharePartitionConfig,
)
from kafkalite.coordinator.share.state_store import merge_batches
from kafkalite.protocol import share_state_records as ss
from kafkalite.protocol.errors import ErrorCode

from .share_partition_model import PerOffsetSharePartition

LOCK = 1000
CFG = SharePartitionConfig(lock_duration_ms=LOCK, delivery_count_limit=3, max_record_locks=50)
A, B = "member-a", "member-b"
ACCEPT, RELEASE, REJECT, RENEW = AckType.ACCEPT, AckType.RELEASE, AckType.REJECT, AckType.RENEW


def shape(sp: SharePartition) -> list[tuple[int, int, bool]]:
    """(first, last, whether it holds one state per offset) of each in-flight batch."""
    return [(b.first_offset, b.last_offset, b.offsets is not None) for b in sp.batches]


def test_a_batch_acquired_whole_stays_one_state_through_release_and_acceptance() -> None:
    sp = SharePartition(CFG, 0)
    assert sp.acquire(A, 0, [LogBatch(0, 9), LogBatch(10, 19)], 100) == [
        AcquiredRange(0, 19, 1)]
    assert shape(sp) == [(0, 9, False), (10, 19, False)]
    assert sp.acknowledge(A, 5, [AckBatch(10, 19, (RELEASE,))]).value == 0
    assert shape(sp) == [(0, 9, False), (10, 19, False)]
    assert sp.batches[1].whole.state is RecordState.AVAILABLE
    # Released whole, acquired again whole: one state, delivery count 2.
    assert sp.acquire(B, 6, [LogBatch(10, 19)], 100) == [AcquiredRange(10, 19, 2)]
    assert shape(sp) == [(0, 9, False), (10, 19, False)]
    assert sp.acknowledge(A, 7, [AckBatch(0, 9, (ACCEPT,))]).value == 0
    assert (sp.start_offset, shape(sp)) == (10, [(10, 19, False)])
    assert sp.stats.redelivered == 10


def test_a_partial_acknowledgement_splits_the_batch_and_the_start_offset_moves_inside_it(
) -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire(A, 0, [LogBatch(0, 9)], 100)
    assert sp.acknowledge(A, 1, [AckBatch(0, 3, (ACCEPT,)), AckBatch(5, 5, (REJECT,))]
                          ).value == 0
    # Offsets 0-3 are settled at the start: forgotten; the rest per offset.
    assert (sp.start_offset, shape(sp)) == (4, [(4, 9, True)])
    assert [sp.state_of(o).state for o in range(4, 10)] == [  # type: ignore[union-attr]
        RecordState.ACQUIRED, RecordState.ARCHIVED] + [RecordState.ACQUIRED] * 4
    assert sp.persisted_batches() == [
        PersistedBatch(4, 4, RecordState.AVAILABLE, 1),
        PersistedBatch(5, 5, RecordState.ARCHIVED, 1),
        PersistedBatch(6, 9, RecordState.AVAILABLE, 1)]
    assert sp.acknowledge(A, 2, [AckBatch(4, 9, (ACCEPT, REJECT, ACCEPT, ACCEPT, ACCEPT,
                                                 ACCEPT))]) == ErrorCode.invalid_record_state
    assert sp.acknowledge(A, 2, [AckBatch(4, 4, (ACCEPT,)), AckBatch(6, 9, (ACCEPT,))]
                          ).value == 0
    assert (sp.start_offset, sp.next_offset, sp.batches) == (10, 10, [])


def test_offsets_that_agree_again_join_back_into_one_state() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire(A, 0, [LogBatch(0, 9)], 100)
    assert sp.acknowledge(A, 100, [AckBatch(0, 4, (RENEW,))]).value == 0
    assert shape(sp) == [(0, 9, True)]  # two deadlines
    assert sp.next_deadline() == LOCK
    assert sp.acknowledge(A, 100, [AckBatch(5, 9, (RENEW,))]).value == 0
    assert shape(sp) == [(0, 9, False)]  # one deadline again
    assert sp.next_deadline() == 100 + LOCK
    assert sp.expire_locks(100 + LOCK) == list(range(10))
    assert shape(sp) == [(0, 9, False)] and sp.batches[0].whole.state is RecordState.AVAILABLE


def test_max_records_inside_an_available_batch_takes_part_of_it() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire(A, 0, [LogBatch(0, 9)], 100)
    sp.release_member(A)
    assert sp.acquire(B, 1, [LogBatch(0, 9)], 4) == [AcquiredRange(0, 3, 2)]
    assert shape(sp) == [(0, 9, True)]
    assert sp.fetch_offset() == 4
    assert sp.acquire(A, 2, [LogBatch(0, 9)], 100) == [AcquiredRange(4, 9, 2)]
    assert sp.release_member(B) == [0, 1, 2, 3]
    assert sp.count(RecordState.AVAILABLE) == 4 and sp.count(RecordState.ACQUIRED) == 6


def test_the_delivery_limit_archives_a_whole_batch_at_once_without_throttling() -> None:
    sp = SharePartition(SharePartitionConfig(lock_duration_ms=LOCK, delivery_count_limit=3,
                                             throttle_near_limit=False), 0)
    for n in range(3):
        assert sp.acquire(A, n * LOCK, [LogBatch(0, 4), LogBatch(5, 5)], 100)[0] == \
            AcquiredRange(0, 5, n + 1)
        sp.expire_locks((n + 1) * LOCK)
    assert (sp.start_offset, sp.batches, sp.stats.archived_at_limit) == (6, [], 6)


def redeliver(sp: SharePartition, now: int, log: list[LogBatch], n: int = 100
              ) -> list[AcquiredRange]:
    """Acquire, then let every lock expire."""
    got = sp.acquire(A, now, log, n)
    sp.expire_locks(now + LOCK)
    return got


def test_records_near_the_delivery_limit_go_out_in_smaller_runs_the_last_alone() -> None:
    # Limit 6: throttled from delivery count 3 (half the limit, rounded up).
    sp = SharePartition(SharePartitionConfig(lock_duration_ms=LOCK, delivery_count_limit=6),
                        0)
    log = [LogBatch(0, 7)]
    assert redeliver(sp, 0, log) == [AcquiredRange(0, 7, 1)]
    assert redeliver(sp, LOCK, log) == [AcquiredRange(0, 7, 2)]
    assert redeliver(sp, 2 * LOCK, log) == [AcquiredRange(0, 7, 3)]
    # Delivered 3 times: 8 >> 1 = 4 records this time, and nothing after them.
    got = sp.acquire(A, 3 * LOCK, [*log, LogBatch(8, 9)], 100)
    assert got == [AcquiredRange(0, 3, 4)]
    assert sp.next_offset == 8  # the new batch waits too
    sp.expire_locks(4 * LOCK)
    # Offsets 0-3 delivered 4 times: 8 >> 2 = 2; then 0-1 (5 times) are on their last
    # delivery: one at a time.
    assert sp.acquire(B, 4 * LOCK, log, 100) == [AcquiredRange(0, 1, 5)]
    sp.expire_locks(5 * LOCK)
    assert sp.acquire(B, 5 * LOCK, log, 100) == [AcquiredRange(0, 0, 6)]
    assert sp.acquire(B, 5 * LOCK, log, 100) == [AcquiredRange(1, 1, 6)]
    assert sp.acquire(B, 5 * LOCK, log, 100) == [AcquiredRange(2, 3, 5)]


def test_a_throttled_batch_is_not_joined_to_records_already_acquired() -> None:
    sp = SharePartition(SharePartitionConfig(lock_duration_ms=LOCK, delivery_count_limit=4),
                        0)  # throttled from 2 deliveries
    sp.acquire(A, 0, [LogBatch(0, 1)], 100)
    sp.expire_locks(LOCK)  # 0-1 available, delivered once
    sp.acquire(B, LOCK, [LogBatch(0, 1), LogBatch(2, 5)], 100)  # 0-1 again, 2-5 new
    assert sp.acknowledge(B, LOCK, [AckBatch(0, 1, (RELEASE,))]).value == 0
    # 0-1 delivered twice: throttled, handed out without anything else.
    assert sp.acquire(A, LOCK, [LogBatch(0, 1), LogBatch(2, 5), LogBatch(6, 9)], 100) == [
        AcquiredRange(0, 0, 3)]
    assert sp.next_offset == 6


# --- against the one-state-per-offset model ---------------------------------------------

MEMBERS = ("m0", "m1", "m2")
LOG = [LogBatch(b, b + size - 1) for b, size in ((0, 3), (3, 1), (4, 6), (10, 2), (12, 5),
                                                 (17, 8))]

_ops = st.lists(st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(MEMBERS), st.integers(1, 12)),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.integers(0, 24),
              st.integers(0, 8), st.lists(st.sampled_from(list(AckType)), min_size=1,
                                          max_size=2)),
    st.tuples(st.just("tick"), st.integers(0, 2 * LOCK)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("log_start"), st.integers(0, 26)),
    st.tuples(st.just("restart")),
), max_size=50)


@settings(max_examples=300, deadline=None)
@given(_ops, st.integers(1, 4), st.integers(2, 30))
def test_batches_answer_as_one_state_per_offset_does(ops: list[tuple[object, ...]],
                                                     limit: int, locks: int) -> None:
    # The model keeps no batches, so it cannot throttle by them: compared without.
    cfg = SharePartitionConfig(lock_duration_ms=LOCK, delivery_count_limit=limit,
                               max_record_locks=locks, throttle_near_limit=False)
    sp = SharePartition(cfg, 0)
    model = PerOffsetSharePartition(cfg, 0)
    now = 0
    for op in ops:
        if op[0] == "acquire":
            member, n = str(op[1]), int(op[2])  # type: ignore[call-overload]
            fetch = model.fetch_offset()
            assert sp.fetch_offset() == fetch
            assert sp.can_acquire() == model.can_acquire()
            read = [b for b in LOG if b.last_offset >= fetch]
            assert sp.acquire(member, now, read, n) == model.acquire(member, now, read, n)
        elif op[0] == "ack":
            member, first, size = str(op[1]), int(op[2]), int(op[3])  # type: ignore[call-overload]
            kinds = op[4]
            assert isinstance(kinds, list)
            types = tuple(int(t) for t in kinds) if len(kinds) == 1 or size == 0 else \
                tuple(int(kinds[i % len(kinds)]) for i in range(size + 1))
            batch = [AckBatch(first, first + size, types)]
            assert sp.acknowledge(member, now, batch) == model.acknowledge(member, now, batch)
        elif op[0] == "tick":
            now += int(op[1])  # type: ignore[call-overload]
            assert sp.expire_locks(now) == model.expire_locks(now)
        elif op[0] == "leave":
            assert sp.release_member(str(op[1])) == model.release_member(str(op[1]))
        elif op[0] == "log_start":
            sp.move_start(int(op[1]))  # type: ignore[call-overload]
            model.move_start(int(op[1]))  # type: ignore[call-overload]
        else:
            persisted = sp.persisted_batches()
            assert persisted == model.persisted_batches()
            sp = SharePartition.restore(cfg, sp.start_offset, persisted)
            model = PerOffsetSharePartition.restore(cfg, model.start_offset, persisted)
        assert (sp.start_offset, sp.next_offset) == (model.start_offset, model.next_offset)
        assert {o: (r.state, r.delivery_count, r.member, r.deadline)
                for o, r in sp.records.items()} == {
            o: (r.state, r.delivery_count, r.member, r.deadline)
            for o, r in model.records.items()}
        assert sp.persisted_batches() == model.persisted_batches()
        assert sp.next_deadline() == model.next_deadline()
        assert sp.stats == model.stats
        # The batches cover the in-flight offsets exactly, in order, none empty.
        at = sp.start_offset
        for b in sp.batches:
            assert b.first_offset == at and b.first_offset <= b.last_offset
            assert b.offsets is None or len(b.offsets) == b.size
            at = b.last_offset + 1
        assert at == sp.next_offset


# --- the state store's merge, by ranges ---------------------------------------------------

def _per_offset_merge(current: list[ss.StateBatch], newer: list[ss.StateBatch],
                      start: int) -> tuple[ss.StateBatch, ...]:
    per: dict[int, tuple[int, int]] = {}
    for batches in (current, newer):
        for b in batches:
            for o in range(max(b.first_offset, start), b.last_offset + 1):
                per[o] = (b.delivery_state, b.delivery_count)
    runs: list[list[int]] = []
    for o in sorted(per):
        s, c = per[o]
        if runs and runs[-1][1] + 1 == o and runs[-1][2:] == [s, c]:
            runs[-1][1] = o
        else:
            runs.append([o, o, s, c])
    return tuple(ss.StateBatch(*r) for r in runs)


_runs = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 6), st.sampled_from(
    [ss.AVAILABLE, ss.ACKNOWLEDGED, ss.ARCHIVED]), st.integers(0, 2)), max_size=8)


def _disjoint(raw: list[tuple[int, int, int, int]]) -> list[ss.StateBatch]:
    out: list[ss.StateBatch] = []
    at = 0
    for gap, size, state, count in raw:
        first = at + gap % 3
        out.append(ss.StateBatch(first, first + size, state, count))
        at = first + size + 1
    return out


@settings(max_examples=300, deadline=None)
@given(_runs, _runs, st.integers(0, 30), st.integers(0, 20))
def test_merge_by_ranges_is_the_offset_by_offset_merge(
        current: list[tuple[int, int, int, int]], newer: list[tuple[int, int, int, int]],
        start: int, shift: int) -> None:
    old = _disjoint(current)
    new = [ss.StateBatch(b.first_offset + shift, b.last_offset + shift, b.delivery_state,
                         b.delivery_count) for b in _disjoint(newer)]
    assert merge_batches(old, new, start) == _per_offset_merge(old, new, start)


def test_merge_lays_a_batch_over_the_middle_of_a_run() -> None:
    run = [ss.StateBatch(0, 99, ss.AVAILABLE, 1)]
    assert merge_batches(run, [ss.StateBatch(10, 19, ss.ACKNOWLEDGED, 1)], 5) == (
        ss.StateBatch(5, 9, ss.AVAILABLE, 1), ss.StateBatch(10, 19, ss.ACKNOWLEDGED, 1),
        ss.StateBatch(20, 99, ss.AVAILABLE, 1))
