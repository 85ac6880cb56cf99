"""InitProducerId with a transactional id: new ids, epoch bumps, fencing, KIP-360."""

from __future__ import annotations

from kafkalite.coordinator.txn.results import InitProducerIdResult as R
from kafkalite.coordinator.txn.state import TxnState as S
from kafkalite.protocol.errors import ErrorCode as E

from .txn_harness import START, TIMEOUT, TXN, TxnHarness, val

T0 = ("t", 0)


def test_new_transactional_id_gets_a_producer_id_and_epoch_0() -> None:
    h = TxnHarness.make()
    assert h.init() == R(E.none, 1000, 0)
    assert h.records() == [(TXN, val(1000, 0, S.EMPTY, last=START))]
    # Again: the same producer id, the next epoch (the previous producer is fenced).
    h.wait(5)
    assert h.init() == R(E.none, 1000, 1)
    assert h.records(1) == [(TXN, val(1000, 1, S.EMPTY, last=START + 5))]
    assert h.core.snapshot() == h.rebuilt().snapshot()


def test_bad_input_changes_nothing() -> None:
    h = TxnHarness.make(max_timeout_ms=1000)
    assert h.init("") == R(E.invalid_request)
    assert h.init(timeout=1001) == R(E.invalid_transaction_timeout)
    assert h.init(timeout=0) == R(E.invalid_transaction_timeout)
    assert h.init(pid=5) == R(E.invalid_request)  # an id without an epoch
    assert h.init(epoch=5) == R(E.invalid_request)
    assert h.written == [] and h.core.transaction(TXN) is None
    assert h.init(timeout=1000) == R(E.none, 1000, 0)


def test_without_transactional_id_a_fresh_idempotent_producer() -> None:
    h = TxnHarness.make()
    assert h.init(None) == R(E.none, 1000, 0)
    assert h.init(None, pid=1000, epoch=0) == R(E.none, 1001, 0)
    assert h.written == []


def test_not_coordinator_and_loading() -> None:
    h = TxnHarness.make()
    p = h.core.partition_for(TXN)
    h.core.unload(p)
    assert h.init() == R(E.not_coordinator)
    h.core.begin_load(p)
    assert h.init() == R(E.coordinator_load_in_progress)
    h.run(h.core.finish_load(p, h.now))
    assert h.init() == R(E.none, 1000, 0)


def test_ongoing_transaction_is_aborted_first_with_a_fenced_epoch() -> None:
    """A transaction whose partitions the client added itself (AddPartitionsToTxn v0-v3,
    client transaction version 0) on a transaction.version 2 cluster: the fence bumps the
    epoch and the abort, run at the transaction's own version, does not bump again, as a
    real Kafka 4.4 answers (tests/differential, producer-fencing)."""
    h = TxnHarness.make()
    h.init()
    h.wait(10)
    h.add(1000, 0, T0)
    h.wait(10)
    n = len(h.written)
    assert h.init() == R(E.concurrent_transactions)
    started = START + 10
    assert h.records(n) == [
        (TXN, val(1000, 1, S.PREPARE_ABORT, [T0], last=h.now, start=started)),
        (TXN, val(1000, 1, S.COMPLETE_ABORT, last=h.now, start=started)),
    ]
    assert h.markers.calls == [(1000, 1, 0, False, (T0,))]
    # The old producer is fenced; the retried InitProducerId gets the next epoch.
    assert h.add(1000, 0, ("t", 1)).errors == {("t", 1): E.producer_fenced}
    assert h.end(1000, 0, True).error is E.producer_fenced
    assert h.end(1000, 0, True, version=1).error is E.invalid_producer_epoch
    assert h.init() == R(E.none, 1000, 2)
    assert h.core.snapshot() == h.rebuilt().snapshot()


def test_fencing_on_a_transaction_version_1_cluster_bumps_once() -> None:
    h = TxnHarness.make(transaction_version=1)
    h.init()
    h.add(1000, 0, T0)
    n = len(h.written)
    assert h.init() == R(E.concurrent_transactions)
    assert h.records(n) == [
        (TXN, val(1000, 1, S.PREPARE_ABORT, [T0], last=START, start=START)),
        (TXN, val(1000, 1, S.COMPLETE_ABORT, last=START, start=START)),
    ]
    assert h.init() == R(E.none, 1000, 2)


def test_fencing_on_a_transaction_version_0_cluster_writes_value_v0() -> None:
    h = TxnHarness.make(transaction_version=0)
    h.init()
    _p, _k, value = h.written[0]
    assert value is not None and value.version == 0
    assert value.previous_producer_id == -1  # v0 cannot carry it


