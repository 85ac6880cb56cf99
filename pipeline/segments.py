"""Kafka log directories read without Spark: partitions, segments and Arrow decoding.

A log directory holds one directory per partition (``<topic>-<n>``) with segment files
named by their 20-digit base offset (``00000000000000000000.log``), each a run of
magic-v2 record batches. Everything here reads those files directly, so a directory
copied from an Apache Kafka broker reads the same as one written by kafkalite.
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from kafkalite.protocol.crc import crc32c
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    BATCH_HEADER,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    decompress,
)

from .decode import HEADER_TYPE, RECORD_SCHEMA, Chunk, decode_chunk
from .fs import LogDirError, LogFs, explain, open_log_fs

__all__ = ["HEADER_TYPE", "RECORD_SCHEMA"]

_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_SEGMENT = re.compile(r"^(?P<base>\d{20})\.log$")

RECORD_DDL = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int, headers array<struct<key:string,value:binary>>"
)

#: One row per record batch, read from batch headers only (no decompression).
BATCH_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("baseOffset", pa.int64()),
        ("lastOffset", pa.int64()),
        ("recordCount", pa.int32()),
        ("maxTimestamp", pa.timestamp("us", tz="UTC")),
        ("compression", pa.int32()),
        ("isControl", pa.bool_()),
        ("segment", pa.string()),
    ]
)
BATCH_DDL = (
    "topic string, partition int, baseOffset long, lastOffset long, recordCount int, "
    "maxTimestamp timestamp, compression int, isControl boolean, segment string"
)

DEFAULT_ROWS_PER_BATCH = 65536
#: Bytes read at a time from a segment (a larger batch is read whole).
WINDOW = 16 << 20
#: Decoded together at most: Arrow's binary offsets are 32-bit.
CHUNK_BYTES = 256 << 20


@dataclass(frozen=True, slots=True)
class SegmentFile:
    topic: str
    partition: int
    base_offset: int
    path: str
    size: int  # bytes to read: fixed when planned, so a growing tail is read consistently
    lfs: LogFs | None = None  # None: the local disk

    @property
    def where(self) -> str:
        return self.lfs.display(self.path) if self.lfs is not None else self.path


@dataclass(frozen=True, slots=True)
class PartitionDir:
    topic: str
    partition: int
    path: str
    lfs: LogFs


def _as_lfs(log_dir: str | os.PathLike[str] | LogFs) -> LogFs:
    return log_dir if isinstance(log_dir, LogFs) else open_log_fs(os.fspath(log_dir))


def _listing(lfs: LogFs, path: str, recursive: bool) -> list[tuple[str, bool, int]]:
    """(path, is_dir, size) of the entries under ``path``."""
    try:
        if lfs.local:
            if not os.path.isdir(path):
                if os.path.exists(path):
                    raise LogDirError(f"{path} is not a directory (log directory {lfs.uri})")
                raise FileNotFoundError(path)
            out = []
            with os.scandir(path) as it:
                for e in it:
                    is_dir = e.is_dir()
                    out.append((e.path, is_dir, 0 if is_dir else e.stat().st_size))
                    if recursive and is_dir:
                        out.extend(_listing(lfs, e.path, False))
            return out
        infos = lfs.fs.get_file_info(pafs.FileSelector(path, recursive=recursive))
        return [(i.path, i.type == pafs.FileType.Directory, i.size or 0) for i in infos]
    except LogDirError:
        raise
    except (OSError, ValueError) as e:
        raise explain(lfs, path, "list", e) from e


def _choose(name: str, wanted: set[str] | None, pattern: re.Pattern[str] | None
            ) -> tuple[str, int] | None:
    m = _PARTITION_DIR.match(name)
    if not m:
        return None
    topic = m.group("topic")
    if wanted is not None and topic not in wanted:
        return None
    if pattern is not None and not pattern.fullmatch(topic):
        return None
    return topic, int(m.group("partition"))


def list_partitions(
    log_dir: str | os.PathLike[str] | LogFs,
    topics: Iterable[str] | None = None,
    topic_pattern: str | None = None,
) -> list[PartitionDir]:
    """Partition directories under ``log_dir`` chosen by topic names or a regex (full match)."""
    lfs = _as_lfs(log_dir)
    wanted = set(topics) if topics is not None else None
    pattern = re.compile(topic_pattern) if topic_pattern else None
    out: list[PartitionDir] = []
    for path, is_dir, _size in _listing(lfs, lfs.root, False):
        chosen = _choose(path.rsplit("/", 1)[-1], wanted, pattern) if is_dir else None
        if chosen:
            out.append(PartitionDir(chosen[0], chosen[1], path, lfs))
    out.sort(key=lambda p: (p.topic, p.partition))
    return out


def _segments(part: PartitionDir, entries: Iterable[tuple[str, bool, int]]) -> list[SegmentFile]:
    segs = []
    for path, is_dir, size in entries:
        m = _SEGMENT.match(path.rsplit("/", 1)[-1])
        if m and not is_dir:
            segs.append(SegmentFile(part.topic, part.partition, int(m.group("base")), path, size,
                                None if part.lfs.local else part.lfs))
    segs.sort(key=lambda s: s.base_offset)
    return segs


def segments_of(part: PartitionDir, entries: Iterable[tuple[str, bool, int]]
                ) -> list[SegmentFile]:
    """The segments among a partition directory's entries, by base offset."""
    return _segments(part, entries)


