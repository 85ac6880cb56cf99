"""AddPartitionsToTxn, AddOffsetsToTxn and EndTxn (transaction versions 0 and 2): records,
answers, markers, retries and bad input."""

from __future__ import annotations

from kafkalite.coordinator.results import PARKED
from kafkalite.coordinator.txn.results import AddPartitionsResult
from kafkalite.coordinator.txn.results import EndTxnResult as End
from kafkalite.coordinator.txn.state import TxnState as S
from kafkalite.protocol.consumer_offsets import group_partition
from kafkalite.protocol.errors import ErrorCode as E

from .harness import Box
from .txn_harness import START, TXN, TxnHarness, val

T0, T1, T2 = ("t", 0), ("t", 1), ("u", 0)


def ready(**cfg: int) -> TxnHarness:
    h = TxnHarness.make(**cfg)
    h.init()
    h.wait(100)
    return h


def test_add_partitions_writes_ongoing_then_only_what_is_new() -> None:
    h = ready()
    assert h.add(1000, 0, T0, T2) == AddPartitionsResult(TXN, {T0: E.none, T2: E.none})
    t = START + 100
    assert h.records(1) == [(TXN, val(1000, 0, S.ONGOING, [T0, T2], last=t, start=t))]
    h.wait(5)
    h.add(1000, 0, T0)  # already in: no record
    assert len(h.written) == 2
    h.add(1000, 0, T0, T1)
    assert h.records(2) == [(TXN, val(1000, 0, S.ONGOING, [T0, T1, T2], last=t + 5, start=t))]


def test_add_partitions_bad_input() -> None:
    h = ready()
    assert h.add(1000, 0, T0, tid="").errors == {T0: E.invalid_request}
    assert h.add(1000, 0, T0, tid="nobody").errors == {T0: E.invalid_producer_id_mapping}
    assert h.add(999, 0, T0).errors == {T0: E.invalid_producer_id_mapping}
    # A stale (or future) epoch: PRODUCER_FENCED from v2, INVALID_PRODUCER_EPOCH before.
    assert h.add(1000, 1, T0, T1).errors == {T0: E.producer_fenced, T1: E.producer_fenced}
    assert h.add(1000, 1, T0, version=1).errors == {T0: E.invalid_producer_epoch}
    assert len(h.written) == 1 and h.state() == "Empty"


def test_add_partitions_while_completing_is_concurrent() -> None:
    h = ready()
    h.add(1000, 0, T0)
    h.markers.errors[T0] = [E.not_leader_or_follower]
    h.end(1000, 0, True)
    assert h.state() == "PrepareCommit"
    assert h.add(1000, 0, T1).errors == {T1: E.concurrent_transactions}
    assert h.add_offsets(1000, 0, "g") is E.concurrent_transactions
    assert h.end(1000, 0, True) == End(E.concurrent_transactions)
    assert h.end(1000, 0, False) == End(E.concurrent_transactions)  # pending completion
    h.advance(100)
    assert h.state() == "CompleteCommit"
    assert h.end(1000, 0, False) == End(E.invalid_txn_state)


def test_add_offsets_adds_the_groups_offsets_partition() -> None:
    h = ready()
    assert h.add_offsets(1000, 0, "grp") is E.none
    tp = ("__consumer_offsets", group_partition("grp", 8))
    t = START + 100
    assert h.records(1) == [(TXN, val(1000, 0, S.ONGOING, [tp], last=t, start=t))]
    assert h.add_offsets(1000, 3, "grp") is E.producer_fenced
    assert h.add_offsets(1000, 3, "grp", version=1) is E.invalid_producer_epoch
    assert h.add_offsets(1000, 0, "grp", tid="nobody") is E.invalid_producer_id_mapping
    h.end(1000, 0, True)
    assert h.markers.calls == [(1000, 0, 0, True, (tp,))]


def test_commit_prepares_writes_markers_then_completes() -> None:
    h = ready()
    h.add(1000, 0, T0, T2)
    h.wait(50)
    box = Box()
    out = h.core.end_txn(h.now, box, transactional_id=TXN, producer_id=1000,
                         producer_epoch=0, committed=True, version=3)
    assert out.response is PARKED and len(out.writes) == 1
    h.run(out)
    assert box.value == End(E.none)  # no producer id or epoch before v5
    t, s = START + 150, START + 100
    assert h.records(2) == [
        (TXN, val(1000, 0, S.PREPARE_COMMIT, [T0, T2], last=t, start=s)),
        (TXN, val(1000, 0, S.COMPLETE_COMMIT, last=t, start=s)),
    ]
    assert h.markers.calls == [(1000, 0, 0, True, (T0, T2))]
    # The next transaction starts from CompleteCommit.
    h.wait(10)
    h.add(1000, 0, T1)
    assert h.records(4) == [(TXN, val(1000, 0, S.ONGOING, [T1], last=t + 10, start=t + 10))]
    assert h.core.snapshot() == h.rebuilt().snapshot()


