"""Timeouts and expiry on the fake clock, loading, and replay against live state."""

from __future__ import annotations

from kafkalite.coordinator.txn.results import EndTxnResult as End
from kafkalite.coordinator.txn.results import InitProducerIdResult as R
from kafkalite.coordinator.txn.state import TxnState as S
from kafkalite.protocol.errors import ErrorCode as E

from .txn_harness import START, TIMEOUT, TXN, TxnHarness, val

T0, T1 = ("t", 0), ("t", 1)


def test_open_transaction_is_aborted_after_its_timeout() -> None:
    h = TxnHarness.make()
    h.init()
    h.add(1000, 0, T0)
    n = len(h.written)
    h.advance(TIMEOUT)  # start + timeout is not yet past
    assert h.state() == "Ongoing" and len(h.written) == n
    h.advance(1)
    t = START + TIMEOUT + 1
    # Fenced (epoch 1), then aborted with transaction version 2's bump (epoch 2).
    assert h.records(n) == [
        (TXN, val(1000, 2, S.PREPARE_ABORT, [T0], last=t, start=START, ctv=2)),
        (TXN, val(1000, 2, S.COMPLETE_ABORT, last=t, start=START, ctv=2)),
    ]
    assert h.markers.calls == [(1000, 2, 0, False, (T0,))]
    # The producer finds itself fenced, whatever it tries next.
    assert h.add(1000, 0, T1).errors == {T1: E.producer_fenced}
    assert h.end(1000, 0, True) == End(E.producer_fenced)
    assert h.end(1000, 0, True, version=1) == End(E.invalid_producer_epoch)
    assert h.init(pid=1000, epoch=0) == R(E.producer_fenced)
    assert h.init() == R(E.none, 1000, 3)
    assert h.core.snapshot() == h.rebuilt().snapshot()


def test_timeout_abort_on_a_transaction_version_1_cluster() -> None:
    h = TxnHarness.make(transaction_version=1)
    h.init(timeout=1000)
    h.add(1000, 0, T0)
    h.advance(1001)
    t = START + 1001
    assert h.records(2) == [
        (TXN, val(1000, 1, S.PREPARE_ABORT, [T0], last=t, start=START, timeout=1000)),
        (TXN, val(1000, 1, S.COMPLETE_ABORT, last=t, start=START, timeout=1000)),
    ]


def test_timeout_counts_from_the_first_partition_and_stops_at_the_end() -> None:
    h = TxnHarness.make()
    h.init(timeout=1000)
    h.advance(500)
    h.add(1000, 0, T0)
    h.advance(600)
    h.add(1000, 0, T1)  # later partitions do not restart the clock
    h.advance(401)
    assert h.state() == "CompleteAbort"
    epoch = h.init(timeout=1000).producer_epoch
    assert epoch == 3  # fenced at 1, aborted at 2
    h.add(1000, epoch, T0)
    h.end(1000, epoch, True)
    h.advance(5000)
    assert h.state() == "CompleteCommit"


def test_failed_timeout_abort_is_retried_later() -> None:
    h = TxnHarness.make(abort_retry_interval_ms=10_000)
    h.init(timeout=1000)
    h.add(1000, 0, T0)
    h.appends = [E.coordinator_not_available]
    h.advance(1001)
    assert h.state() == "Ongoing" and len(h.written) == 2
    h.advance(9_999)
    assert h.state() == "Ongoing"
    h.advance(1)
    assert h.state() == "CompleteAbort"


def test_idle_transactional_id_expires_with_a_tombstone() -> None:
    h = TxnHarness.make(transactional_id_expiration_ms=10_000)
    h.init()
    h.advance(5_000)
    h.init()  # activity postpones the expiry
    h.advance(9_999)
    assert h.core.transaction(TXN) is not None
    h.advance(1)
    assert h.records()[-1] == (TXN, None)
    assert h.core.transaction(TXN) is None
    assert h.describe(TXN)[0].error is E.transactional_id_not_found
    assert h.end(1000, 1, True) == End(E.invalid_producer_id_mapping)
    assert h.core.snapshot() == h.rebuilt().snapshot() == {}
    # The id starts over with a new producer id.
    assert h.init() == R(E.none, 1001, 0)


def test_ongoing_transaction_does_not_expire() -> None:
    h = TxnHarness.make(transactional_id_expiration_ms=10_000)
    h.init(timeout=60_000)
    h.add(1000, 0, T0)
    h.advance(30_000)
    assert h.state() == "Ongoing"
    h.end(1000, 0, True)
    h.advance(9_999)
    assert h.state() == "CompleteCommit"
    h.advance(1)
    assert h.core.transaction(TXN) is None


def test_failed_expiry_is_retried() -> None:
    h = TxnHarness.make(transactional_id_expiration_ms=1000, expire_retry_interval_ms=5000)
    h.init()
    h.appends = [E.not_coordinator]
    h.advance(1000)
    assert h.core.transaction(TXN) is not None
    meta = h.core.transaction(TXN)
    assert meta is not None and meta.pending is None
    h.advance(4999)
    assert h.core.transaction(TXN) is not None
    h.advance(1)
    assert h.core.transaction(TXN) is None


def test_loading_completes_prepared_transactions_and_arms_timers() -> None:
    """After a crash between PrepareCommit and CompleteCommit, the load finishes the job."""
    h = TxnHarness.make()
    h.reload("a", val(1000, 0, S.PREPARE_COMMIT, [T0, T1], last=START - 50, start=START - 90))
    assert h.markers.calls == [(1000, 0, 0, True, (T0, T1))]
    assert h.records()[-1] == ("a", val(1000, 0, S.COMPLETE_COMMIT, last=START,
                                        start=START - 90))
    # An ongoing transaction found on load times out from its recorded start.
    h.reload("b", val(1001, 4, S.ONGOING, [T0], last=START - 10, start=START - 10,
                      timeout=1000))
    assert h.core.transaction("b") is not None
    h.advance(990)
    assert h.state("b") == "Ongoing"
    h.advance(1)
    assert h.state("b") == "CompleteAbort"
    meta = h.core.transaction("b")
    assert meta is not None and meta.producer_epoch == 6  # fenced, then bumped


def test_replay_of_everything_rebuilds_the_same_state() -> None:
    h = TxnHarness.make(transactional_id_expiration_ms=100_000)
    for i, tid in enumerate(["a", "b", "c", "d", "e"]):
        h.init(tid)
        h.add(1000 + i, 0, T0, ("u", i), tid=tid)
    h.end(1000, 0, True, tid="a")
    h.end(1001, 0, False, tid="b", version=5)
    h.init("c")  # fences c's open transaction
    h.add_offsets(1003, 0, "group", tid="d")
    h.advance(60_001)  # d and e time out
    h.init("e")
    h.advance(90_000)  # a, b and c expire (idle since their last change), d and e not yet
    live = h.core.snapshot()
    assert set(live) == {"d", "e"}
    assert live == h.rebuilt().snapshot()
