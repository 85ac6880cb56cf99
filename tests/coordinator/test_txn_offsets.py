"""Transactional offset commits through the real runtime, with both cores composed as the
broker composes them: the exact batches written to ``__consumer_offsets`` and the data
partitions, pending offsets made committed by the COMMIT marker or dropped by the ABORT,
Kafka's rule for a plain commit in between, reloads, and timeouts on the manual clock."""

from __future__ import annotations

import pytest

from kafkalite.coordinator.classic.membership import JoinRequest
from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit
from kafkalite.coordinator.results import AFTER_WRITE, PARKED
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.control import EndTxnMarker
from kafkalite.protocol.errors import ErrorCode as E
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.protocol.records import ATTR_CONTROL, ATTR_TRANSACTIONAL
from kafkalite.storage.errors import InvalidProducerEpochError

from . import harness
from .harness import Box
from .txn_runtime import GROUP, START, TOPIC, TXN, Both, check_reload

T0, T1 = (TOPIC, 0), (TOPIC, 1)


def started(h: Both, *parts: tuple[str, int], tid: str = TXN) -> tuple[int, int]:
    pid, epoch = h.init(tid)
    if parts:
        assert set(h.add(pid, epoch, *parts, tid=tid).errors.values()) == {E.none}
    assert h.add_offsets(pid, epoch, tid=tid) is E.none
    return pid, epoch


def test_txn_commit_writes_a_transactional_batch_and_stays_pending() -> None:
    h = Both.make()
    pid, epoch = started(h, T0)
    h.clock.advance(7)
    assert h.txn_commit(pid, epoch, {T0: 5, T1: 9}) == {T0: E.none, T1: E.none}
    (header, records), = h.batches(OFFSETS_TOPIC, h.offsets_partition)
    # As Kafka's coordinator writes it: transactional, the producer's id and epoch, base
    # sequence 0, the offsets as ordinary offset commit records.
    assert (header.attributes, header.producer_id, header.producer_epoch,
            header.base_sequence) == (ATTR_TRANSACTIONAL, pid, epoch, 0)
    now = START + 7
    assert records == [
        (co.OffsetCommitKey(GROUP, TOPIC, 0), co.OffsetCommitValue(5, "", now)),
        (co.OffsetCommitKey(GROUP, TOPIC, 1), co.OffsetCommitValue(9, "", now)),
    ]
    # Pending: not committed yet, and unstable to a require_stable fetch.
    assert h.fetch(T0, T1) == {T0: (-1, E.none), T1: (-1, E.none)}
    assert h.fetch(T0, T1, stable=True) == {T0: (-1, E.unstable_offset_commit),
                                            T1: (-1, E.unstable_offset_commit)}
    assert h.fetch((TOPIC, 2), stable=True) == {(TOPIC, 2): (-1, E.none)}
    check_reload(h)


def test_commit_marker_makes_pending_offsets_committed() -> None:
    h = Both.make()
    pid, epoch = started(h, T0)
    h.txn_commit(pid, epoch, {T0: 5})
    assert h.end(pid, epoch, True).error is E.none
    assert h.state() == "CompleteCommit"
    # The markers: one in the data partition and one in __consumer_offsets, through the
    # group coordinator, each a COMMIT control batch of the producer.
    for topic, p in (T0, (OFFSETS_TOPIC, h.offsets_partition)):
        header, (marker,) = h.batches(topic, p)[-1]
        assert (header.attributes, header.producer_id, header.producer_epoch) == (
            ATTR_CONTROL | ATTR_TRANSACTIONAL, pid, epoch)
        assert marker == EndTxnMarker(True, 0)
    assert h.fetch(T0, stable=True) == {T0: (5, E.none)}
    check_reload(h)


def test_abort_marker_drops_pending_offsets() -> None:
    h = Both.make()
    h.commit({T0: 2})
    pid, epoch = started(h)
    h.txn_commit(pid, epoch, {T0: 5})
    assert h.end(pid, epoch, False).error is E.none
    _header, (marker,) = h.batches(OFFSETS_TOPIC, h.offsets_partition)[-1]
    assert marker == EndTxnMarker(False, 0)
    assert h.fetch(T0, stable=True) == {T0: (2, E.none)}
    check_reload(h)


def test_a_plain_commit_after_the_transactional_one_is_kept() -> None:
    """Kafka keeps the most recent committed offset: a plain commit written after the
    transactional record stays when the transaction commits."""
    h = Both.make()
    pid, epoch = started(h)
    h.txn_commit(pid, epoch, {T0: 5, T1: 6})
    h.commit({T0: 7})
    assert h.fetch(T0, T1, stable=True) == {T0: (-1, E.unstable_offset_commit),
                                            T1: (-1, E.unstable_offset_commit)}
    h.end(pid, epoch, True)
    assert h.fetch(T0, T1) == {T0: (7, E.none), T1: (6, E.none)}
    check_reload(h)


