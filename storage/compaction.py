"""Compaction of ``cleanup.policy=compact`` logs, as Kafka's log cleaner does it.

Two passes over the cleanable part of a log (every segment but the active one):

1. ``build_offset_map``: the offset of the latest record of each key.
2. ``clean_segment``: each batch keeps the records that are still the latest for their key;
   a tombstone (null value) is kept until ``delete.retention.ms`` has passed since its
   timestamp, so that consumers reading the log get to see the delete.

Offsets never change: a batch keeps its base offset and its last offset (as Kafka keeps
``lastOffsetDelta`` so producer state stays valid), only the records between thin out.

Transactions, as Kafka's cleaner (``CleanedTransactionMetadata``): only segments below the
last stable offset are cleaned, so every transaction met is decided. ``TxnTracker`` walks
the batches with the aborted transactions of the range (from the txn indexes): a batch of
an aborted transaction is dropped whole, and never enters the offset map; committed
transactional records are compacted like any other. A COMMIT marker goes once no batch of
its transaction is left in the cleaned range, an ABORT marker once its transaction's
batches are gone, each only after ``delete.retention.ms`` from the marker's timestamp (as
tombstones here; Kafka stamps a delete horizon into the batch instead). A segment's
``.txnindex`` keeps the entries of the ABORT markers that still have aborted batches
behind them, and is replaced after the segment's log, so a crash between the two leaves
extra entries (harmless), never missing ones.

The pure functions here work on bytes; ``LogCleaner`` applies them to a log's segments and
swaps the cleaned files in atomically (``.cleaned`` -> ``.swap`` -> replace).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from kafkalite.protocol.control import read_end_txn_marker
from kafkalite.protocol.errors import ProtocolError
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
from .txn_index import AbortedTxn

log = structlog.get_logger("kafkalite.storage")


@dataclass(slots=True)
class CleanStats:
    batches_read: int = 0
    records_read: int = 0
    records_kept: int = 0
    tombstones_dropped: int = 0
    aborted_dropped: int = 0
    markers_dropped: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    def add(self, other: CleanStats) -> None:
        self.batches_read += other.batches_read
        self.records_read += other.records_read
        self.records_kept += other.records_kept
        self.tombstones_dropped += other.tombstones_dropped
        self.aborted_dropped += other.aborted_dropped
        self.markers_dropped += other.markers_dropped
        self.bytes_read += other.bytes_read
        self.bytes_written += other.bytes_written


@dataclass(slots=True)
class _AbortedState:
    txn: AbortedTxn
    seen_batch: bool = False


@dataclass
class TxnTracker:
    """Transaction state met while walking a cleaned range in order (Kafka's
    ``CleanedTransactionMetadata``). Give it the aborted transactions overlapping the
    range; ``index`` collects the entries the cleaned segment's ``.txnindex`` keeps."""

    aborted: list[AbortedTxn] = field(default_factory=list)
    _pending: list[tuple[int, int, AbortedTxn]] = field(default_factory=list)
    _open_aborted: dict[int, _AbortedState] = field(default_factory=dict)
    _open_committed: set[int] = field(default_factory=set)
    index: list[AbortedTxn] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._pending = [(t.first_offset, i, t) for i, t in enumerate(self.aborted)]
        heapq.heapify(self._pending)

    def _reach(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            txn = heapq.heappop(self._pending)[2]
            self._open_aborted.setdefault(txn.producer_id, _AbortedState(txn))

    def on_batch(self, h: BatchHeader) -> bool:
        """A data batch; True if it belongs to an aborted transaction."""
        self._reach(h.last_offset)
        if not h.is_transactional:
            return False
        state = self._open_aborted.get(h.producer_id)
        if state is not None:
            state.seen_batch = True
            return True
        self._open_committed.add(h.producer_id)
        return False

    def on_marker(self, h: BatchHeader, batch: bytes) -> bool:
        """A control batch; True if it may go (once its delete retention has passed)."""
        self._reach(h.last_offset)
        try:
            marker = read_end_txn_marker(batch)
        except ProtocolError:
            return False
        if marker is None:
            return h.record_count == 0  # emptied by an earlier cleaning: nothing to keep
        if marker.commit:
            if h.producer_id in self._open_committed:
                self._open_committed.discard(h.producer_id)
                return False
            return True
        state = self._open_aborted.pop(h.producer_id, None)
        if state is not None and state.seen_batch:
            self.index.append(state.txn)
            return False
        return True

    def take_index(self) -> list[AbortedTxn]:
        out, self.index = self.index, []
        return out


def build_offset_map(segments: Iterable[bytes], offset_map: dict[bytes, int] | None = None,
                     txns: TxnTracker | None = None) -> dict[bytes, int]:
    """Key -> offset of its latest record over ``segments`` (in log order), leaving out
    aborted transactions and markers."""
    out: dict[bytes, int] = {} if offset_map is None else offset_map
    tracker = txns if txns is not None else TxnTracker()
    for data in segments:
        for pos, h in iter_batch_headers(data):
            if h.is_control:
                tracker.on_marker(h, data[pos : pos + h.size])
                continue
            if tracker.on_batch(h):
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
    txns: TxnTracker | None = None,
) -> bytes:
    """The bytes of segment ``data`` with superseded records, expired tombstones, aborted
    transactions and markers no longer needed gone."""
    st = stats if stats is not None else CleanStats()
    tracker = txns if txns is not None else TxnTracker()
    out = bytearray()
    end = 0
    for pos, h in iter_batch_headers(data):
        end = pos + h.size
        st.batches_read += 1
        st.bytes_read += h.size
        st.records_read += h.record_count  # the count decoding checks
        if h.is_control:
            if (tracker.on_marker(h, data[pos:end])
                    and h.max_timestamp + delete_retention_ms <= now_ms):
                st.markers_dropped += 1
                continue
            out += data[pos:end]
            st.records_kept += h.record_count
            continue
        if tracker.on_batch(h):
            st.aborted_dropped += h.record_count
            continue
        _, records = decode_batch(data, pos)
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