def list_segments(part: PartitionDir) -> list[SegmentFile]:
    return _segments(part, _listing(part.lfs, part.path, False))


def list_all_segments(
    log_dir: str | os.PathLike[str] | LogFs,
    topics: Iterable[str] | None = None,
    topic_pattern: str | None = None,
) -> list[SegmentFile]:
    """Every segment of the chosen partitions, from one listing (one request on S3)."""
    lfs = _as_lfs(log_dir)
    if lfs.local:
        return [s for p in list_partitions(lfs, topics, topic_pattern)
                for s in list_segments(p)]
    wanted = set(topics) if topics is not None else None
    pattern = re.compile(topic_pattern) if topic_pattern else None
    by_dir: dict[str, list[tuple[str, bool, int]]] = {}
    for entry in _listing(lfs, lfs.root, True):
        parent = entry[0].rsplit("/", 1)[0]
        by_dir.setdefault(parent, []).append(entry)
    segs = []
    for parent, entries in by_dir.items():
        if parent.rsplit("/", 1)[0] != lfs.root:
            continue
        chosen = _choose(parent.rsplit("/", 1)[-1], wanted, pattern)
        if chosen:
            segs.extend(_segments(PartitionDir(chosen[0], chosen[1], parent, lfs), entries))
    segs.sort(key=lambda s: (s.topic, s.partition, s.base_offset))
    return segs


class _Reader:
    """Byte ranges of one segment file, local (mmap) or remote (ranged reads)."""

    def __init__(self, seg: SegmentFile) -> None:
        self.seg = seg
        self._mm: mmap.mmap | None = None
        self._raf: Any = None
        try:
            if seg.lfs is None:
                with open(seg.path, "rb") as f:
                    self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            else:
                self._raf = seg.lfs.fs.open_input_file(seg.path)
        except (OSError, ValueError) as e:
            raise self._error("open", e) from e

    def _error(self, action: str, e: BaseException) -> LogDirError:
        if self.seg.lfs is None:
            return LogDirError(f"cannot {action} segment {self.seg.path}: "
                               f"{getattr(e, 'strerror', None) or e}")
        return explain(self.seg.lfs, self.seg.path, action, e)

    def read(self, pos: int, n: int) -> bytes:
        try:
            if self._mm is not None:
                return self._mm[pos : pos + n]
            data: bytes = self._raf.read_at(n, pos)
            return data
        except (OSError, ValueError) as e:
            raise self._error("read", e) from e

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
        if self._raf is not None:
            self._raf.close()

    def __enter__(self) -> _Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _batches(seg: SegmentFile, reader: _Reader) -> Iterator[tuple[tuple[int, ...], bytes, int]]:
    """(header, window, position in window) of each complete batch of the segment."""
    size = seg.size
    pos = 0
    while size - pos >= HEADER_SIZE:
        window = reader.read(pos, min(WINDOW, size - pos))
        w = 0
        while len(window) - w >= HEADER_SIZE:
            h = BATCH_HEADER.unpack_from(window, w)
            blen = h[1] + LOG_OVERHEAD
            if h[1] < HEADER_SIZE - LOG_OVERHEAD or pos + w + blen > size:
                return  # torn tail
            if w + blen > len(window):
                if w == 0:  # one batch larger than the window: read it whole
                    window = reader.read(pos, blen)
                    continue
                break
            yield h, window, w
            w += blen
        if w == 0:
            return
        pos += w


def scan_positions(seg: SegmentFile) -> Iterator[tuple[int, tuple[int, ...]]]:
    """(position, raw header tuple) of each complete batch in the first ``seg.size`` bytes."""
    if seg.size < HEADER_SIZE:
        return
    with _Reader(seg) as r:
        if seg.lfs is None:
            # Local: jump from header to header without reading the bodies.
            pos = 0
            while seg.size - pos >= HEADER_SIZE:
                h = BATCH_HEADER.unpack(r.read(pos, HEADER_SIZE))
                if h[1] < HEADER_SIZE - LOG_OVERHEAD or pos + h[1] + LOG_OVERHEAD > seg.size:
                    return
                yield pos, h
                pos += h[1] + LOG_OVERHEAD
            return
        pos = 0  # batches are consecutive from the start of the file
        for h, _w, _p in _batches(seg, r):
            yield pos, h
            pos += h[1] + LOG_OVERHEAD