def test_of_two_transactions_the_later_record_wins() -> None:
    h = Both.make()
    a_pid, a_epoch = started(h, tid="a")
    b_pid, b_epoch = started(h, tid="b")
    h.txn_commit(a_pid, a_epoch, {T0: 10})
    h.txn_commit(b_pid, b_epoch, {T0: 20, T1: 21})
    h.end(b_pid, b_epoch, True, tid="b")
    # a's record is older than b's, now committed: a's COMMIT leaves b's offset.
    assert h.fetch(T0, stable=True) == {T0: (-1, E.unstable_offset_commit)}
    again = check_reload(h)
    for x in (h, again):
        x.end(a_pid, a_epoch, True, tid="a")
        assert x.fetch(T0, T1, stable=True) == {T0: (20, E.none), T1: (21, E.none)}


def test_an_offset_tombstone_drops_the_pending_offset() -> None:
    h = Both.make()
    pid, epoch = started(h)
    h.txn_commit(pid, epoch, {T0: 5})
    # OffsetDelete writes a tombstone for a partition with only a pending offset, as Kafka.
    assert h.run(h.core.delete_offsets(h.now, GROUP, [(TOPIC, (0,))])) == (
        E.none, [(TOPIC, [(0, E.none)])])
    (_h, records) = h.batches(OFFSETS_TOPIC, h.offsets_partition)[-1]
    assert records == [(co.OffsetCommitKey(GROUP, TOPIC, 0), None)]
    assert h.fetch(T0, stable=True) == {T0: (-1, E.none)}
    h.end(pid, epoch, True)
    assert h.fetch(T0) == {T0: (-1, E.none)}
    check_reload(h)


def test_deleting_the_group_tombstones_pending_partitions_too() -> None:
    h = Both.make()
    h.commit({T0: 1})
    pid, epoch = started(h)
    h.txn_commit(pid, epoch, {T0: 5, T1: 6})
    assert h.run(h.core.delete_group(h.now, GROUP)) is E.none
    (_h, records) = h.batches(OFFSETS_TOPIC, h.offsets_partition)[-1]
    assert records == [(co.OffsetCommitKey(GROUP, TOPIC, 0), None),
                       (co.OffsetCommitKey(GROUP, TOPIC, 1), None),
                       (co.GroupMetadataKey(GROUP), None)]
    h.end(pid, epoch, True)
    assert h.fetch(T0, T1) == {T0: (-1, E.none), T1: (-1, E.none)}


def test_retention_spares_partitions_and_groups_with_pending_offsets() -> None:
    h = Both.make()
    h.commit({T0: 1, T1: 2})
    pid, epoch = started(h)
    h.txn_commit(pid, epoch, {T0: 5})
    h.clock.advance(h.core.offsets.retention_ms + 1)
    h.run(h.core.expire_offsets(h.now))
    # T1's offset expired; T0's waits for its transaction; the group stays.
    assert h.fetch(T0, T1) == {T0: (1, E.none), T1: (-1, E.none)}
    assert h.core.group(GROUP) is not None
    h.end(pid, epoch, True)
    assert h.fetch(T0) == {T0: (5, E.none)}


def test_open_transaction_survives_a_restart_and_commits_after_it() -> None:
    h = Both.make()
    h.commit({T0: 1})
    pid, epoch = started(h, T0)
    h.txn_commit(pid, epoch, {T0: 5})
    again = check_reload(h)
    assert again.state() == "Ongoing"
    assert again.fetch(T0, stable=True) == {T0: (-1, E.unstable_offset_commit)}
    assert again.fetch(T0) == {T0: (1, E.none)}
    assert again.end(pid, epoch, True).error is E.none
    assert again.fetch(T0, stable=True) == {T0: (5, E.none)}
    check_reload(again)


def test_prepared_commit_is_completed_on_load() -> None:
    """A restart between PrepareCommit and the markers: loading completes it, markers
    included, and the pending offsets become committed."""
    h = Both.make()
    pid, epoch = started(h, T0)
    h.txn_commit(pid, epoch, {T0: 5})
    # The group coordinator's partition is loading when the markers go out: retried.
    h.runtime.hold_partition(OFFSETS_TOPIC, h.offsets_partition, 60_000, moved=False)
    assert h.end(pid, epoch, True).error is E.none
    assert h.state() == "PrepareCommit"
    again = h.reload()
    assert again.state() == "CompleteCommit"
    assert again.fetch(T0, stable=True) == {T0: (5, E.none)}
    markers = [m for hd, m in again.batches(OFFSETS_TOPIC, again.offsets_partition)
               if hd.attributes & ATTR_CONTROL]
    assert markers == [[EndTxnMarker(True, 0)]]


