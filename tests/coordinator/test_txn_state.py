"""The transaction state table and the checks every transition goes through."""

from __future__ import annotations

import pytest

from kafkalite.coordinator.txn.state import (
    EXPIRATION_ALLOWED,
    STATE_BY_LABEL,
    VALID_PREVIOUS,
    IllegalTxnState,
    TxnMetadata,
)
from kafkalite.coordinator.txn.state import TxnState as S

TABLE = {  # Kafka 4.x TransactionState.validPreviousStates, by name
    "Empty": {"Empty", "CompleteCommit", "CompleteAbort"},
    "Ongoing": {"Ongoing", "Empty", "CompleteCommit", "CompleteAbort"},
    "PrepareCommit": {"Ongoing"},
    "PrepareAbort": {"Ongoing", "PrepareEpochFence", "Empty", "CompleteCommit",
                     "CompleteAbort"},
    "CompleteCommit": {"PrepareCommit"},
    "CompleteAbort": {"PrepareAbort"},
    "Dead": {"Empty", "CompleteAbort", "CompleteCommit"},
    "PrepareEpochFence": {"Ongoing"},
}


def test_table_is_kafkas() -> None:
    assert {s.label: {p.label for p in prev} for s, prev in VALID_PREVIOUS.items()} == TABLE
    assert [int(s) for s in S] == list(range(8))  # the ids in TransactionStatus
    assert set(STATE_BY_LABEL) == set(TABLE)
    assert {s.label for s in EXPIRATION_ALLOWED} == {"Empty", "CompleteCommit",
                                                     "CompleteAbort"}


def meta(state: S, epoch: int = 3) -> TxnMetadata:
    return TxnMetadata("x", 7, producer_epoch=epoch, state=state, start_ts=10,
                       last_update_ts=10, partitions={("t", 0)} if state is S.ONGOING else set())


@pytest.mark.parametrize("state", list(S))
def test_every_transition_is_checked_against_the_table(state: S) -> None:
    attempts = {
        S.EMPTY: lambda m: m.prepare_increment_epoch(1000, None, 20),
        S.ONGOING: lambda m: m.prepare_add_partitions(frozenset({("t", 1)}), 20, 0),
        S.PREPARE_COMMIT: lambda m: m.prepare_abort_or_commit(S.PREPARE_COMMIT, 0, -1, 20,
                                                              False),
        S.PREPARE_ABORT: lambda m: m.prepare_abort_or_commit(S.PREPARE_ABORT, 0, -1, 20,
                                                             False),
        S.DEAD: lambda m: m.prepare_dead(),
        S.PREPARE_EPOCH_FENCE: lambda m: m.prepare_fence_epoch(),
    }
    for target, attempt in attempts.items():
        m = meta(state)
        if state in VALID_PREVIOUS[target]:
            transit = attempt(m)
            assert transit.state is target and m.pending is transit
        else:
            with pytest.raises(IllegalTxnState):
                attempt(m)
            assert m.pending is None


def test_complete_follows_the_prepare_state() -> None:
    for prepared, completed in ((S.PREPARE_COMMIT, S.COMPLETE_COMMIT),
                                (S.PREPARE_ABORT, S.COMPLETE_ABORT)):
        assert meta(prepared).prepare_complete(20).state is completed
    with pytest.raises(IllegalTxnState):
        meta(S.ONGOING).prepare_complete(20)  # CompleteAbort cannot follow Ongoing


def test_one_pending_transition_at_a_time() -> None:
    m = meta(S.ONGOING)
    m.prepare_abort_or_commit(S.PREPARE_COMMIT, 0, -1, 20, False)
    with pytest.raises(IllegalTxnState):
        m.prepare_abort_or_commit(S.PREPARE_ABORT, 0, -1, 20, False)


def test_complete_transition_checks_the_transit() -> None:
    m = meta(S.ONGOING)
    t = m.prepare_abort_or_commit(S.PREPARE_COMMIT, 0, -1, 20, False)
    m.complete_transition(t)
    assert (m.state, m.pending, m.last_update_ts) == (S.PREPARE_COMMIT, None, 20)
    with pytest.raises(IllegalTxnState):
        m.complete_transition(t)  # not pending any more
    m2 = meta(S.ONGOING)
    t2 = m2.prepare_abort_or_commit(S.PREPARE_COMMIT, 0, -1, 20, False)
    m2.producer_epoch = 9  # the metadata moved under the transit
    with pytest.raises(IllegalTxnState):
        m2.complete_transition(t2)
    m3 = meta(S.ONGOING)
    fence = m3.prepare_fence_epoch()
    with pytest.raises(IllegalTxnState):
        m3.complete_transition(fence)  # a fence is never written


def test_fence_does_not_overflow_or_bump_twice_after_a_failure() -> None:
    assert meta(S.ONGOING, 5).prepare_fence_epoch().producer_epoch == 6
    assert meta(S.ONGOING, 32767).prepare_fence_epoch().producer_epoch == 32767
    m = meta(S.ONGOING, 5)
    m.has_failed_epoch_fence = True
    assert m.prepare_fence_epoch().producer_epoch == 5


def test_epoch_exhausted_cannot_be_incremented() -> None:
    with pytest.raises(IllegalTxnState):
        meta(S.EMPTY, 32766).prepare_increment_epoch(1000, None, 20)
