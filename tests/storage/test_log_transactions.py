"""Transactions in a partition log: producer rules, markers, the last stable offset, the
aborted-transaction index, snapshots and recovery (no broker, fake clock)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from aiokafka.record.default_records import DefaultRecordBatch

from kafkalite.protocol.control import end_txn_marker_batch, read_end_txn_marker
from kafkalite.protocol.records import (
    ATTR_TRANSACTIONAL,
    NewRecord,
    build_batch,
    decode_batch,
    iter_batch_headers,
)
from kafkalite.storage.errors import (
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from kafkalite.storage.log import PartitionLog
from kafkalite.storage.log_config import LogConfig
from kafkalite.storage.producer_state import (
    AppendOrigin,
    ProducerStateTable,
    decode_snapshot,
    encode_snapshot,
)
from kafkalite.storage.txn_index import AbortedTxn

T0 = 1_700_000_000_000
A, B, C = 1000, 2000, 3000  # producer ids


class Clock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def make(tmp_path: Path, **cfg: object) -> PartitionLog:
    return PartitionLog(tmp_path / "t-0", "t", 0, LogConfig(**cfg),  # type: ignore[arg-type]
                        clock=Clock())


def txn(pid: int, seq: int, *keys: str, epoch: int = 0, transactional: bool = True) -> bytes:
    return build_batch([NewRecord(k.encode(), b"v" * 30, T0) for k in keys], timestamp=T0,
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       attributes=ATTR_TRANSACTIONAL if transactional else 0)


def plain(*keys: str) -> bytes:
    return build_batch([NewRecord(k.encode(), b"p" * 30, T0) for k in keys], timestamp=T0)


def committed_view(plog: PartitionLog, start: int = 0) -> list[str]:
    """What a read_committed consumer delivers, by the Java client's algorithm: fetch to
    the LSO with the aborted list, skip transactional batches of a producer from the first
    offset of its aborted transaction until its ABORT marker, never show markers."""
    out: list[str] = []
    offset = start
    while offset < plog.last_stable_offset:
        data = plog.read(offset, 300, plog.last_stable_offset)
        assert data, f"no progress at {offset}"
        heads = list(iter_batch_headers(data))
        upper = heads[-1][1].last_offset + 1
        aborted = sorted(plog.aborted_transactions(offset, upper), key=lambda t: t.first_offset)
        skipping: set[int] = set()
        for pos, h in heads:
            while aborted and aborted[0].first_offset <= h.last_offset:
                skipping.add(aborted.pop(0).producer_id)
            if h.is_control:
                marker = read_end_txn_marker(data[pos : pos + h.size])
                if marker is not None and not marker.commit:
                    skipping.discard(h.producer_id)
            elif not (h.is_transactional and h.producer_id in skipping):
                _h, recs = decode_batch(data, pos)
                out += [r.key.decode() for r in recs if r.key and r.offset >= offset]
            offset = h.last_offset + 1
    return out


def uncommitted_view(plog: PartitionLog) -> list[str]:
    return [r.key.decode() for b in plog.iter_batches(0)
            for h, recs in [decode_batch(b)] if not h.is_control for r in recs if r.key]


def test_lso_follows_the_earliest_open_transaction(tmp_path: Path) -> None:
    log = make(tmp_path)
    log.append(plain("p0"))
    assert log.last_stable_offset == 1
    assert log.append(txn(A, 0, "a1", "a2")) == (1, 2)
    assert log.last_stable_offset == 1
    log.append(plain("p3"))
    assert log.append(txn(B, 0, "b4")) == (4, 4)
    assert log.append(txn(A, 2, "a5")) == (5, 5)
    assert log.last_stable_offset == 1 and log.high_watermark == 6
    assert log.has_ongoing_transaction(A) and log.has_ongoing_transaction(B)
    # A aborts: B still holds the LSO at its first offset; the index says so.
    assert log.append_control_marker(A, 0, 7, commit=False) == 6
    assert log.last_stable_offset == 4
    assert log.active.txn_index.entries == [AbortedTxn(A, 1, 6, 4)]
    assert log.append_control_marker(B, 0, 7, commit=True) == 7
    assert log.last_stable_offset == log.log_end_offset == 8
    assert not log.has_ongoing_transaction(A)
    assert committed_view(log) == ["p0", "p3", "b4"]
    assert uncommitted_view(log) == ["p0", "a1", "a2", "p3", "b4", "a5"]
    # The index file is Kafka's: version 0, pid, first, last, LSO; 34 bytes each.
    raw = (tmp_path / "t-0" / f"{0:020d}.txnindex").read_bytes()
    assert raw == struct.pack(">hqqqq", 0, A, 1, 6, 4)
    log.close()


def test_marker_batch_is_kafkas_end_transaction_marker(tmp_path: Path) -> None:
    log = make(tmp_path, log_append_time=False)
    log.append(txn(A, 0, "a"))
    offset = log.append_control_marker(A, 3, coordinator_epoch=42, commit=True)
    raw = log.read(offset, 1 << 20)
    b = DefaultRecordBatch(raw)  # an independent decoder
    assert b.validate_crc() and b.is_control_batch and b.is_transactional
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (A, 3, -1)
    assert (b.base_offset, b.compression_type, b.first_timestamp) == (offset, 0, T0)
    (rec,) = list(b)
    assert rec.key == struct.pack(">hh", 0, 1)  # version 0, COMMIT
    assert rec.value == struct.pack(">hi", 0, 42)  # version 0, coordinator epoch
    assert rec.headers == [] and rec.timestamp == T0
    abort = log.append_control_marker(A, 3, coordinator_epoch=42, commit=False)
    (rec,) = list(DefaultRecordBatch(log.read(abort, 1 << 20)))
    assert rec.key == struct.pack(">hh", 0, 0)  # ABORT
    log.close()


def test_producer_rules_of_transactional_batches(tmp_path: Path) -> None:
    log = make(tmp_path)
    log.append(txn(A, 0, "a0", "a1", epoch=2))
    # A retry of the same batch gets its first offsets back, nothing is written.
    with pytest.raises(DuplicateSequenceError) as dup:
        log.append(txn(A, 0, "a0", "a1", epoch=2))
    assert (dup.value.base_offset, dup.value.last_offset) == (0, 1)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(txn(A, 5, "gap", epoch=2))
    with pytest.raises(InvalidProducerEpochError):
        log.append(txn(A, 2, "old", epoch=1))
    # A plain batch inside the producer's open transaction.
    with pytest.raises(InvalidTxnStateError):
        log.append(txn(A, 2, "plain", epoch=2, transactional=False))
    # A new epoch must start at sequence 0.
    with pytest.raises(OutOfOrderSequenceError):
        log.append(txn(A, 3, "x", epoch=3))
    assert log.log_end_offset == 2
    # The coordinator fences epoch 2 with an abort at epoch 3 (a timed-out transaction).
    log.append_control_marker(A, 3, 0, commit=False)
    with pytest.raises(InvalidProducerEpochError):
        log.append(txn(A, 2, "zombie", epoch=2))
    # Epoch 3's data starts at sequence 0, after the marker's epoch change.
    with pytest.raises(OutOfOrderSequenceError):
        log.append(txn(A, 4, "y", epoch=3))
    assert log.append(txn(A, 0, "y", epoch=3)) == (3, 3)
    assert log.last_stable_offset == 3
    log.close()


def test_transaction_version_2_marker_needs_a_newer_epoch(tmp_path: Path) -> None:
    log = make(tmp_path)
    log.append(txn(A, 0, "a", epoch=5))
    end = log.log_end_offset
    # The coordinator bumps the epoch before a TV2 marker: the data's own epoch is stale.
    with pytest.raises(InvalidProducerEpochError, match="transaction version 2"):
        log.append_control_marker(A, 5, 0, commit=True, transaction_version=2)
    assert log.log_end_offset == end and log.last_stable_offset == 0
    log.append_control_marker(A, 6, 0, commit=True, transaction_version=2)
    assert log.last_stable_offset == log.log_end_offset
    # A retry of the marker already written (same epoch, nothing open) is written again.
    log.append_control_marker(A, 6, 0, commit=True, transaction_version=2)
    with pytest.raises(InvalidProducerEpochError):
        log.append_control_marker(A, 5, 0, commit=True, transaction_version=2)
    # Legacy markers (TV0/TV1) carry the data's epoch.
    log.append(txn(B, 0, "b", epoch=2))
    log.append_control_marker(B, 2, 0, commit=False, transaction_version=1)
    assert log.last_stable_offset == log.log_end_offset
    log.close()


def test_marker_checks_write_nothing(tmp_path: Path) -> None:
    log = make(tmp_path)
    log.append(txn(A, 0, "a", epoch=5))
    log.append_control_marker(A, 5, coordinator_epoch=3, commit=True)
    end = log.log_end_offset
    with pytest.raises(InvalidProducerEpochError):
        log.append_control_marker(A, 4, coordinator_epoch=3, commit=True)
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_control_marker(A, 5, coordinator_epoch=2, commit=False)
    assert log.log_end_offset == end
    # A marker for a producer with nothing open here is written but ends nothing.
    assert log.append_control_marker(B, 0, 3, commit=False) == end
    assert log.last_stable_offset == end + 1 and log.txn.aborted_txns == 0
    log.close()


def test_clients_may_not_write_markers_or_producer_ids_without_sequence(
        tmp_path: Path) -> None:
    log = make(tmp_path)
    control = build_batch([NewRecord(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")],
                          producer_id=A, producer_epoch=0, attributes=0x30)
    with pytest.raises(InvalidRecordError, match="control records"):
        log.append(control, from_client=True)
    with pytest.raises(InvalidRecordError, match="sequence"):
        log.append(txn(A, -1, "a"), from_client=True)
    assert log.log_end_offset == 0
    # A coordinator's transactional offset commits carry no sequence: epoch checks only.
    assert log.append(txn(A, -1, "c0", epoch=1), origin=AppendOrigin.COORDINATOR) == (0, 0)
    assert log.last_stable_offset == 0
    with pytest.raises(InvalidProducerEpochError):
        log.append(txn(A, -1, "c1", epoch=0), origin=AppendOrigin.COORDINATOR)
    # The coordinator may also hand the log a marker batch it built (WriteTxnMarkers).
    marker = end_txn_marker_batch(A, 1, 0, True, T0)
    assert log.append(marker, origin=AppendOrigin.COORDINATOR) == (1, 1)
    assert log.last_stable_offset == 2
    assert committed_view(log) == ["c0"]
    log.close()


def test_transaction_verification_hook(tmp_path: Path) -> None:
    log = make(tmp_path)
    asked: list[tuple[int, int]] = []

    def verified(pid: int, epoch: int) -> bool:
        asked.append((pid, epoch))
        return pid == A

    with pytest.raises(InvalidTxnStateError, match="not part of an ongoing transaction"):
        log.append(txn(B, 0, "b"), txn_verified=verified)
    log.append(txn(A, 0, "a"), txn_verified=verified)
    # Once the transaction is open here, later batches are not verified again.
    log.append(txn(A, 1, "a2"), txn_verified=verified)
    log.append(plain("p"), txn_verified=verified)
    assert asked == [(B, 0), (A, 0)]
    log.close()


def test_read_committed_stops_before_the_lso_across_segments(tmp_path: Path) -> None:
    log = make(tmp_path, segment_bytes=400)
    for i in range(4):
        log.append(plain(f"p{i}"))
    first = log.append(txn(A, 0, "a0"))[0]
    for i in range(4, 10):
        log.append(plain(f"p{i}"))
    assert len(log.segments) > 2
    assert log.last_stable_offset == first
    data = log.read(0, 1 << 20, log.last_stable_offset)
    offsets = [h.base_offset for _p, h in iter_batch_headers(data)]
    assert offsets and max(offsets) < first
    assert log.read(first, 1 << 20, first) == b""
    assert log.read(first + 2, 1 << 20, first) == b""
    # Whatever the read size, nothing past the LSO; the first batch comes whole.
    seen: list[int] = []
    offset = 0
    while offset < first:
        chunk = log.read(offset, 1, first)
        (_pos, h), = iter_batch_headers(chunk)
        seen.append(h.base_offset)
        offset = h.last_offset + 1
    assert seen == list(range(first))
    log.append_control_marker(A, 0, 0, commit=True)
    assert committed_view(log) == ["p0", "p1", "p2", "p3", "a0", *[f"p{i}" for i in range(4, 10)]]
    log.close()


def test_aborted_list_spans_segments_and_stops_at_a_stable_entry(tmp_path: Path) -> None:
    log = make(tmp_path, segment_bytes=400)
    log.append(txn(A, 0, "a0"))                       # 0: A opens
    log.append(txn(B, 0, "b1"))                       # 1: B opens
    for i in range(6):
        log.append(plain(f"p{i}"))                    # rolls
    log.append_control_marker(B, 0, 0, commit=False)  # 8: B aborts, A still open: LSO 0
    log.append(txn(A, 1, "a9"))
    log.append_control_marker(A, 0, 0, commit=False)  # 10: A aborts, LSO 11
    log.append(txn(C, 0, "c11"))
    log.append_control_marker(C, 0, 0, commit=False)  # 12: C aborts
    assert len(log.segments) > 1
    assert log.aborted_transactions(0, 5) == [AbortedTxn(B, 1, 8, 0), AbortedTxn(A, 0, 10, 11)]
    # From offset 9 on, B's transaction is over; the search stops at A's entry (LSO 11).
    assert log.aborted_transactions(9, 11) == [AbortedTxn(A, 0, 10, 11)]
    assert log.aborted_transactions(11, 13) == [AbortedTxn(C, 11, 12, 13)]
    assert committed_view(log) == [f"p{i}" for i in range(6)]
    log.close()


def test_restart_keeps_an_open_transaction_and_the_lso(tmp_path: Path) -> None:
    log = make(tmp_path, segment_bytes=400)
    log.append(plain("p0"))
    log.append(txn(A, 0, "a1"))
    for i in range(6):
        log.append(plain(f"q{i}"))  # roll: the open transaction goes into the snapshot
    log.append(txn(B, 0, "b"))
    log.append_control_marker(B, 0, 4, commit=False)
    assert len(log.segments) > 1 and log.last_stable_offset == 1
    active = log.active.base_offset
    snap = decode_snapshot((tmp_path / "t-0" / f"{active:020d}.snapshot").read_bytes())
    assert snap.producers[A].txn_first_offset == 1 and snap.ongoing == {A: 1}
    log.close()
    log = make(tmp_path, segment_bytes=400)
    assert log.last_stable_offset == 1
    assert log.has_ongoing_transaction(A) and not log.has_ongoing_transaction(B)
    # The active segment's index was rebuilt from its markers.
    assert [t.producer_id for s in log.segments for t in s.txn_index.entries] == [B]
    # The producer's sequence and the coordinator epoch survived too.
    with pytest.raises(OutOfOrderSequenceError):
        log.append(txn(A, 3, "late"))
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_control_marker(B, 0, 3, commit=True)
    log.append(txn(A, 1, "a2"))
    log.append_control_marker(A, 0, 4, commit=True)
    assert log.last_stable_offset == log.log_end_offset
    assert committed_view(log) == ["p0", "a1", *[f"q{i}" for i in range(6)], "a2"]
    log.close()


def test_without_snapshots_recovery_replays_the_whole_log(tmp_path: Path) -> None:
    log = make(tmp_path, segment_bytes=400)
    log.append(txn(A, 0, "a0"))
    log.append(txn(B, 0, "b1"))
    for i in range(6):
        log.append(plain(f"p{i}"))
    log.append_control_marker(B, 0, 0, commit=False)
    for i in range(6, 12):
        log.append(plain(f"p{i}"))
    assert len(log.segments) > 2
    log.close()
    d = tmp_path / "t-0"
    for p in d.glob("*.snapshot"):
        p.unlink()
    # A damaged index of a closed segment is rebuilt from the log as well.
    (marker_seg,) = [p for p in d.glob("*.txnindex")]
    marker_seg.write_bytes(struct.pack(">hqqqq", 7, 0, 0, 0, 0))
    log = make(tmp_path, segment_bytes=400)
    assert log.last_stable_offset == 0 and log.has_ongoing_transaction(A)
    assert log.aborted_transactions(0, 100) == [AbortedTxn(B, 1, 8, 0)]
    assert marker_seg.read_bytes() == struct.pack(">hqqqq", 0, B, 1, 8, 0)
    assert (d / f"{log.active.base_offset:020d}.snapshot").exists()
    log.append_control_marker(A, 0, 0, commit=True)
    assert committed_view(log) == ["a0", *[f"p{i}" for i in range(12)]]
    log.close()


def test_retention_and_delete_records_take_the_index_along(tmp_path: Path) -> None:
    log = make(tmp_path, segment_bytes=400)
    log.append(txn(A, 0, "a0"))
    log.append_control_marker(A, 0, 0, commit=False)
    log.append(txn(B, 0, "b2"))
    for i in range(8):
        log.append(plain(f"p{i}"))
    first_index = tmp_path / "t-0" / f"{0:020d}.txnindex"
    assert first_index.exists() and log.txn.aborted_txns == 1
    assert log.last_stable_offset == 2
    log.deletion.delete_records(5)
    # B's transaction began below the new log start: the LSO does not go below it.
    assert log.log_start_offset == 5 and log.last_stable_offset == 5
    assert not first_index.exists() and log.txn.aborted_txns == 0
    assert log.aborted_transactions(5, 100) == []
    log.close()


def test_snapshot_carries_transactions_in_kafkas_layout() -> None:
    table = ProducerStateTable()
    table.update(A, 3, 0, 4, 10, 14, T0, transactional=True)
    table.update(B, 1, 7, 7, 15, 15, T0 + 1)
    done = table.apply_marker(B, 2, 9, True, 16, T0 + 2)
    assert done is None  # B had no transaction open
    raw = encode_snapshot(table)
    head = struct.unpack_from(">hIi", raw)
    assert head[0] == 1 and head[2] == 2
    rows = [struct.unpack_from(">qhiqiqiq", raw, 10 + i * 46) for i in range(2)]
    assert rows == [(A, 3, 4, 14, 4, T0, -1, 10),
                    (B, 2, -1, -1, 0, T0 + 2, 9, -1)]
    back = decode_snapshot(raw)
    assert back.ongoing == {A: 10}
    assert back.producers[A].last_seq == 4 and back.producers[B].coordinator_epoch == 9
    assert encode_snapshot(back) == raw


def _state(plog: PartitionLog) -> dict[str, bytes | None]:
    """Key -> latest value of the committed records (what a compacted topic promises)."""
    out: dict[str, bytes | None] = {}
    keys = committed_view(plog)
    values = {r.key.decode(): r.value for b in plog.iter_batches(0)
              for h, recs in [decode_batch(b)] if not h.is_control for r in recs if r.key}
    for k in keys:
        out[k.split("#")[0]] = values[k]
    return out


def kv(pid: int, seq: int, *pairs: tuple[str, int], plain_batch: bool = False) -> bytes:
    recs = [NewRecord(f"{k}#{n}".encode(), f"{k}={n}".encode(), T0) for k, n in pairs]
    if plain_batch:
        return build_batch(recs, timestamp=T0)
    return build_batch(recs, timestamp=T0, producer_id=pid, producer_epoch=0,
                       base_sequence=seq, attributes=ATTR_TRANSACTIONAL)


def test_cleaner_drops_aborted_data_then_markers_and_keeps_the_committed_view(
        tmp_path: Path) -> None:
    from kafkalite.storage.compaction import clean_log

    day = 86_400_000
    log = make(tmp_path, segment_bytes=350, cleanup_policy="compact")
    log.append(kv(A, 0, ("x", 1), ("y", 1)))             # A commits x, y
    log.append(kv(B, 0, ("x", 2), ("z", 2)))             # B aborts x, z
    log.append_control_marker(B, 0, 0, commit=False)
    log.append_control_marker(A, 0, 0, commit=True)
    log.append(kv(0, 0, ("y", 3), plain_batch=True))     # supersedes A's y
    log.append(kv(C, 0, ("w", 4)))                       # C opens: the LSO stops here
    for n in range(5, 9):
        log.append(kv(0, 0, (f"f{n}", n), plain_batch=True))
    assert len(log.segments) >= 3
    lso = log.last_stable_offset
    state = _state(log)
    assert state == {"x": b"x=1", "y": b"y=3"}
    tail = [b for b in log.iter_batches(lso)]

    stats = clean_log(log, T0 + 1, day)
    assert stats.aborted_dropped == 2 and stats.markers_dropped == 0
    assert _state(log) == state
    assert [b for b in log.iter_batches(lso)] == tail  # nothing past the LSO is touched
    keys = uncommitted_view(log)
    assert not any(k.startswith(("x#2", "z#2")) for k in keys)
    # The ABORT marker stays (its transaction had batches in this pass), with its entry.
    assert [t.producer_id for s in log.segments for t in s.txn_index.entries] == [B]

    # Past delete.retention.ms, a second pass drops the ABORT marker and its entry (B's
    # batches are gone); the COMMIT marker stays while a batch of A's transaction does.
    stats = clean_log(log, T0 + day, day)
    assert stats.markers_dropped == 1
    assert log.txn.aborted_txns == 0 and not list((tmp_path / "t-0").glob("*.txnindex"))
    assert _state(log) == state
    markers = [h for b in log.iter_batches(0) for h, _ in [decode_batch(b)]
               if h.is_control]
    assert [(h.producer_id, h.base_offset < lso) for h in markers] == [(A, True)]

    log.append_control_marker(C, 0, 0, commit=True)
    log.close()
    log = make(tmp_path, segment_bytes=350, cleanup_policy="compact")
    assert _state(log) == {**state, "w": b"w=4", **{f"f{n}": f"f{n}={n}".encode()
                                                    for n in range(5, 9)}}
    log.close()