def test_open_transaction_is_aborted_on_its_timeout() -> None:
    h = Both.make()
    h.commit({T0: 1})
    pid, epoch = started(h, T0)
    h.txn_commit(pid, epoch, {T0: 5})
    h.advance(60_000)
    assert h.state() == "Ongoing"
    h.advance(1)
    # Fenced (epoch + 1), then aborted with transaction version 2's bump (epoch + 2): an
    # ABORT marker in both partitions, the pending offset dropped.
    assert h.state() == "CompleteAbort"
    for topic, p in (T0, (OFFSETS_TOPIC, h.offsets_partition)):
        header, (marker,) = h.batches(topic, p)[-1]
        assert (header.producer_id, header.producer_epoch, marker) == (
            pid, epoch + 2, EndTxnMarker(False, 0))
    assert h.fetch(T0, stable=True) == {T0: (1, E.none)}
    # The old producer is fenced.
    assert h.end(pid, epoch, True).error is E.producer_fenced
    check_reload(h)


def test_txn_commit_checks_the_group_as_kafka() -> None:
    h = Both.make()
    pid, epoch = started(h)
    # No such group: only generation -1 is taken (it becomes a simple group).
    assert h.txn_commit(pid, epoch, {T0: 1}, group="new", generation=3) == {
        T0: E.illegal_generation}
    # A group with a member: member, instance and generation are checked (v3+).
    box = Box()
    resp = h.run(h.core.join(h.now, box, JoinRequest(
        group_id="live", member_id="", group_instance_id="i1",
        require_known_member_id=False, client_id="c", client_host="/h",
        rebalance_timeout_ms=1000, session_timeout_ms=1000, protocol_type="consumer",
        protocols=[("range", b"")], reason="")))
    if resp is not PARKED:
        box(resp)
    h.advance(1)
    assert box.done
    member = box.value.member_id
    assert h.core.group("live").generation == 1
    # In CompletingRebalance: transactional commits are taken (plain ones are not).
    assert h.core.group("live").state.value == "CompletingRebalance"
    assert h.txn_commit(pid, epoch, {T0: 1}, group="live", generation=1, member=member,
                        instance="i1") == {T0: E.none}
    assert h.txn_commit(pid, epoch, {T0: 1}, group="live", generation=0, member=member,
                        instance="i1") == {T0: E.illegal_generation}
    assert h.txn_commit(pid, epoch, {T0: 1}, group="live", generation=1, member="other",
                        instance="i1") == {T0: E.fenced_instance_id}
    assert h.txn_commit(pid, epoch, {T0: 1}, group="live", generation=1, member="other") == {
        T0: E.unknown_member_id}
    # Without member information (v0-2) a transactional commit is taken in any state.
    assert h.txn_commit(pid, epoch, {T0: 2}, group="live") == {T0: E.none}


def test_txn_commit_of_a_fenced_epoch_is_refused_by_the_log(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime maps the log's refusal of an older epoch (Kafka's storage check of a
    coordinator's transactional append) to INVALID_PRODUCER_EPOCH; nothing is pending."""
    h = Both.make()
    pid, epoch = started(h)
    monkeypatch.setitem(harness.FAILURES, E.invalid_producer_epoch,
                        InvalidProducerEpochError("older epoch"))
    h.logs.fail_with = E.invalid_producer_epoch
    req = CommitRequest(GROUP, topics=[(TOPIC, [PartitionCommit(0, 1)])], api_version=3)
    out = h.core.commit_txn_offsets(h.now, req, pid, epoch)
    assert out.response is AFTER_WRITE
    assert h.run(out) == {T0: E.invalid_producer_epoch}
    h.logs.fail_with = None
    assert h.fetch(T0, stable=True) == {T0: (-1, E.none)}


def test_txn_commit_of_a_consumer_group_member() -> None:
    """A KIP-848 group: its member and member epoch are checked (another epoch is
    ILLEGAL_GENERATION, as validateTransactionalOffsetCommit maps a stale member epoch);
    no simple group is made beside it."""
    h = harness.Harness.make()
    h.create_topic("foo", 2)
    res = h.cg("m1", 0, names=["foo"])
    assert res.error is E.none and res.member_epoch == 1

    def commit(member: str, epoch: int) -> dict[tuple[str, int], E]:
        req = CommitRequest(harness.GROUP, member, None, epoch,
                            topics=[("foo", [PartitionCommit(0, 4)])], api_version=3)
        out: dict[tuple[str, int], E] = h.run(h.core.commit_txn_offsets(h.now, req, 77, 0))
        return out

    assert commit("m1", 0) == {("foo", 0): E.illegal_generation}
    assert commit("m1", 2) == {("foo", 0): E.illegal_generation}
    assert commit("nobody", 1) == {("foo", 0): E.unknown_member_id}
    assert commit("m1", 1) == {("foo", 0): E.none}
    assert h.core.group(harness.GROUP) is None
    assert h.core.consumer_group(harness.GROUP) is not None
    assert h.core.pending.has(harness.GROUP, "foo", 0, h.core.partition_for(harness.GROUP))