def scan_headers(seg: SegmentFile) -> Iterator[tuple[int, ...]]:
    """The raw header tuple of each complete batch in the first ``seg.size`` bytes."""
    for _pos, h in scan_positions(seg):
        yield h


def read_range(seg: SegmentFile, position: int, size: int) -> bytes:
    with _Reader(seg) as r:
        return r.read(position, size)


def list_files(part: PartitionDir) -> list[tuple[str, bool, int]]:
    """(path, is_dir, size) of everything in a partition directory."""
    return _listing(part.lfs, part.path, False)


def next_offset(part: PartitionDir) -> int:
    """The partition's log end offset: one past its last complete batch."""
    segs = list_segments(part)
    if not segs:
        return 0
    for seg in reversed(segs):
        last = -1
        for h in scan_headers(seg):
            last = h[0] + h[6]
        if last >= 0:
            return max(last + 1, segs[-1].base_offset)
    return segs[-1].base_offset


def _ms_to_ts(values: list[int]) -> pa.Array:
    return pa.array([v * 1000 for v in values], pa.int64()).cast(pa.timestamp("us", tz="UTC"))


def read_segment(
    seg: SegmentFile,
    start_offset: int = 0,
    end_offset: int | None = None,
    rows_per_batch: int = DEFAULT_ROWS_PER_BATCH,
    verify_crc: bool = True,
    aborted: dict[int, list[tuple[int, int]]] | None = None,
    columns: Sequence[str] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Records of one segment with ``start_offset <= offset < end_offset`` as Arrow batches
    (all of ``RECORD_SCHEMA``'s columns, or only ``columns``).

    Control batches (transaction markers) are skipped, as a Kafka consumer skips them;
    with ``aborted`` (producer id -> (first offset, ABORT marker offset) ranges, for
    read_committed) so are the transactional batches of aborted transactions.
    """
    if seg.size == 0:
        return
    stop = end_offset if end_offset is not None else 1 << 62
    chunk = Chunk()
    with _Reader(seg) as reader:
        for h, window, w in _batches(seg, reader):
            base, blen, attrs, last_delta = h[0], h[1], h[5], h[6]
            if base >= stop:
                break
            if attrs & ATTR_CONTROL or base + last_delta < start_offset:
                continue
            if aborted and attrs & ATTR_TRANSACTIONAL and _in_aborted(aborted, h[9], base):
                continue
            end = w + blen + LOG_OVERHEAD
            if h[3] != 2:
                raise ProtocolError(f"unsupported record batch magic {h[3]} in {seg.where}")
            view = memoryview(window)
            if verify_crc and crc32c(view[w + CRC_START : end]) != h[4]:
                raise ProtocolError(f"record batch CRC mismatch at offset {base} in {seg.where}")
            codec = attrs & ATTR_COMPRESSION_MASK
            body = view[w + HEADER_SIZE : end] if codec == 0 else \
                decompress(codec, bytes(view[w + HEADER_SIZE : end]))
            chunk.add(body, base, h[12], h[7], h[8], bool(attrs & ATTR_TIMESTAMP_TYPE))
            if chunk.records >= rows_per_batch or chunk.nbytes >= CHUNK_BYTES:
                yield decode_chunk(chunk, seg.topic, seg.partition, start_offset, stop,
                                   seg.where, columns)
                chunk = Chunk()
        if chunk.records:
            yield decode_chunk(chunk, seg.topic, seg.partition, start_offset, stop, seg.where,
                               columns)


def _in_aborted(aborted: dict[int, list[tuple[int, int]]], pid: int, base: int) -> bool:
    """Whether a transactional batch of ``pid`` at ``base`` is in an aborted transaction:
    between that transaction's first offset and its ABORT marker."""
    return any(first <= base <= last for first, last in aborted.get(pid, ()))


def read_batch_headers(seg: SegmentFile, start_offset: int = 0,
                       end_offset: int | None = None) -> pa.RecordBatch:
    """One row per batch of the segment, from headers only."""
    stop = end_offset if end_offset is not None else 1 << 62
    rows: dict[str, list[object]] = {f.name: [] for f in BATCH_SCHEMA}
    stamps: list[int] = []
    for h in scan_headers(seg):
        base, last = h[0], h[0] + h[6]
        if last < start_offset:
            continue
        if base >= stop:
            break
        rows["topic"].append(seg.topic)
        rows["partition"].append(seg.partition)
        rows["baseOffset"].append(base)
        rows["lastOffset"].append(last)
        rows["recordCount"].append(h[12])
        stamps.append(h[8])
        rows["compression"].append(h[5] & ATTR_COMPRESSION_MASK)
        rows["isControl"].append(bool(h[5] & ATTR_CONTROL))
        rows["segment"].append(os.path.basename(seg.path))
    arrays = []
    for f in BATCH_SCHEMA:
        if f.name == "maxTimestamp":
            arrays.append(_ms_to_ts(stamps))
        else:
            arrays.append(pa.array(rows[f.name], f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=BATCH_SCHEMA)
