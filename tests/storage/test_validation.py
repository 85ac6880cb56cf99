"""A client's batch checked as Kafka's LogValidator checks it: keys on compacted topics,
timestamp bounds, control batches, re-compression; nothing of a refused batch is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.protocol.records import (
    ATTR_CONTROL,
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    NewRecord,
    build_batch,
    decode_batch,
    iter_records,
    set_crc,
    summarize_records,
)
from kafkalite.storage.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordValidationError,
)
from kafkalite.storage.log import PartitionLog
from kafkalite.storage.log_config import LogConfig
from kafkalite.storage.validation import RecordRules, validate_client_batch

NOW = 1_700_000_000_000


def _log(tmp_path: Path, rules: RecordRules) -> PartitionLog:
    return PartitionLog(tmp_path / "t-0", "t", 0, LogConfig(rules=rules), clock=lambda: NOW)


def _records(keys: list[bytes | None], ts: int = NOW) -> list[NewRecord]:
    return [NewRecord(k, b"v%d" % i, ts + i) for i, k in enumerate(keys)]


def test_keyless_records_refuse_the_whole_batch_on_compacted_topics(tmp_path: Path) -> None:
    plog = _log(tmp_path, RecordRules(compact=True))
    keys: list[bytes | None] = [b"a", None, b"c", None, b"e"]
    for codec in (COMPRESSION_NONE, COMPRESSION_ZSTD):
        with pytest.raises(RecordValidationError) as err:
            plog.append(build_batch(_records(keys), compression=codec), from_client=True)
        msg = "Compacted topic cannot accept message without key in topic partition t-0"
        assert err.value.record_errors == [(1, msg), (3, msg)]
        assert not err.value.invalid_timestamp
        assert err.value.message == (
            "One or more records have been rejected due to 2 record errors in total, and only "
            "showing the first three errors at most: "
            f"[RecordError(batchIndex=1, message='{msg}'), "
            f"RecordError(batchIndex=3, message='{msg}')]")
        assert plog.log_end_offset == 0 and plog.size_bytes == 0
    assert plog.append(build_batch(_records([b"a", b"b"])), from_client=True) == (0, 1)
    # Internal writers (the group coordinator) are not subject to client rules.
    assert plog.append(build_batch(_records([None]))) == (2, 2)


def test_keyless_records_pass_on_delete_topics(tmp_path: Path) -> None:
    plog = _log(tmp_path, RecordRules())
    assert plog.append(build_batch(_records([None, None])), from_client=True) == (0, 1)


def test_timestamps_out_of_bounds_are_invalid_timestamp(tmp_path: Path) -> None:
    plog = _log(tmp_path, RecordRules(timestamp_before_ms=1000, timestamp_after_ms=500))
    recs = [NewRecord(b"k", b"v", NOW - 5000), NewRecord(b"k", b"v", NOW),
            NewRecord(b"k", b"v", NOW + 2000)]
    with pytest.raises(RecordValidationError) as err:
        plog.append(build_batch(recs, base_offset=0), from_client=True)
    assert err.value.invalid_timestamp
    assert err.value.message == "One or more records have been rejected due to invalid timestamp"
    window = f"[{NOW - 1000}, {NOW + 500}]"
    assert err.value.record_errors == [
        (0, f"Timestamp {NOW - 5000} of message with offset 0 is out of range. "
            f"The timestamp should be within {window}"),
        (2, f"Timestamp {NOW + 2000} of message with offset 2 is out of range. "
            f"The timestamp should be within {window}"),
    ]
    assert plog.log_end_offset == 0
    assert plog.append(build_batch([NewRecord(b"k", b"v", NOW - 10)]), from_client=True) == (0, 0)


def test_log_append_time_topics_take_any_timestamp(tmp_path: Path) -> None:
    plog = _log(tmp_path, RecordRules(log_append_time=True, timestamp_before_ms=1,
                                      timestamp_after_ms=1))
    assert plog.append(build_batch([NewRecord(b"k", b"v", 5)]), from_client=True) == (0, 0)


def test_default_bounds_never_decode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kafkalite.storage.validation as validation

    def boom(*_a: object) -> None:
        raise AssertionError("records decoded")

    monkeypatch.setattr(validation, "summarize_records", boom)
    batch = memoryview(build_batch(_records([None, b"x"], ts=1)))
    assert validate_client_batch(batch, "t-0", RecordRules(), NOW) is batch
    # An upper bound the header's max timestamp already satisfies needs no decoding either.
    assert validate_client_batch(batch, "t-0", RecordRules(timestamp_after_ms=10), NOW) is batch


def test_control_batches_and_several_batches_are_refused(tmp_path: Path) -> None:
    plog = _log(tmp_path, RecordRules())
    with pytest.raises(InvalidRecordError, match="not allowed to write control records"):
        plog.append(build_batch(_records([b"k"]), attributes=ATTR_CONTROL), from_client=True)
    two = build_batch(_records([b"a"])) + build_batch(_records([b"b"]))
    with pytest.raises(InvalidRecordError, match="more than one batch"):
        plog.append(two, from_client=True)
    with pytest.raises(InvalidRecordError, match="Invalid sequence number -1"):
        plog.append(build_batch(_records([b"k"]), producer_id=5, producer_epoch=0),
                    from_client=True)
    assert plog.log_end_offset == 0


@pytest.mark.parametrize("target", [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY,
                                    COMPRESSION_LZ4, COMPRESSION_ZSTD])
def test_topic_compression_type_recompresses(tmp_path: Path, target: int) -> None:
    plog = _log(tmp_path, RecordRules(compression=target))
    source = COMPRESSION_GZIP if target != COMPRESSION_GZIP else COMPRESSION_ZSTD
    recs = [NewRecord(b"k%d" % i, b"value %d " % i * 20, NOW + i, [("h", b"x")])
            for i in range(50)]
    batch = build_batch(recs, compression=source, producer_id=9, producer_epoch=2,
                        base_sequence=0)
    assert plog.append(batch, from_client=True) == (0, 49)
    stored = plog.read(0, 1 << 20)
    h, out = decode_batch(stored)
    assert h.compression == target
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (9, 2, 0)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in out] == [
        (i, r.timestamp, r.key, r.value, [("h", b"x")]) for i, r in enumerate(recs)]
    assert h.max_timestamp == NOW + 49
    # The same codec is stored as sent.
    plog2 = _log(tmp_path / "same", RecordRules(compression=source))
    plog2.append(batch, from_client=True)
    assert plog2.read(0, 1 << 20)[61:] == batch[61:]


def test_summaries_match_decoded_records() -> None:
    assert summarize_records(build_batch([NewRecord(b"k", b"v", NOW)]))[0].value_length == -2
    recs = [NewRecord(None if i % 3 == 0 else b"k" * i, None if i == 4 else b"v" * i, NOW + i)
            for i in range(10)]
    batch = build_batch(recs, compression=COMPRESSION_LZ4)
    got = summarize_records(batch, values=True)
    assert [(s.timestamp, s.offset_delta, s.key_length, s.value_length) for s in got] == [
        (r.timestamp, i, -1 if r.key is None else len(r.key), -1 if r.value is None
         else len(r.value)) for i, (_h, r) in enumerate(iter_records(batch))]


def test_garbage_records_with_a_valid_crc_are_corrupt(tmp_path: Path) -> None:
    plog = _log(tmp_path, RecordRules(compact=True))
    batch = bytearray(build_batch(_records([b"a", b"b", b"c"])))
    # The first record's length, then its key length, pointing past the record.
    for pos, value in ((61, 0x7F), (65, 0x7E)):
        bad = bytearray(batch)
        bad[pos] = value
        set_crc(bad)
        with pytest.raises(CorruptRecordError):
            plog.append(bytes(bad), from_client=True)
    assert plog.log_end_offset == 0
