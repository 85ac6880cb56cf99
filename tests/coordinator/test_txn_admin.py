"""DescribeTransactions and ListTransactions."""

from __future__ import annotations

from kafkalite.coordinator.txn.results import DescribedTransaction as D
from kafkalite.coordinator.txn.results import ListedTransaction as L
from kafkalite.coordinator.txn.results import ListTransactionsResult as LR
from kafkalite.protocol.errors import ErrorCode as E

from .txn_harness import START, TIMEOUT, TxnHarness


def three() -> TxnHarness:
    """txn-a Empty (pid 1000), txn-b Ongoing since START+100 (pid 1001), txn-c
    CompleteCommit (pid 1002)."""
    h = TxnHarness.make()
    h.init("txn-a")
    h.init("txn-b")
    h.init("txn-c")
    h.wait(100)
    h.add(1001, 0, ("t", 2), ("t", 0), ("s", 5), tid="txn-b")
    h.add(1002, 0, ("t", 0), tid="txn-c")
    h.end(1002, 0, True, tid="txn-c")
    h.wait(1000)
    return h


def test_describe() -> None:
    h = three()
    assert h.describe("txn-b", "txn-a", "", "nobody") == [
        D(E.none, "txn-b", "Ongoing", TIMEOUT, START + 100, 1001, 0,
          [("s", [5]), ("t", [0, 2])]),
        D(E.none, "txn-a", "Empty", TIMEOUT, -1, 1000, 0, []),
        D(E.invalid_request, ""),
        D(E.transactional_id_not_found, "nobody"),
    ]
    p = h.core.partition_for("txn-a")
    h.core.begin_load(p)
    assert h.describe("txn-a") == [D(E.coordinator_load_in_progress, "txn-a")]
    h.core.unload(p)
    assert h.describe("txn-a") == [D(E.not_coordinator, "txn-a")]


def listed(h: TxnHarness, **kw: object) -> LR:
    res = h.core.list_transactions(h.now, **kw).response  # type: ignore[arg-type]
    assert isinstance(res, LR)
    res.transactions.sort(key=lambda t: t.transactional_id)
    return res


def test_list_with_filters() -> None:
    h = three()
    a, b, c = L("txn-a", 1000, "Empty"), L("txn-b", 1001, "Ongoing"), \
        L("txn-c", 1002, "CompleteCommit")
    assert listed(h) == LR(E.none, [], [a, b, c])
    assert listed(h, state_filters=["Ongoing", "Bogus"]) == LR(E.none, ["Bogus"], [b])
    assert listed(h, state_filters=["Bogus"]) == LR(E.none, ["Bogus"], [])
    assert listed(h, producer_id_filters=[1000, 1002, 7]) == LR(E.none, [], [a, c])
    # Running longer than the filter; Empty has no start (-1), so it always qualifies.
    assert listed(h, duration_filter_ms=999) == LR(E.none, [], [a, b, c])
    assert listed(h, duration_filter_ms=1000) == LR(E.none, [], [a])
    # The whole id must match the pattern.
    assert listed(h, transactional_id_pattern="txn-[bc]") == LR(E.none, [], [b, c])
    assert listed(h, transactional_id_pattern="txn") == LR(E.none, [], [])
    assert listed(h, transactional_id_pattern="") == LR(E.none, [], [a, b, c])
    assert listed(h, transactional_id_pattern="(") == LR(E.invalid_regular_expression)


def test_list_while_loading() -> None:
    h = three()
    h.core.begin_load(0)
    assert listed(h) == LR(E.coordinator_load_in_progress)
