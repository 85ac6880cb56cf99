"""Compaction of a compacted log's segments: which records survive, offsets kept."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.records import (
    NewRecord,
    build_batch,
    decode_batch,
    iter_batch_headers,
    iter_records,
)
from kafkalite.storage.compaction import CleanStats, build_offset_map, clean_segment

DAY = 86_400_000


def _replay(segments: list[bytes]) -> dict[bytes, bytes | None]:
    state: dict[bytes, bytes | None] = {}
    for data in segments:
        for _h, r in iter_records(data):
            assert r.key is not None
            if r.value is None:
                state.pop(r.key, None)
            else:
                state[r.key] = r.value
    return state


def _commit_log(commits: int, keys: int, per_batch: int, per_segment: int) -> list[bytes]:
    segments: list[bytes] = []
    seg = bytearray()
    offset = 0
    batches = 0
    while offset < commits:
        recs = []
        for i in range(per_batch):
            n = offset + i
            key = co.encode_key(co.OffsetCommitKey("g", f"t{n % keys}", 0))
            value = co.encode_offset_value(co.OffsetCommitValue(n, "", 1000 + n))
            recs.append(NewRecord(key, value, 1000 + n))
        seg += build_batch(recs, base_offset=offset, timestamp=1000 + offset)
        offset += per_batch
        batches += 1
        if batches % per_segment == 0:
            segments.append(bytes(seg))
            seg = bytearray()
    if seg:
        segments.append(bytes(seg))
    return segments


def test_100k_commits_over_100_keys_compact_to_100_records_and_same_state() -> None:
    segments = _commit_log(100_000, 100, per_batch=500, per_segment=20)
    before = _replay(segments)
    assert len(before) == 100
    active = segments[-1]
    cleanable = segments[:-1]
    offset_map = build_offset_map(cleanable)
    stats = CleanStats()
    cleaned = [clean_segment(s, offset_map, now_ms=2 * DAY, delete_retention_ms=DAY, stats=stats)
               for s in cleanable]
    after_segments = [*cleaned, active]
    kept = sum(1 for s in after_segments for _ in iter_records(s))
    # Every key's latest commit in the cleaned part, plus the untouched active segment.
    active_records = sum(1 for _ in iter_records(active))
    assert kept <= 100 + active_records
    assert stats.records_read == 100_000 - active_records
    assert _replay(after_segments) == before
    # Cleaning the whole log (as after a roll) leaves exactly one record per key.
    full = [clean_segment(s, build_offset_map(after_segments), 2 * DAY, DAY)
            for s in after_segments]
    assert sum(1 for s in full for _ in iter_records(s)) == 100
    assert _replay(full) == before


def test_offsets_and_batch_bounds_are_kept() -> None:
    recs = [NewRecord(b"a", b"1"), NewRecord(b"b", b"1"), NewRecord(b"a", b"2"),
            NewRecord(b"c", b"1")]
    data = build_batch(recs, base_offset=10, timestamp=5) + build_batch(
        [NewRecord(b"c", b"2")], base_offset=14, timestamp=6)
    out = clean_segment(data, build_offset_map([data]), now_ms=7, delete_retention_ms=DAY)
    batches = [decode_batch(out, pos) for pos, _h in iter_batch_headers(out)]
    assert [(h.base_offset, h.last_offset) for h, _ in batches] == [(10, 13), (14, 14)]
    assert [(r.offset, r.key, r.value) for _, rs in batches for r in rs] == [
        (11, b"b", b"1"), (12, b"a", b"2"), (14, b"c", b"2")]


def test_tombstones_kept_until_delete_retention_then_dropped() -> None:
    data = build_batch([NewRecord(b"a", b"1"), NewRecord(b"a", None, timestamp=1000),
                        NewRecord(b"b", b"1")], base_offset=0, timestamp=500)
    omap = build_offset_map([data])
    early = clean_segment(data, omap, now_ms=1000 + DAY - 1, delete_retention_ms=DAY)
    assert [(r.key, r.value) for _, r in iter_records(early)] == [(b"a", None), (b"b", b"1")]
    stats = CleanStats()
    late = clean_segment(early, omap, now_ms=1000 + DAY, delete_retention_ms=DAY, stats=stats)
    assert [(r.key, r.value) for _, r in iter_records(late)] == [(b"b", b"1")]
    assert stats.tombstones_dropped == 1


def test_a_batch_with_nothing_left_disappears() -> None:
    data = build_batch([NewRecord(b"a", b"1")], base_offset=0) + build_batch(
        [NewRecord(b"a", b"2")], base_offset=1)
    out = clean_segment(data, build_offset_map([data]), 0, DAY)
    assert [h.base_offset for _p, h in iter_batch_headers(out)] == [1]


def test_partition_log_compacts_100k_commits_and_reloads_same_state(tmp_path: Path) -> None:
    from kafkalite.storage.compaction import LogCleaner
    from kafkalite.storage.log import PartitionLog
    from kafkalite.storage.log_config import LogConfig

    cfg = LogConfig(segment_bytes=256 * 1024, cleanup_policy="compact")
    plog = PartitionLog(tmp_path / "__consumer_offsets-0", "__consumer_offsets", 0, cfg,
                        clock=lambda: 2 * DAY)
    for data in _commit_log(100_000, 100, per_batch=100, per_segment=1):
        plog.append(data)
    assert len(plog.segments) > 5
    before = _replay(list(plog.iter_batches(0)))
    end = plog.log_end_offset
    cleaner = LogCleaner(lambda: [(plog, DAY)], clock=lambda: 2 * DAY)
    stats = asyncio.run(cleaner.clean_once_async())
    assert stats.records_read > 90_000
    assert cleaner.clean_once().records_read == 0  # nothing rolled since
    kept = sum(1 for b in plog.iter_batches(0) for _ in iter_records(b))
    active = sum(1 for _p, b in plog.active.iter_batches(0) for _ in iter_records(b))
    assert kept <= 100 + active
    assert not list((tmp_path / "__consumer_offsets-0").glob("*.cleaned"))
    assert not list((tmp_path / "__consumer_offsets-0").glob("*.swap"))
    plog.close()
    reopened = PartitionLog(tmp_path / "__consumer_offsets-0", "__consumer_offsets", 0, cfg)
    assert reopened.log_end_offset == end
    assert _replay(list(reopened.iter_batches(0))) == before
    # Reads at any offset still work (the index was rebuilt for cleaned segments).
    assert reopened.read(50_000, 1 << 20)
    reopened.close()


def test_a_crash_mid_swap_leaves_the_old_segment_whole(tmp_path: Path) -> None:
    from kafkalite.storage.compaction import build_offset_map
    from kafkalite.storage.log import PartitionLog
    from kafkalite.storage.log_config import LogConfig
    from kafkalite.storage.segment import filename

    cfg = LogConfig(segment_bytes=16 * 1024, cleanup_policy="compact")
    d = tmp_path / "__consumer_offsets-0"
    plog = PartitionLog(d, "__consumer_offsets", 0, cfg)
    for data in _commit_log(2_000, 10, per_batch=50, per_segment=1):
        plog.append(data)
    before = _replay(list(plog.iter_batches(0)))
    seg = plog.segments[0]
    data = seg.pread(seg.size, 0)
    cleaned = clean_segment(data, build_offset_map([data]), 2 * DAY, DAY)
    # The cleaner got as far as the .swap file, then the process died.
    (d / filename(seg.base_offset, ".log.swap")).write_bytes(cleaned)
    (d / filename(seg.base_offset, ".log.cleaned")).write_bytes(cleaned[:10])
    plog.close()
    reopened = PartitionLog(d, "__consumer_offsets", 0, cfg)
    assert not list(d.glob("*.swap")) and not list(d.glob("*.cleaned"))
    assert reopened.segments[0].size == len(data)
    assert _replay(list(reopened.iter_batches(0))) == before
    reopened.close()


def test_cleaning_in_a_worker_thread_shortens_gil_turns_then_restores_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from kafkalite.storage import compaction
    from kafkalite.storage.log import PartitionLog
    from kafkalite.storage.log_config import LogConfig

    cfg = LogConfig(segment_bytes=64 * 1024, cleanup_policy="compact")
    plog = PartitionLog(tmp_path / "__consumer_offsets-0", "__consumer_offsets", 0, cfg,
                        clock=lambda: 2 * DAY)
    for data in _commit_log(5_000, 10, per_batch=100, per_segment=1):
        plog.append(data)
    seen: list[float] = []
    real = compaction.compute_cleaned

    def watched(*args: object, **kwargs: object) -> object:
        seen.append(sys.getswitchinterval())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compaction, "compute_cleaned", watched)
    before = sys.getswitchinterval()
    cleaner = compaction.LogCleaner(lambda: [(plog, DAY)], clock=lambda: 2 * DAY)
    stats = asyncio.run(cleaner.clean_once_async())
    assert stats.records_read > 0
    assert seen == [pytest.approx(compaction.CLEANING_SWITCH_INTERVAL)]
    assert sys.getswitchinterval() == before
    plog.close()
