"""Compaction of ``cleanup.policy=compact`` logs, as Kafka's log cleaner does it.

Two passes over the cleanable part of a log (every segment but the active one):

1. ``build_offset_map``: the offset of the latest record of each key.
2. ``clean_segment``: each batch keeps the records that are still the latest for their key;
   a tombstone (null value) is kept until ``delete.retention.ms`` has passed since its
   timestamp, so that consumers reading the log get to see the delete.

Offsets never change: a batch keeps its base offset and its last offset (as Kafka keeps
``lastOffsetDelta`` so producer state stays valid), only the records between thin out.
Batches of transactions and control batches are copied as they are (the coordinator's
own log has none; keeping them is always safe).

The pure functions here work on bytes; ``LogCleaner`` applies them to a log's segments and
swaps the cleaned files in atomically (``.cleaned`` -> ``.swap`` -> replace).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import structlog

from kafkalite.protocol.records import (
    BatchHeader,
    Record,
    decode_batch,
    iter_batch_headers,
    rebuild_batch,
)

from .fsutil import fsync_dir
from .log import PartitionLog
from .segment import Segment, filename

log = structlog.get_logger("kafkalite.storage")


@dataclass(slots=True)
class CleanStats:
    batches_read: int = 0
    records_read: int = 0
    records_kept: int = 0
    tombstones_dropped: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    def add(self, other: CleanStats) -> None:
        self.batches_read += other.batches_read
        self.records_read += other.records_read
        self.records_kept += other.records_kept
        self.tombstones_dropped += other.tombstones_dropped
        self.bytes_read += other.bytes_read
        self.bytes_written += other.bytes_written


def _copied_as_is(h: BatchHeader) -> bool:
    return h.is_control or h.is_transactional


def build_offset_map(segments: Iterable[bytes], offset_map: dict[bytes, int] | None = None,
                     ) -> dict[bytes, int]:
    """Key -> offset of its latest record over ``segments`` (in log order)."""
    out: dict[bytes, int] = {} if offset_map is None else offset_map
    for data in segments:
        for pos, h in iter_batch_headers(data):
            if _copied_as_is(h):
                continue
            _, records = decode_batch(data, pos)
            for r in records:
                if r.key is not None:
                    out[r.key] = r.offset
    return out


def clean_segment(
    data: bytes,
    offset_map: dict[bytes, int],
    now_ms: int,
    delete_retention_ms: int,
    stats: CleanStats | None = None,
) -> bytes:
    """The bytes of segment ``data`` with superseded records and expired tombstones gone."""
    st = stats if stats is not None else CleanStats()
    out = bytearray()
    end = 0
    for pos, h in iter_batch_headers(data):
        end = pos + h.size
        st.batches_read += 1
        st.bytes_read += h.size
        if _copied_as_is(h):
            out += data[pos:end]
            st.records_read += h.record_count
            st.records_kept += h.record_count
            continue
        _, records = decode_batch(data, pos)
        st.records_read += len(records)
        kept: list[Record] = []
        for r in records:
            if r.key is not None and offset_map.get(r.key, -1) > r.offset:
                continue  # a later record of the same key supersedes it
            expired = r.timestamp + delete_retention_ms <= now_ms
            if r.key is not None and r.value is None and expired:
                st.tombstones_dropped += 1
                continue
            kept.append(r)
        st.records_kept += len(kept)
        if len(kept) == len(records):
            out += data[pos:end]
        elif kept:
            out += rebuild_batch(h, kept)
    st.bytes_written += len(out)
    return bytes(out)



# --- applying it to a partition log -------------------------------------------------------


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def swap_segment(plog: PartitionLog, i: int, cleaned: bytes) -> None:
    """Replace segment ``i`` of ``plog`` by ``cleaned`` as Kafka's cleaner does: write
    ``.cleaned``, rename it to ``.swap``, then replace the segment; a crash at any point
    leaves the old or the new segment whole (the log deletes leftovers on load). The old
    indexes go before the new file lands, so a crash never pairs them with it."""
    seg = plog.segments[i]
    base = seg.base_offset
    directory = seg.dir
    cleaned_path = directory / filename(base, ".log.cleaned")
    swap_path = directory / filename(base, ".log.swap")
    _write_synced(cleaned_path, cleaned)
    os.rename(cleaned_path, swap_path)
    seg.close()
    for p in (seg.index.path, seg.time_index.path):
        p.unlink(missing_ok=True)
    os.replace(swap_path, seg.log_path)
    fsync_dir(directory)
    new = Segment(directory, base, seg.created_ms)
    new.scan(False, plog.config.index_interval_bytes)
    new.index.write_pending()
    new.time_index.write_pending()
    plog.segments[i] = new


def compute_cleaned(segments: list[Segment], now_ms: int, delete_retention_ms: int
                    ) -> tuple[list[bytes | None], CleanStats]:
    """The cleaned bytes of each closed segment (None: unchanged). Reads only: safe to run
    off the event loop, as closed segments never change under it. One segment is in
    memory at a time (each is read twice: once for the offset map, once to filter)."""
    stats = CleanStats()
    offset_map: dict[bytes, int] = {}
    for seg in segments:
        build_offset_map([seg.pread(seg.size, 0)], offset_map)
    out: list[bytes | None] = []
    for seg in segments:
        data = seg.pread(seg.size, 0)
        cleaned = clean_segment(data, offset_map, now_ms, delete_retention_ms, stats)
        out.append(None if len(cleaned) == len(data) else cleaned)
    return out, stats


def _swap_all(plog: PartitionLog, segments: list[Segment], cleaned: list[bytes | None]) -> int:
    swapped = 0
    for seg, data in zip(segments, cleaned, strict=True):
        if data is None or plog.closed:
            continue
        # The segment may have gone meanwhile (retention, topic deletion): skip it then.
        i = next((j for j, s in enumerate(plog.segments) if s is seg), None)
        if i is None or i == len(plog.segments) - 1:
            continue
        swap_segment(plog, i, data)
        swapped += 1
    return swapped


def _log_stats(plog: PartitionLog, segments: int, stats: CleanStats) -> None:
    log.info("log.cleaned", topic=plog.topic, partition=plog.partition, segments=segments,
             records_read=stats.records_read, records_kept=stats.records_kept,
             tombstones_dropped=stats.tombstones_dropped, bytes_read=stats.bytes_read,
             bytes_written=stats.bytes_written)


def clean_log(plog: PartitionLog, now_ms: int, delete_retention_ms: int) -> CleanStats:
    """Compact every segment of ``plog`` but the active one; return what it did."""
    segments = plog.segments[:-1]
    if not segments:
        return CleanStats()
    cleaned, stats = compute_cleaned(segments, now_ms, delete_retention_ms)
    _swap_all(plog, segments, cleaned)
    _log_stats(plog, len(segments), stats)
    return stats


class LogCleaner:
    """Cleans the compacted logs it is given, a log only when segments rolled since its last
    cleaning (``__consumer_offsets`` first). The broker's scheduler calls ``run_pass`` every
    ``log.cleaner.backoff.ms``."""

    def __init__(self, logs: Callable[[], Iterable[tuple[PartitionLog, int]]],
                 clock: Callable[[], int]) -> None:
        #: ``logs()``: (log, delete.retention.ms) of every log to compact, in order.
        self.logs = logs
        self.clock = clock
        self._cleaned_up_to: dict[tuple[str, int], int] = {}
        self._task: asyncio.Task[CleanStats] | None = None

    def clean_once(self) -> CleanStats:
        total = CleanStats()
        for plog, delete_retention_ms in self._due():
            upto = plog.active.base_offset
            total.add(clean_log(plog, self.clock(), delete_retention_ms))
            self._cleaned_up_to[(plog.topic, plog.partition)] = upto
        return total

    def _due(self) -> list[tuple[PartitionLog, int]]:
        return [(plog, drm) for plog, drm in self.logs()
                if not plog.closed and len(plog.segments) > 1
                and self._cleaned_up_to.get((plog.topic, plog.partition))
                != plog.active.base_offset]

    async def clean_once_async(self) -> CleanStats:
        """As ``clean_once``, reading and filtering in a worker thread; the swaps (quick
        renames) happen on the event loop that owns the logs."""
        total = CleanStats()
        for plog, delete_retention_ms in self._due():
            upto = plog.active.base_offset
            segments = plog.segments[:-1]
            cleaned, stats = await asyncio.to_thread(
                compute_cleaned, segments, self.clock(), delete_retention_ms)
            _swap_all(plog, segments, cleaned)
            _log_stats(plog, len(segments), stats)
            total.add(stats)
            self._cleaned_up_to[(plog.topic, plog.partition)] = upto
        return total

    def run_pass(self, _now: int) -> None:
        """One cleaning pass: in a worker thread when an event loop runs (unless the last
        pass is still going), inline otherwise (fake-clock tests)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.clean_once()
            return
        if self._task is not None and not self._task.done():
            return
        self._task = loop.create_task(self.clean_once_async())
        self._task.add_done_callback(_report_failure)

    async def start(self) -> None:
        """Nothing to start: the scheduler runs the passes."""

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None


def _report_failure(task: asyncio.Task[CleanStats]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("log.cleaner_failed", error=repr(task.exception()))