def swap_segment(plog: PartitionLog, i: int, cleaned: bytes | None,
                 txn_index: list[AbortedTxn] | None = None) -> None:
    """Replace segment ``i`` of ``plog`` by ``cleaned`` as Kafka's cleaner does: write
    ``.cleaned``, rename it to ``.swap``, then replace the segment; a crash at any point
    leaves the old or the new segment whole (the log deletes leftovers on load). The old
    indexes go before the new file lands, so a crash never pairs them with it. The
    ``.txnindex`` (``txn_index``: its new entries) is replaced last."""
    seg = plog.segments[i]
    if cleaned is not None:
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
        seg = Segment(directory, base, seg.created_ms)
        seg.txn_index.load()
        seg.scan(False, plog.config.index_interval_bytes)
        seg.index.write_pending()
        seg.time_index.write_pending()
        plog.segments[i] = seg
    if txn_index is not None:
        seg.txn_index.replace(txn_index)


def cleanable_segments(plog: PartitionLog) -> list[Segment]:
    """The closed segments wholly below the last stable offset: every transaction with
    data there is decided (Kafka's first uncleanable offset)."""
    segs = plog.segments
    lso = plog.last_stable_offset
    out = []
    for k in range(len(segs) - 1):
        if segs[k + 1].base_offset > lso:
            break
        out.append(segs[k])
    return out


#: What cleaning makes of one segment: its new log bytes and its new aborted-transaction
#: index entries (None: unchanged).
Cleaned = tuple[bytes | None, list[AbortedTxn] | None]


def compute_cleaned(segments: list[Segment], now_ms: int, delete_retention_ms: int,
                    aborted: list[AbortedTxn] | None = None,
                    indexes: list[list[AbortedTxn]] | None = None,
                    ) -> tuple[list[Cleaned], CleanStats]:
    """The cleaned bytes and index of each closed segment. ``aborted``: the aborted
    transactions overlapping the segments; ``indexes``: each segment's current index
    entries. Reads only: safe to run off the event loop, as closed segments never change
    under it. One segment is in memory at a time (each is read twice: once for the offset
    map, once to filter)."""
    stats = CleanStats()
    offset_map: dict[bytes, int] = {}
    mapping = TxnTracker(list(aborted or ()))
    for seg in segments:
        build_offset_map([seg.pread(seg.size, 0)], offset_map, mapping)
    tracker = TxnTracker(list(aborted or ()))
    out: list[Cleaned] = []
    for k, seg in enumerate(segments):
        data = seg.pread(seg.size, 0)
        cleaned = clean_segment(data, offset_map, now_ms, delete_retention_ms, stats, tracker)
        entries = tracker.take_index()
        current = indexes[k] if indexes is not None else []
        out.append((None if len(cleaned) == len(data) else cleaned,
                    None if entries == current else entries))
    return out, stats


def _plan(plog: PartitionLog) -> tuple[list[Segment], list[AbortedTxn], list[list[AbortedTxn]]]:
    """On the event loop: what to clean, with the transaction state it needs."""
    segments = cleanable_segments(plog)
    if not segments:
        return [], [], []
    end = plog.segments[len(segments)].base_offset
    aborted = plog.aborted_transactions(segments[0].base_offset, end)
    return segments, aborted, [list(s.txn_index.entries) for s in segments]


