"""KIP-890: EndTxn v5 bumps the epoch on every completion (transaction version 2), retries
are told apart by epoch, epoch overflow moves to a new producer id; AddPartitionsToTxn v4+
(batched, verify-only)."""

from __future__ import annotations

from kafkalite.coordinator.txn.results import AddPartitionsResult as Add
from kafkalite.coordinator.txn.results import EndTxnResult as End
from kafkalite.coordinator.txn.results import TxnPartitionsRequest as Req
from kafkalite.coordinator.txn.state import TxnState as S
from kafkalite.protocol.errors import ErrorCode as E

from .harness import Box
from .txn_harness import START, TXN, TxnHarness, val

T0, T1 = ("t", 0), ("t", 1)
V5 = 5


def ongoing() -> TxnHarness:
    h = TxnHarness.make()
    h.init()
    h.add(1000, 0, T0)
    h.wait(10)
    return h


def test_commit_bumps_the_epoch_and_answers_it() -> None:
    h = ongoing()
    assert h.end(1000, 0, True, version=V5) == End(E.none, 1000, 1)
    t = START + 10
    assert h.records(2) == [
        (TXN, val(1000, 1, S.PREPARE_COMMIT, [T0], last=t, start=START, ctv=2)),
        (TXN, val(1000, 1, S.COMPLETE_COMMIT, last=t, start=START, ctv=2)),
    ]
    assert h.markers.calls == [(1000, 1, 0, True, (T0,))]
    meta = h.core.transaction(TXN)
    assert meta is not None and (meta.producer_epoch, meta.last_producer_epoch) == (1, 0)
    assert h.core.snapshot() == h.rebuilt().snapshot()


def test_retry_table_after_commit() -> None:
    """Kafka's table for CompleteCommit: a retry (epoch - 1) of the commit is NONE; a commit
    at the current epoch is INVALID_TXN_STATE; an abort at the current epoch aborts an empty
    transaction with a new bump; an abort retry is INVALID_TXN_STATE."""
    h = ongoing()
    h.end(1000, 0, True, version=V5)
    n = len(h.written)
    assert h.end(1000, 0, True, version=V5) == End(E.none, 1000, 1)
    assert h.end(1000, 1, True, version=V5) == End(E.invalid_txn_state)
    assert h.end(1000, 0, False, version=V5) == End(E.invalid_txn_state)
    assert h.end(1000, 7, True, version=V5) == End(E.producer_fenced)
    assert len(h.written) == n
    h.wait(5)
    assert h.end(1000, 1, False, version=V5) == End(E.none, 1000, 2)
    t = START + 15
    assert h.records(n) == [
        (TXN, val(1000, 2, S.PREPARE_ABORT, last=t, start=t, ctv=2)),
        (TXN, val(1000, 2, S.COMPLETE_ABORT, last=t, start=t, ctv=2)),
    ]
    assert len(h.markers.calls) == 1  # nothing to mark
    # CompleteAbort: the abort's retry is NONE, a commit is INVALID_TXN_STATE.
    assert h.end(1000, 1, False, version=V5) == End(E.none, 1000, 2)
    assert h.end(1000, 1, True, version=V5) == End(E.invalid_txn_state)
    assert h.end(1000, 2, True, version=V5) == End(E.invalid_txn_state)
    assert h.core.snapshot() == h.rebuilt().snapshot()


def test_empty_state_accepts_only_an_abort_at_the_current_epoch() -> None:
    h = TxnHarness.make()
    h.init()
    assert h.end(1000, 0, True, version=V5) == End(E.invalid_txn_state)
    assert h.end(1000, 1, False, version=V5) == End(E.producer_fenced)
    assert h.end(1000, 0, False, version=V5) == End(E.none, 1000, 1)
    assert [v.transaction_status for _t, v in h.records(1) if v] == [S.PREPARE_ABORT,
                                                                     S.COMPLETE_ABORT]


def test_prepare_states_concurrent_or_invalid() -> None:
    h = ongoing()
    h.markers.errors[T0] = [E.request_timed_out]
    assert h.end(1000, 0, True, version=V5) == End(E.none, 1000, 1)
    assert h.state() == "PrepareCommit"
    # Only a retry (epoch - 1) is a valid epoch while preparing.
    assert h.end(1000, 1, True, version=V5) == End(E.producer_fenced)
    assert h.end(1000, 0, True, version=V5) == End(E.concurrent_transactions)
    h.advance(100)
    assert h.state() == "CompleteCommit"


def test_epoch_overflow_moves_to_the_next_producer_id() -> None:
    h = TxnHarness.make(first_pid=2000)
    h.reload(TXN, val(1000, 32766, S.ONGOING, [T0], last=START, start=START))
    n = len(h.written)
    assert h.end(1000, 32766, True, version=V5) == End(E.none, 2000, 0)
    assert h.records(n) == [
        (TXN, val(1000, 32767, S.PREPARE_COMMIT, [T0], last=START, start=START, nxt=2000,
                  ctv=2)),
        (TXN, val(2000, 0, S.COMPLETE_COMMIT, last=START, start=START, prev=1000, ctv=2)),
    ]
    assert h.markers.calls == [(1000, 32767, 0, True, (T0,))]
    # A retry with the old id at the last epoch is answered with the new id.
    assert h.end(1000, 32766, True, version=V5) == End(E.none, 2000, 0)
    # The next transaction runs under the new id.
    assert h.add(2000, 0, T1).errors == {T1: E.none}


def test_add_partitions_batch_adds_and_verifies() -> None:
    h = TxnHarness.make()
    h.init("a")
    h.init("b")
    h.add(1001, 0, T0, tid="b")
    n = len(h.written)
    box = Box()
    h.run(h.core.add_partitions_batch(h.now, box, [
        Req("a", 1000, 0, (T0, T1)),
        Req("b", 1001, 0, (T0, T1), verify_only=True),
        Req("b", 1001, 3, (T0,), verify_only=True),
        Req("nobody", 1, 0, (T0,)),
        Req("a", 1000, 9, (T1,)),
    ], version=4))
    assert box.value == [
        Add("a", {T0: E.none, T1: E.none}),
        Add("b", {T0: E.none, T1: E.transaction_abortable}),
        Add("b", {T0: E.producer_fenced}),
        Add("nobody", {T0: E.invalid_producer_id_mapping}),
        # "a" has a record in flight from the first entry.
        Add("a", {T1: E.concurrent_transactions}),
    ]
    assert box.calls == 1
    # Added by a broker on behalf of a transaction version 2 client.
    assert h.records(n) == [("a", val(1000, 0, S.ONGOING, [T0, T1], last=START,
                                      start=START, ctv=2))]


def test_verify_only_batch_answers_at_once() -> None:
    h = TxnHarness.make()
    h.init()
    out = h.core.add_partitions_batch(h.now, Box(), [Req(TXN, 1000, 0, (T0,), True)])
    assert out.response == [Add(TXN, {T0: E.transaction_abortable})] and not out.writes
    assert h.core.add_partitions_batch(h.now, Box(), []).response == []
    assert h.core.verify_partitions("", 1, 0, [T0]) == Add("", {T0: E.invalid_request})
    assert h.core.verify_partitions(TXN, 7, 0, [T0]) == \
        Add(TXN, {T0: E.invalid_producer_id_mapping})
