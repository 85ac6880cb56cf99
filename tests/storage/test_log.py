"""PartitionLog and LogManager without a broker: formats, rolling, indexes, recovery,
retention, DeleteRecords and idempotent producer sequence checks (fake clock)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kafkalite.protocol.records import (
    COMPRESSION_GZIP,
    COMPRESSION_ZSTD,
    NewRecord,
    build_batch,
    decode_batch,
    iter_records,
)
from kafkalite.storage.errors import (
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidProducerEpochError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
)
from kafkalite.storage.log import PartitionLog
from kafkalite.storage.log_config import LogConfig
from kafkalite.storage.manager import LogManager
from kafkalite.storage.producer_state import ProducerIdAllocator
from kafkalite.storage.topic_config import TOPIC_CONFIGS


class Clock:
    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def batch(i: int, n: int = 1, ts: int = 1_700_000_000_000, **kw: int) -> bytes:
    recs = [NewRecord(f"k{i + j}".encode(), b"v" * 40, ts + i + j) for j in range(n)]
    return build_batch(recs, **kw)


def make(tmp_path: Path, clock: Clock | None = None, **cfg: object) -> PartitionLog:
    return PartitionLog(tmp_path / "t-0", "t", 0, LogConfig(**cfg),  # type: ignore[arg-type]
                        clock=clock or Clock())


def test_append_assigns_offsets_and_reads_whole_batches(tmp_path: Path) -> None:
    log = make(tmp_path)
    assert log.append(batch(0, 3)) == (0, 2)
    assert log.append(batch(3, 2, compression=COMPRESSION_GZIP)) == (3, 4)
    assert log.log_end_offset == 5
    # A read from inside a batch starts at that batch; the first batch comes whole.
    data = log.read(4, 1)
    h, recs = decode_batch(data)
    assert (h.base_offset, [r.offset for r in recs]) == (3, [3, 4])
    assert len(data) == h.size
    assert [r.key for _h, r in iter_records(log.read(0, 10_000))] == [
        f"k{i}".encode() for i in range(5)
    ]
    assert log.read(5, 100) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(6, 100)


def test_on_disk_format_is_kafkas(tmp_path: Path) -> None:
    log = make(tmp_path, index_interval_bytes=100)
    for i in range(10):
        log.append(batch(i))
    log.close()
    d = tmp_path / "t-0"
    assert sorted(p.name for p in d.iterdir()) == [
        "00000000000000000000.index", "00000000000000000000.log",
        "00000000000000000000.timeindex", "leader-epoch-checkpoint",
    ]
    # The partition was created in leader epoch 0, starting at offset 0.
    assert (d / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    data = (d / "00000000000000000000.log").read_bytes()
    # Base offsets written into each header, partition leader epoch 0, CRC still valid.
    pos, offsets = 0, []
    while pos < len(data):
        h, _recs = decode_batch(data, pos)
        offsets.append(h.base_offset)
        assert h.partition_leader_epoch == 0
        pos += h.size
    assert offsets == list(range(10))
    index = (d / "00000000000000000000.index").read_bytes()
    assert len(index) % 8 == 0 and index
    rel, position = struct.unpack_from(">ii", index, 0)
    assert decode_batch(data, position)[0].last_offset == rel
    tindex = (d / "00000000000000000000.timeindex").read_bytes()
    assert len(tindex) % 12 == 0 and tindex
    ts, rel = struct.unpack_from(">qi", tindex, len(tindex) - 12)
    assert (ts, rel) == (1_700_000_000_000 + 9, 9)


def test_rolls_at_segment_bytes_and_segment_ms(tmp_path: Path) -> None:
    clock = Clock()
    log = make(tmp_path, clock, segment_bytes=400, segment_ms=1000)
    for i in range(8):
        log.append(batch(i))
    sizes = [s.size for s in log.segments]
    assert len(sizes) > 1 and all(s <= 400 for s in sizes)
    n = len(log.segments)
    clock.now += 1001
    log.append(batch(8))
    assert len(log.segments) == n + 1 and log.active.base_offset == 8
    assert [r.offset for _h, r in iter_records(b"".join(log.iter_batches(0)))] == list(range(9))
    assert next(decode_batch(b)[0].base_offset for b in log.iter_batches(5)) == 5


def test_validation_errors(tmp_path: Path) -> None:
    log = make(tmp_path, max_message_bytes=500)
    good = bytearray(batch(0))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append(bytes(bad_crc))
    with pytest.raises(CorruptRecordError):
        log.append(bytes(good[:-3]))
    bad_magic = bytearray(good)
    bad_magic[16] = 1
    with pytest.raises(CorruptRecordError):
        log.append(bytes(bad_magic))
    with pytest.raises(RecordTooLargeError):
        log.append(batch(0, 20))
    assert log.log_end_offset == 0 and log.active.size == 0


def test_recovery_truncates_torn_tail_and_rebuilds_index(tmp_path: Path) -> None:
    log = make(tmp_path, index_interval_bytes=200)
    for i in range(30):
        log.append(batch(i, 2))
    log.close()
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    with open(seg, "ab") as f:
        f.write(batch(99)[:40])  # a torn write
    (tmp_path / "t-0" / "00000000000000000000.index").write_bytes(b"\xff" * 13)
    log = make(tmp_path, index_interval_bytes=200)
    assert log.log_end_offset == 60
    assert decode_batch(log.read(45, 1))[0].base_offset == 44
    assert len((tmp_path / "t-0" / "00000000000000000000.index").read_bytes()) % 8 == 0
    # Corrupt a byte inside the 25th batch: recovery keeps the 24 before it.
    log.close()
    data = bytearray(seg.read_bytes())
    starts = [0]
    while starts[-1] < len(data):
        starts.append(starts[-1] + decode_batch(data, starts[-1])[0].size)
    data[starts[24] + 70] ^= 0x55
    seg.write_bytes(bytes(data))
    log = make(tmp_path, index_interval_bytes=200)
    assert log.log_end_offset == 48
    assert seg.stat().st_size == starts[24]


def test_closed_segment_index_rebuilt_when_missing(tmp_path: Path) -> None:
    log = make(tmp_path, segment_bytes=500, index_interval_bytes=50)
    for i in range(20):
        log.append(batch(i))
    first = log.segments[0]
    log.close()
    first.index.path.unlink()
    log = make(tmp_path, segment_bytes=500, index_interval_bytes=50)
    assert first.index.path.exists()
    assert log.log_end_offset == 20
    assert decode_batch(log.read(1, 1))[0].base_offset == 1


def test_retention_by_time_and_size(tmp_path: Path) -> None:
    clock = Clock()
    log = make(tmp_path, clock, segment_bytes=300, retention_ms=10_000)
    for i in range(12):
        log.append(batch(i, ts=clock.now - 20_000 if i < 6 else clock.now))
    n = len(log.segments)
    deleted = log.deletion.apply_retention()
    assert deleted >= 1 and len(log.segments) == n - deleted
    assert log.log_start_offset == log.segments[0].base_offset > 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    log.config.retention_ms = -1
    log.config.retention_bytes = 300
    log.deletion.apply_retention()
    assert sum(s.size for s in log.segments[:-1]) < 300 or len(log.segments) == 1
    # compact-only topics are never trimmed by retention
    log.config.cleanup_policy = "compact"
    log.config.retention_bytes = 0
    assert log.deletion.apply_retention() == 0


def test_expired_active_segment_is_rolled_and_deleted(tmp_path: Path) -> None:
    clock = Clock()
    log = make(tmp_path, clock, retention_ms=1000)
    log.append(batch(0))
    clock.now += 5000 + 1_700_000_000_000  # batch timestamps were in the past already
    assert log.deletion.apply_retention() == 1
    assert (log.log_start_offset, log.log_end_offset) == (1, 1)
    assert log.append(batch(1)) == (1, 1)


def test_delete_records_bounds_as_kafka(tmp_path: Path) -> None:
    log = make(tmp_path)
    for i in range(10):
        log.append(batch(i))
    assert log.deletion.delete_records(4) == 4
    # librdkafka's unset offset (-1001), any other negative one and one past the high
    # watermark are refused and delete nothing.
    for bad in (-1001, -2, 11, 2**62):
        with pytest.raises(OffsetOutOfRangeError):
            log.deletion.delete_records(bad)
        assert (log.log_start_offset, log.log_end_offset) == (4, 10)
    # Below the log start offset: nothing to do, the low watermark is unchanged.
    assert log.deletion.delete_records(2) == 4
    assert log.deletion.delete_records(10) == 10
    assert log.deletion.delete_records(-1) == 10


def test_delete_records_persists_through_checkpoint(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path, lambda _t, name: LogConfig_defaults[name])
    log = mgr.get_or_create("t", 0)
    for i in range(10):
        log.append(batch(i))
    assert mgr.delete_records(log, 7) == 7
    with pytest.raises(OffsetOutOfRangeError):
        mgr.delete_records(log, 11)
    assert mgr.delete_records(log, -1) == 10
    log.close()
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n1\nt 0 10\n"
    mgr2 = LogManager(tmp_path, lambda _t, name: LogConfig_defaults[name])
    mgr2.load({"t": 1})
    assert mgr2.get("t", 0) is not None
    assert mgr2.get("t", 0).log_start_offset == 10  # type: ignore[union-attr]


def test_idempotent_sequences(tmp_path: Path) -> None:
    log = make(tmp_path)
    pid = 7
    assert log.append(batch(0, 2, producer_id=pid, producer_epoch=0, base_sequence=0)) == (0, 1)
    assert log.append(batch(2, 3, producer_id=pid, producer_epoch=0, base_sequence=2)) == (2, 4)
    with pytest.raises(DuplicateSequenceError) as dup:
        log.append(batch(0, 2, producer_id=pid, producer_epoch=0, base_sequence=0))
    assert (dup.value.base_offset, dup.value.last_offset) == (0, 1)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(batch(9, 1, producer_id=pid, producer_epoch=0, base_sequence=9))
    assert log.append(batch(5, 1, producer_id=pid, producer_epoch=1, base_sequence=0)) == (5, 5)
    with pytest.raises(InvalidProducerEpochError):
        log.append(batch(6, 1, producer_id=pid, producer_epoch=0, base_sequence=5))
    with pytest.raises(OutOfOrderSequenceError):
        log.append(batch(6, 1, producer_id=pid, producer_epoch=2, base_sequence=3))
    assert log.log_end_offset == 6
    # Sequence state is rebuilt from the active segment on restart.
    log.close()
    log = make(tmp_path)
    with pytest.raises(DuplicateSequenceError):
        log.append(batch(5, 1, producer_id=pid, producer_epoch=1, base_sequence=0))


def test_log_append_time_and_timestamp_lookup(tmp_path: Path) -> None:
    clock = Clock(1_800_000_000_000)
    log = make(tmp_path, clock, log_append_time=True)
    log.append(batch(0, 3, compression=COMPRESSION_ZSTD))
    h, recs = decode_batch(log.read(0, 1000))
    assert h.log_append_time and [r.timestamp for r in recs] == [clock.now] * 3
    log2 = PartitionLog(tmp_path / "u-0", "u", 0, LogConfig(index_interval_bytes=1))
    for i in range(0, 50, 5):
        log2.append(batch(i, 5, ts=1000))
    assert log2.offset_for_timestamp(1000 + 23) == (23, 1023)
    assert log2.offset_for_timestamp(10**6) is None
    assert log2.max_timestamp() == (49, 1049)
    log2.append(build_batch([NewRecord(b"a", b"1", 5000), NewRecord(b"b", b"2", 10),
                             NewRecord(b"c", b"3", 5000)]))
    assert log2.max_timestamp() == (50, 5000)  # the record itself, not the batch's end


def test_producer_ids_never_repeat_across_restarts(tmp_path: Path) -> None:
    a = ProducerIdAllocator(tmp_path)
    first = [a.allocate() for _ in range(3)]
    b = ProducerIdAllocator(tmp_path)
    assert b.allocate() > max(first)


LogConfig_defaults = {
    **{name: d.default for name, d in TOPIC_CONFIGS.items()},
    "segment.bytes": "1073741824", "segment.ms": "604800000", "retention.ms": "-1",
    "retention.bytes": "-1", "index.interval.bytes": "4096", "max.message.bytes": "1048588",
    "message.timestamp.type": "CreateTime", "flush.messages": "9223372036854775807",
    "flush.ms": "9223372036854775807", "cleanup.policy": "delete",
}


def test_empty_time_index_is_rebuilt_not_taken_for_expired(tmp_path: Path) -> None:
    clock = Clock()
    log = make(tmp_path, clock, segment_bytes=300, retention_ms=60_000)
    for i in range(8):
        log.append(batch(i, ts=clock.now))
    first = log.segments[0]
    log.close()
    first.time_index.path.write_bytes(b"")
    log = make(tmp_path, clock, segment_bytes=300, retention_ms=60_000)
    assert log.segments[0].max_timestamp == clock.now + first.next_offset - 1
    assert log.deletion.apply_retention() == 0


def test_bad_batch_in_a_record_set_writes_nothing(tmp_path: Path) -> None:
    log = make(tmp_path)
    bad = bytearray(batch(1))
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        log.append(batch(0) + bytes(bad))
    assert log.log_end_offset == 0 and log.active.size == 0
    assert log.append(batch(0) + batch(1)) == (0, 1)


def test_flush_messages_and_flush_ms(tmp_path: Path) -> None:
    clock = Clock()
    log = make(tmp_path, clock, flush_messages=3)
    log.append(batch(0, 2))
    assert log.unflushed_messages == 2
    log.append(batch(2, 1))
    assert log.unflushed_messages == 0  # the third message triggered an fsync
    defaults = dict(LogConfig_defaults, **{"flush.ms": "1000"})
    mgr = LogManager(tmp_path / "m", lambda _t, name: defaults[name])
    plog = mgr.get_or_create("f", 0)
    plog.clock = clock
    plog.last_flush_ms = clock.now
    plog.append(batch(0))
    assert mgr.flush_due() == 1000 and plog.unflushed_messages == 1
    clock.now += 1000
    assert mgr.flush_due() == 1000 and plog.unflushed_messages == 0


def test_producer_state_survives_restart_through_snapshot(tmp_path: Path) -> None:
    log = make(tmp_path, segment_bytes=200)
    pid = 11
    assert log.append(batch(0, 2, producer_id=pid, producer_epoch=3, base_sequence=0)) == (0, 1)
    for i in range(2, 8):
        log.append(batch(i))  # other writers roll the segment past the producer's batch
    assert len(log.segments) > 1
    log.close()
    snaps = sorted((tmp_path / "t-0").glob("*.snapshot"))
    assert snaps
    log = make(tmp_path, segment_bytes=200)
    with pytest.raises(DuplicateSequenceError) as dup:
        log.append(batch(0, 2, producer_id=pid, producer_epoch=3, base_sequence=0))
    assert dup.value.base_offset == 0
    with pytest.raises(OutOfOrderSequenceError):
        log.append(batch(9, 1, producer_id=pid, producer_epoch=3, base_sequence=5))
    # A torn snapshot is ignored, not fatal.
    log.close()
    active = log.active.base_offset
    (tmp_path / "t-0" / f"{active:020d}.snapshot").write_bytes(b"\x00\x01\x02")
    log = make(tmp_path, segment_bytes=200)
    assert log.log_end_offset == 8