def test_abort_and_retries_after_completion_version_0() -> None:
    h = ready()
    h.add(1000, 0, T0)
    assert h.end(1000, 0, False) == End(E.none)
    assert [v.transaction_status for _t, v in h.records(2) if v] == [S.PREPARE_ABORT,
                                                                     S.COMPLETE_ABORT]
    assert h.markers.calls == [(1000, 0, 0, False, (T0,))]
    n = len(h.written)
    assert h.end(1000, 0, False) == End(E.none)  # a retry: answered, nothing written
    assert h.end(1000, 0, True) == End(E.invalid_txn_state)
    assert len(h.written) == n and len(h.markers.calls) == 1


def test_end_txn_bad_input() -> None:
    h = ready()
    assert h.end(1000, 0, True, tid="nobody") == End(E.invalid_producer_id_mapping)
    assert h.end(1000, 0, True, tid="") == End(E.invalid_request)
    assert h.end(1000, 0, True) == End(E.invalid_txn_state)  # Empty: nothing to end
    assert h.end(1000, 0, False) == End(E.invalid_txn_state)
    h.add(1000, 0, T0)
    assert h.end(1001, 0, True) == End(E.invalid_producer_id_mapping)
    assert h.end(1000, 1, True) == End(E.producer_fenced)
    assert h.end(1000, 1, True, version=1) == End(E.invalid_producer_epoch)
    assert len(h.written) == 2 and h.state() == "Ongoing"


def test_prepare_append_failure_returns_the_error_and_keeps_ongoing() -> None:
    h = ready()
    h.add(1000, 0, T0)
    h.appends = [E.coordinator_not_available]
    assert h.end(1000, 0, True) == End(E.coordinator_not_available)
    meta = h.core.transaction(TXN)
    assert meta is not None and meta.pending is None and h.state() == "Ongoing"
    assert h.markers.calls == []
    assert h.end(1000, 0, True) == End(E.none)
    assert h.state() == "CompleteCommit"


def test_marker_errors_retry_skip_and_cancel() -> None:
    h = ready()
    h.add(1000, 0, T0, T1, T2)
    h.markers.errors = {T0: [E.not_leader_or_follower, E.kafka_storage_error],
                        T1: [E.unknown_topic_or_partition]}
    assert h.end(1000, 0, True) == End(E.none)
    assert h.state() == "PrepareCommit"
    # Describe shows the partitions still waiting for a marker.
    assert h.describe(TXN)[0].topics == [("t", [0])]
    h.advance(99)
    assert len(h.markers.calls) == 1
    h.advance(1)
    h.advance(100)
    assert [c[4] for c in h.markers.calls] == [(T0, T1, T2), (T0,), (T0,)]
    assert h.state() == "CompleteCommit"


def test_fatal_marker_error_leaves_the_transaction_prepared_until_reload() -> None:
    h = ready()
    h.add(1000, 0, T0)
    h.markers.errors = {T0: [E.invalid_producer_epoch]}
    assert h.end(1000, 0, False) == End(E.none)
    h.advance(10_000)
    assert h.state() == "PrepareAbort" and len(h.markers.calls) == 1
    assert h.init().error is E.concurrent_transactions
    # Loading the partition again completes it: markers are written again.
    h.reload(coordinator_epoch=1)
    assert h.markers.calls[1:] == [(1000, 0, 1, False, (T0,))]
    assert h.state() == "CompleteAbort"
    assert h.records()[-1] == (TXN, val(1000, 0, S.COMPLETE_ABORT, last=h.now,
                                        start=START + 100))
    assert h.init().producer_epoch == 1


def test_completion_record_failure_is_retried() -> None:
    h = ready()
    h.add(1000, 0, T0)
    n = len(h.written)
    h.appends = [E.none, E.coordinator_not_available]
    assert h.end(1000, 0, True) == End(E.none)
    assert len(h.written) == n + 1 and h.state() == "PrepareCommit"
    meta = h.core.transaction(TXN)
    assert meta is not None and meta.pending is not None  # kept for the retry
    assert h.init().error is E.concurrent_transactions
    h.advance(100)
    assert h.state() == "CompleteCommit" and len(h.markers.calls) == 1
    assert h.records(n) == [
        (TXN, val(1000, 0, S.PREPARE_COMMIT, [T0], last=START + 100, start=START + 100)),
        (TXN, val(1000, 0, S.COMPLETE_COMMIT, last=START + 100, start=START + 100)),
    ]


def test_completion_record_not_coordinator_is_left_to_the_next_load() -> None:
    h = ready()
    h.add(1000, 0, T0)
    h.appends = [E.none, E.not_coordinator]
    assert h.end(1000, 0, True) == End(E.none)
    h.advance(1000)
    assert h.state() == "PrepareCommit"
    h.reload()
    assert h.state() == "CompleteCommit"