def test_failed_fence_keeps_the_old_producer_fenced_without_bumping_again() -> None:
    h = TxnHarness.make(transaction_version=1)
    h.init()
    h.add(1000, 0, T0)
    n = len(h.written)
    h.appends = [E.not_coordinator]
    assert h.init() == R(E.not_coordinator)
    assert len(h.written) == n and h.state() == "Ongoing"
    meta = h.core.transaction(TXN)
    assert meta is not None and meta.has_failed_epoch_fence and meta.producer_epoch == 1
    assert h.add(1000, 0, ("t", 1)).errors == {("t", 1): E.producer_fenced}
    # The next attempt fences at the same epoch, not one more.
    assert h.init() == R(E.concurrent_transactions)
    assert h.records(n)[0] == (TXN, val(1000, 1, S.PREPARE_ABORT, [T0], last=START,
                                        start=START))


def test_prepared_transaction_answers_concurrent_transactions() -> None:
    h = TxnHarness.make()
    h.init()
    h.add(1000, 0, T0)
    h.markers.errors[T0] = [E.not_leader_or_follower]
    h.end(1000, 0, True)
    assert h.state() == "PrepareCommit"
    n = len(h.written)
    assert h.init() == R(E.concurrent_transactions)
    assert len(h.written) == n
    h.advance(100)  # the marker is retried, the transaction completes
    assert h.state() == "CompleteCommit"
    assert h.init() == R(E.none, 1000, 1)


def test_kip360_recovery_with_the_expected_epoch() -> None:
    h = TxnHarness.make()
    h.init()
    assert h.init(pid=1000, epoch=0) == R(E.none, 1000, 1)
    # A retry whose answer was lost: the same epoch again, no second bump.
    assert h.init(pid=1000, epoch=0) == R(E.none, 1000, 1)
    assert h.records(1) == [(TXN, val(1000, 1, S.EMPTY, last=START))] * 2
    # An epoch that is neither the current nor the last one is fenced.
    assert h.init(pid=1000, epoch=5) == R(E.producer_fenced)
    assert h.init(pid=1000, epoch=5, version=3) == R(E.invalid_producer_epoch)
    # Another producer id is fenced too.
    assert h.init(pid=77, epoch=1) == R(E.producer_fenced)
    assert len(h.written) == 3


def test_kip360_recovery_after_a_reload_forgets_the_last_epoch() -> None:
    """Records do not carry the last epoch: a retry spanning a reload is fenced (Kafka)."""
    h = TxnHarness.make()
    h.init()
    h.init(pid=1000, epoch=0)
    h.reload()
    assert h.init(pid=1000, epoch=0) == R(E.producer_fenced)
    assert h.init(pid=1000, epoch=1) == R(E.none, 1000, 2)


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    h = TxnHarness.make(first_pid=1001)
    h.reload(TXN, val(1000, 32766, S.COMPLETE_COMMIT, last=START, start=START - 5))
    n = len(h.written)
    assert h.init(pid=1000, epoch=32766) == R(E.none, 1001, 0)
    assert h.records(n) == [(TXN, val(1001, 0, S.EMPTY, last=START, prev=1000))]
    meta = h.core.transaction(TXN)
    assert meta is not None and meta.last_producer_epoch == 32766
    # A retry naming the previous id at its exhausted epoch gets the new id again.
    assert h.init(pid=1000, epoch=32766) == R(E.none, 1001, 0)
    assert h.init(pid=1000, epoch=5) == R(E.producer_fenced)


def test_exhausted_epoch_without_expected_rotates_too() -> None:
    h = TxnHarness.make(first_pid=1001)
    h.reload(TXN, val(1000, 32766, S.EMPTY, last=START))
    assert h.init() == R(E.none, 1001, 0)
    assert h.records()[-1] == (TXN, val(1001, 0, S.EMPTY, last=START, prev=1000))


def test_producer_id_allocation_failure() -> None:
    h = TxnHarness.make()

    def broken() -> int:
        raise OSError("disk full")

    h.core.store._allocate = broken
    assert h.init() == R(E.unknown_server_error)
    assert h.init(None) == R(E.unknown_server_error)
    assert h.written == []


def test_timeout_in_the_record_and_the_next_init_may_change_it() -> None:
    h = TxnHarness.make()
    h.init(timeout=TIMEOUT)
    h.init(timeout=5000)
    assert h.records(1) == [(TXN, val(1000, 1, S.EMPTY, last=START, timeout=5000))]
