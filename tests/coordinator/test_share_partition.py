"""A share-partition's delivery state (coordinator/share/partition.py): acquisition of
whole new batches and of released records offset by offset, locks expiring on the
caller's clock, the delivery count limit, acknowledgements and their errors, the
in-flight limit, read_committed skipping aborted transactions, the start offset moving,
and the persisted view; then Hypothesis runs random operations against the invariants."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.coordinator.share.partition import (
    AbortedTransaction,
    AckBatch,
    AckType,
    AcquiredRange,
    LogBatch,
    PersistedBatch,
    RecordState,
    SharePartition,
    SharePartitionConfig,
)
from kafkalite.protocol.errors import ErrorCode

LOCK = 1000
CFG = SharePartitionConfig(lock_duration_ms=LOCK, delivery_count_limit=3, max_record_locks=20)
#: Without Kafka's throttling near the limit (test_share_inflight_batches.py tests it), so
#: that a batch is redelivered whole up to the limit.
WHOLE = SharePartitionConfig(lock_duration_ms=LOCK, delivery_count_limit=3,
                             max_record_locks=20, throttle_near_limit=False)
A, B = "member-a", "member-b"
ACCEPT, RELEASE, REJECT, GAP, RENEW = (AckType.ACCEPT, AckType.RELEASE, AckType.REJECT,
                                       AckType.GAP, AckType.RENEW)


def log(*ranges: tuple[int, int]) -> list[LogBatch]:
    return [LogBatch(first, last) for first, last in ranges]


def ack(first: int, last: int, *types: int) -> AckBatch:
    return AckBatch(first, last, tuple(types))


def states(sp: SharePartition) -> dict[int, tuple[str, int, str | None]]:
    return {o: (r.state.name, r.delivery_count, r.member) for o, r in sorted(sp.records.items())}


def test_new_batches_are_acquired_whole() -> None:
    sp = SharePartition(CFG, 0)
    # Three records asked for, the second batch crosses that: it is still taken whole.
    got = sp.acquire(A, 0, log((0, 1), (2, 5), (6, 9)), max_records=3)
    assert got == [AcquiredRange(0, 5, 1)]
    assert (sp.start_offset, sp.next_offset, sp.end_offset) == (0, 6, 5)
    assert sp.fetch_offset() == 6
    assert all(r.deadline == LOCK for r in sp.records.values())
    # Another member gets the next batch; nothing is handed out twice.
    assert sp.acquire(B, 10, log((6, 9)), max_records=10) == [AcquiredRange(6, 9, 1)]
    assert sp.acquire(B, 10, log((0, 1), (2, 5), (6, 9)), max_records=10) == []


def test_fetch_offset_behind_the_log_start_skips_forgotten_records() -> None:
    sp = SharePartition(CFG, 4)
    assert sp.acquire(A, 0, log((0, 5), (6, 7)), max_records=10) == [AcquiredRange(4, 7, 1)]
    assert sp.start_offset == 4


def test_release_makes_records_available_again_with_a_higher_count() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire(A, 0, log((0, 4)), 10)
    assert sp.acknowledge(A, 5, [ack(0, 0, ACCEPT), ack(1, 2, RELEASE),
                                 ack(3, 4, ACCEPT, REJECT)]) == ErrorCode.none
    # 0 acknowledged at the start: forgotten, the start offset moves.
    assert sp.start_offset == 1
    assert states(sp) == {1: ("AVAILABLE", 1, None), 2: ("AVAILABLE", 1, None),
                          3: ("ACKNOWLEDGED", 1, None), 4: ("ARCHIVED", 1, None)}
    assert sp.fetch_offset() == 1
    # Re-acquired offset by offset, by another member, with delivery count 2.
    assert sp.acquire(B, 6, log((0, 4)), 10) == [AcquiredRange(1, 2, 2)]
    assert sp.acknowledge(B, 7, [ack(1, 2, ACCEPT)]) == ErrorCode.none
    assert (sp.start_offset, sp.records) == (5, {})
    assert sp.fetch_offset() == 5


def test_lock_expiry_on_the_callers_clock() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire(A, 100, log((0, 2)), 10)
    assert sp.next_deadline() == 100 + LOCK
    assert sp.expire_locks(100 + LOCK - 1) == []
    assert sp.acknowledge(A, 200, [ack(0, 0, RENEW)]) == ErrorCode.none  # 0 locked anew
    assert sp.expire_locks(100 + LOCK) == [1, 2]
    assert states(sp)[1] == ("AVAILABLE", 1, None)
    assert sp.next_deadline() == 200 + LOCK
    # The member's late acknowledgement of an expired record is refused, all of it.
    assert sp.acknowledge(A, 1200, [ack(0, 1, ACCEPT)]) == ErrorCode.invalid_record_state
    assert states(sp)[0] == ("ACQUIRED", 1, A)
    assert sp.expire_locks(200 + LOCK) == [0]
    assert sp.next_deadline() is None


def test_delivery_count_limit_archives_a_poison_record() -> None:
    sp = SharePartition(WHOLE, 0)  # limit 3
    now = 0
    for delivery in (1, 2, 3):
        assert sp.acquire(A, now, log((0, 1)), 10) == [AcquiredRange(0, 1, delivery)]
        now += LOCK
        assert sp.expire_locks(now) == [0, 1]
    # Delivered three times and released: archived, never delivered again; the start moves.
    assert sp.records == {} and sp.start_offset == 2
    assert sp.acquire(A, now, log((0, 1)), 10) == []
    # A release at the limit archives too, as does the member leaving.
    sp2 = SharePartition(WHOLE, 0)
    for _ in range(2):
        sp2.acquire(A, 0, log((0, 1)), 10)
        sp2.release_member(A)
    sp2.acquire(A, 0, log((0, 1)), 10)
    assert sp2.acknowledge(A, 0, [ack(0, 0, RELEASE)]) == ErrorCode.none
    assert sp2.release_member(A) == [1]
    assert sp2.records == {} and sp2.start_offset == 2


def test_partial_acknowledgement_splits_a_batch() -> None:
    sp = SharePartition(CFG, 10)
    sp.acquire(A, 0, log((10, 19)), 100)
    assert sp.acknowledge(A, 1, [ack(12, 13, ACCEPT), ack(15, 15, RELEASE)]) == ErrorCode.none
    sp.expire_locks(LOCK)
    # The released and expired offsets come back as runs of one delivery count.
    assert sp.acquire(B, LOCK, log((10, 19)), 100) == [
        AcquiredRange(10, 11, 2), AcquiredRange(14, 19, 2)]
    assert sp.persisted_batches() == [
        PersistedBatch(10, 11, RecordState.AVAILABLE, 2),
        PersistedBatch(12, 13, RecordState.ACKNOWLEDGED, 1),
        PersistedBatch(14, 19, RecordState.AVAILABLE, 2)]


def test_acknowledgement_errors_apply_nothing() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire(A, 0, log((0, 4)), 10)
    sp.acquire(B, 0, log((5, 6)), 10)
    before = states(sp)
    bad_request = [
        [ack(3, 2, ACCEPT)],                     # first > last
        [ack(0, 1, 9)],                          # unknown type
        [ack(0, 2, ACCEPT, ACCEPT)],             # types neither one nor one per offset
        [ack(0, 1)],                             # no type
        [ack(0, 7, ACCEPT)],                     # past the acquired records
        [ack(2, 3, ACCEPT), ack(0, 1, ACCEPT)],  # out of order
        [ack(0, 2, ACCEPT), ack(2, 3, ACCEPT)],  # overlapping
        [ack(0, 0, ACCEPT), ack(20, 21, ACCEPT)],
    ]
    for batches in bad_request:
        assert sp.acknowledge(A, 1, batches) == ErrorCode.invalid_request, batches
    bad_state = [
        [ack(0, 0, ACCEPT), ack(5, 5, ACCEPT)],  # 5 is held by B
        [ack(4, 5, ACCEPT)],
    ]
    for batches in bad_state:
        assert sp.acknowledge(A, 1, batches) == ErrorCode.invalid_record_state, batches
    assert states(sp) == before
    # Acknowledging twice: the second time the records are not acquired any more.
    assert sp.acknowledge(A, 1, [ack(1, 1, ACCEPT)]) == ErrorCode.none
    assert sp.acknowledge(A, 1, [ack(1, 1, ACCEPT)]) == ErrorCode.invalid_record_state
    # Offsets forgotten below the start offset are not in flight (Kafka: batch record not
    # found); a batch the start offset is inside counts from the start offset.
    assert sp.acknowledge(A, 1, [ack(0, 0, ACCEPT)]) == ErrorCode.none
    assert sp.start_offset == 2
    assert sp.acknowledge(A, 1, [ack(0, 0, ACCEPT)]) == ErrorCode.invalid_record_state
    assert sp.acknowledge(A, 1, [ack(0, 2, ACCEPT)]) == ErrorCode.none
    assert sp.start_offset == 3


def test_gap_acknowledgement_archives() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire(A, 0, log((0, 3)), 10)
    assert sp.acknowledge(A, 0, [ack(0, 3, ACCEPT, GAP, ACCEPT, GAP)]) == ErrorCode.none
    assert sp.records == {} and sp.start_offset == 4


def test_in_flight_limit() -> None:
    cfg = SharePartitionConfig(lock_duration_ms=LOCK, delivery_count_limit=3,
                               max_record_locks=6)
    sp = SharePartition(cfg, 0)
    assert sp.acquire(A, 0, log((0, 3), (4, 7), (8, 9)), 100) == [AcquiredRange(0, 7, 1)]
    assert sp.in_flight() == 8 and not sp.can_acquire()
    assert sp.acquire(B, 0, log((8, 9)), 100) == []
    sp.acknowledge(A, 0, [ack(1, 1, RELEASE)])
    assert sp.can_acquire()  # an in-flight record is available again
    assert sp.acquire(B, 0, log((0, 3)), 100) == [AcquiredRange(1, 1, 2)]
    sp.acknowledge(A, 0, [ack(0, 0, ACCEPT), ack(2, 7, ACCEPT)])
    sp.acknowledge(B, 0, [ack(1, 1, ACCEPT)])
    assert sp.in_flight() == 0 and sp.can_acquire()
    assert sp.acquire(B, 0, log((8, 9)), 100) == [AcquiredRange(8, 9, 1)]


def test_read_committed_skips_aborted_transactions() -> None:
    cfg = SharePartitionConfig(lock_duration_ms=LOCK, delivery_count_limit=3,
                               max_record_locks=100, read_committed=True)
    batches = [
        LogBatch(0, 1, producer_id=7, is_transactional=True),        # aborted
        LogBatch(2, 3, producer_id=8, is_transactional=True),        # committed
        LogBatch(4, 4, producer_id=7, is_transactional=True, is_control=True),  # abort
        LogBatch(5, 5, producer_id=8, is_transactional=True, is_control=True),  # commit
        LogBatch(6, 7, producer_id=7, is_transactional=True),        # a later transaction
        LogBatch(8, 9),
    ]
    sp = SharePartition(cfg, 0)
    got = sp.acquire(A, 0, batches, 100, aborted=[AbortedTransaction(7, 0)])
    assert got == [AcquiredRange(2, 9, 1)]
    assert sp.start_offset == 2  # the aborted records are archived and forgotten
    # read_uncommitted hands out everything.
    sp2 = SharePartition(CFG, 0)
    assert sp2.acquire(A, 0, batches, 100, aborted=[AbortedTransaction(7, 0)]) == [
        AcquiredRange(0, 9, 1)]


def test_a_hole_in_the_log_is_not_delivered() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire(A, 0, log((0, 1)), 10)
    assert sp.acquire(A, 0, log((5, 6)), 10) == [AcquiredRange(5, 6, 1)]
    assert states(sp)[3] == ("ARCHIVED", 0, None)
    sp.acknowledge(A, 0, [ack(0, 1, ACCEPT)])
    assert sp.start_offset == 5


def test_log_start_moving_forgets_records() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire(A, 0, log((0, 9)), 100)
    sp.move_start(4)
    assert sp.start_offset == 4 and min(sp.records) == 4
    sp.move_start(20)
    assert (sp.start_offset, sp.next_offset, sp.records) == (20, 20, {})


def test_restore_delivers_acquired_records_again_never_acknowledged_ones() -> None:
    sp = SharePartition(CFG, 0)
    sp.acquire(A, 0, log((0, 5)), 100)
    sp.acknowledge(A, 0, [ack(1, 1, ACCEPT), ack(3, 3, REJECT)])
    persisted = sp.persisted_batches()
    assert persisted == [PersistedBatch(0, 0, RecordState.AVAILABLE, 1),
                         PersistedBatch(1, 1, RecordState.ACKNOWLEDGED, 1),
                         PersistedBatch(2, 2, RecordState.AVAILABLE, 1),
                         PersistedBatch(3, 3, RecordState.ARCHIVED, 1),
                         PersistedBatch(4, 5, RecordState.AVAILABLE, 1)]
    back = SharePartition.restore(CFG, sp.start_offset, persisted)
    got = back.acquire(B, 0, log((0, 5), (6, 6)), 100)
    assert got == [AcquiredRange(0, 0, 2), AcquiredRange(2, 2, 2), AcquiredRange(4, 5, 2),
                   AcquiredRange(6, 6, 1)]
    # Batches below the start offset are dropped; gaps between batches are available.
    again = SharePartition.restore(CFG, 2, [PersistedBatch(0, 1, RecordState.AVAILABLE, 1),
                                            PersistedBatch(4, 4, RecordState.ARCHIVED, 1)])
    assert (again.start_offset, again.next_offset) == (2, 5)
    assert states(again) == {2: ("AVAILABLE", 0, None), 3: ("AVAILABLE", 0, None),
                             4: ("ARCHIVED", 1, None)}


# --- properties ---------------------------------------------------------------------------

MEMBERS = ("m0", "m1", "m2")
LOG = [LogBatch(b, b + size - 1) for b, size in ((0, 3), (3, 1), (4, 5), (9, 2), (11, 4))]

_ops = st.lists(st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(MEMBERS), st.integers(1, 8)),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.integers(0, 15), st.integers(0, 4),
              st.sampled_from(list(AckType))),
    st.tuples(st.just("tick"), st.integers(0, 3 * LOCK)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
), max_size=60)


@settings(max_examples=200, deadline=None)
@given(_ops, st.integers(2, 5), st.integers(3, 20))
def test_invariants_under_random_operations(ops: list[tuple[object, ...]], limit: int,
                                            locks: int) -> None:
    cfg = SharePartitionConfig(lock_duration_ms=LOCK, delivery_count_limit=limit,
                               max_record_locks=locks)
    sp = SharePartition(cfg, 0)
    now = 0
    counts: dict[int, int] = {}
    done: set[int] = set()  # acknowledged or archived: never handed out again
    for op in ops:
        start_before = sp.start_offset
        if op[0] == "acquire":
            member, n = str(op[1]), int(op[2])  # type: ignore[call-overload]
            holders = {o: r.member for o, r in sp.records.items()
                       if r.state is RecordState.ACQUIRED}
            fetch = sp.fetch_offset()
            got = sp.acquire(member, now, [b for b in LOG if b.last_offset >= fetch], n)
            for rng in got:
                for o in range(rng.first_offset, rng.last_offset + 1):
                    # Never to two members at once, never after being settled.
                    assert o not in holders and o not in done
                    assert rng.delivery_count <= limit
                    assert rng.delivery_count == counts.get(o, 0) + 1
                    counts[o] = rng.delivery_count
        elif op[0] == "ack":
            member, first, size, t = op[1], int(op[2]), int(op[3]), op[4]  # type: ignore[call-overload]
            held = {o for o, r in sp.records.items() if r.member == member}
            low = sp.start_offset
            result = sp.acknowledge(str(member), now, [AckBatch(first, first + size, (int(t),))])  # type: ignore[call-overload]
            if result == ErrorCode.none:
                # Only the member's own acquired records are acknowledged.
                assert set(range(max(first, low), first + size + 1)) <= held
        elif op[0] == "tick":
            now += int(op[1])  # type: ignore[call-overload]
            sp.expire_locks(now)
        else:
            sp.release_member(str(op[1]))
        assert sp.start_offset >= start_before
        for o, r in sp.records.items():
            assert sp.start_offset <= o < sp.next_offset
            assert r.delivery_count >= counts.get(o, 0)  # delivery counts only grow
            assert (r.state is RecordState.ACQUIRED) == (r.member is not None) \
                == (r.deadline is not None)
            assert r.deadline is None or r.deadline > now
            if r.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                done.add(o)
        done.update(range(0, sp.start_offset))
        assert len(sp.records) == sp.next_offset - sp.start_offset


def test_stats_count_what_happened() -> None:
    sp = SharePartition(WHOLE, 0)  # delivery limit 3
    sp.acquire(A, 0, log((0, 3)), 10)
    sp.acknowledge(A, 0, [ack(0, 0, ACCEPT), ack(1, 1, RELEASE), ack(2, 2, RENEW)])
    sp.expire_locks(LOCK)
    sp.acquire(B, LOCK, log((0, 3)), 10)
    sp.expire_locks(2 * LOCK)
    sp.acquire(B, 2 * LOCK, log((0, 3)), 10)
    sp.expire_locks(3 * LOCK)
    st = sp.stats
    assert (st.acquired, st.redelivered, st.lock_expiries, st.archived_at_limit) == (
        4 + 3 + 3, 6, 2 + 3 + 3, 3)
    assert st.acknowledged == {"ACCEPT": 1, "RELEASE": 1, "RENEW": 1}


@settings(max_examples=150, deadline=None)
@given(_ops)
def test_restore_keeps_every_settled_state(ops: list[tuple[object, ...]]) -> None:
    sp = SharePartition(CFG, 0)
    now = 0
    for op in ops:
        if op[0] == "acquire":
            sp.acquire(str(op[1]), now, [b for b in LOG if b.last_offset >= sp.fetch_offset()],
                       int(op[2]))  # type: ignore[call-overload]
        elif op[0] == "ack":
            first, size = int(op[2]), int(op[3])  # type: ignore[call-overload]
            sp.acknowledge(str(op[1]), now, [AckBatch(first, first + size, (int(op[4]),))])  # type: ignore[call-overload]
        elif op[0] == "tick":
            now += int(op[1])  # type: ignore[call-overload]
            sp.expire_locks(now)
        else:
            sp.release_member(str(op[1]))
    back = SharePartition.restore(CFG, sp.start_offset, sp.persisted_batches())
    assert (back.start_offset, back.next_offset) == (sp.start_offset, sp.next_offset)
    for o, r in sp.records.items():
        want = RecordState.AVAILABLE if r.state is RecordState.ACQUIRED else r.state
        assert (back.records[o].state, back.records[o].delivery_count) == (
            want, r.delivery_count)