def _swap_all(plog: PartitionLog, segments: list[Segment], cleaned: list[Cleaned]) -> int:
    swapped = 0
    for seg, (data, entries) in zip(segments, cleaned, strict=True):
        if (data is None and entries is None) or plog.closed:
            continue
        # The segment may have gone meanwhile (retention, topic deletion): skip it then.
        i = next((j for j, s in enumerate(plog.segments) if s is seg), None)
        if i is None or i == len(plog.segments) - 1:
            continue
        swap_segment(plog, i, data, entries)
        swapped += 1
    plog.txn.recount_aborted(plog.segments)
    return swapped


def _log_stats(plog: PartitionLog, segments: int, stats: CleanStats) -> None:
    log.info("log.cleaned", topic=plog.topic, partition=plog.partition, segments=segments,
             records_read=stats.records_read, records_kept=stats.records_kept,
             tombstones_dropped=stats.tombstones_dropped,
             aborted_dropped=stats.aborted_dropped, markers_dropped=stats.markers_dropped,
             bytes_read=stats.bytes_read, bytes_written=stats.bytes_written)


def clean_log(plog: PartitionLog, now_ms: int, delete_retention_ms: int) -> CleanStats:
    """Compact every segment of ``plog`` below its last stable offset but the active one;
    return what it did."""
    segments, aborted, indexes = _plan(plog)
    if not segments:
        return CleanStats()
    cleaned, stats = compute_cleaned(segments, now_ms, delete_retention_ms, aborted, indexes)
    _swap_all(plog, segments, cleaned)
    _log_stats(plog, len(segments), stats)
    return stats


def _cleanable_end(plog: PartitionLog) -> int:
    n = len(cleanable_segments(plog))
    return plog.segments[n].base_offset if n else -1


#: The interpreter's switch interval while a cleaning runs in a worker thread.
CLEANING_SWITCH_INTERVAL = 0.0002
_cleanings = 0
_switch_interval = 0.0
#: Brokers on other threads of the process (test fixtures) may clean at the same time.
_cleanings_lock = threading.Lock()


@contextlib.contextmanager
def _short_gil_turns() -> Iterator[None]:
    """The worker thread, once it holds the GIL, keeps it for up to the switch interval
    (5 ms by default) after the event loop asks for it: every request arriving during a
    cleaning would wait that long (docs/benchmarks.md, "Log cleaner", has what it did to
    round trips and pipelined OffsetFetch). A short interval while
    cleaning bounds the wait; without a competing thread it costs nothing."""
    global _cleanings, _switch_interval
    with _cleanings_lock:
        if _cleanings == 0:
            _switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_interval, CLEANING_SWITCH_INTERVAL))
        _cleanings += 1
    try:
        yield
    finally:
        with _cleanings_lock:
            _cleanings -= 1
            if _cleanings == 0:
                sys.setswitchinterval(_switch_interval)


class LogCleaner:
    """Cleans the compacted logs it is given, a log only when its cleanable part grew since
    its last cleaning: a roll, or its last stable offset moved (``__consumer_offsets``
    first). The broker's scheduler calls ``run_pass`` every
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
            upto = _cleanable_end(plog)
            total.add(clean_log(plog, self.clock(), delete_retention_ms))
            self._cleaned_up_to[(plog.topic, plog.partition)] = upto
        return total

    def _due(self) -> list[tuple[PartitionLog, int]]:
        """Logs whose cleanable part grew (a roll, or the last stable offset moved)."""
        return [(plog, drm) for plog, drm in self.logs()
                if not plog.closed and len(plog.segments) > 1
                and self._cleaned_up_to.get((plog.topic, plog.partition))
                != _cleanable_end(plog)]

    async def clean_once_async(self) -> CleanStats:
        """As ``clean_once``, reading and filtering in a worker thread; the swaps (quick
        renames) happen on the event loop that owns the logs."""
        total = CleanStats()
        for plog, delete_retention_ms in self._due():
            upto = _cleanable_end(plog)
            segments, aborted, indexes = _plan(plog)
            if not segments:
                continue
            for seg in segments:  # read by the worker: their descriptors stay open
                seg.pins += 1
            try:
                with _short_gil_turns():
                    cleaned, stats = await asyncio.to_thread(
                        compute_cleaned, segments, self.clock(), delete_retention_ms,
                        aborted, indexes)
            finally:
                for seg in segments:
                    seg.pins -= 1
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
