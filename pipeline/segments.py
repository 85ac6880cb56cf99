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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import crc32c
import pyarrow as pa

from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    BATCH_HEADER,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    decompress,
    read_varint,
)

_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_SEGMENT = re.compile(r"^(?P<base>\d{20})\.log$")

#: Spark's Kafka source columns, as Arrow types.
HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
RECORD_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
        ("headers", HEADER_TYPE),
    ]
)
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


@dataclass(frozen=True, slots=True)
class Segment:
    topic: str
    partition: int
    base_offset: int
    path: str
    size: int  # bytes to read: fixed when planned, so a growing tail is read consistently


@dataclass(frozen=True, slots=True)
class PartitionDir:
    topic: str
    partition: int
    path: Path


def list_partitions(
    log_dir: str | os.PathLike[str],
    topics: Iterable[str] | None = None,
    topic_pattern: str | None = None,
) -> list[PartitionDir]:
    """Partition directories under ``log_dir`` chosen by topic names or a regex (full match)."""
    wanted = set(topics) if topics is not None else None
    pattern = re.compile(topic_pattern) if topic_pattern else None
    out: list[PartitionDir] = []
    root = Path(log_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"log directory {root} does not exist")
    for entry in sorted(root.iterdir()):
        m = _PARTITION_DIR.match(entry.name)
        if not m or not entry.is_dir():
            continue
        topic = m.group("topic")
        if wanted is not None and topic not in wanted:
            continue
        if pattern is not None and not pattern.fullmatch(topic):
            continue
        out.append(PartitionDir(topic, int(m.group("partition")), entry))
    out.sort(key=lambda p: (p.topic, p.partition))
    return out


def list_segments(part: PartitionDir) -> list[Segment]:
    segs: list[Segment] = []
    for entry in part.path.iterdir():
        m = _SEGMENT.match(entry.name)
        if m:
            segs.append(
                Segment(part.topic, part.partition, int(m.group("base")), str(entry),
                        entry.stat().st_size)
            )
    segs.sort(key=lambda s: s.base_offset)
    return segs


def scan_headers(path: str, size: int) -> Iterator[tuple[int, tuple[int, ...]]]:
    """(position, raw header tuple) of each complete batch in the first ``size`` bytes."""
    with open(path, "rb") as f:
        pos = 0
        while size - pos >= HEADER_SIZE:
            f.seek(pos)
            raw = f.read(HEADER_SIZE)
            if len(raw) < HEADER_SIZE:
                return
            h = BATCH_HEADER.unpack(raw)
            batch_size = h[1] + LOG_OVERHEAD
            if h[1] < HEADER_SIZE - LOG_OVERHEAD or pos + batch_size > size:
                return  # torn tail
            yield pos, h
            pos += batch_size


def next_offset(part: PartitionDir) -> int:
    """The partition's log end offset: one past its last complete batch."""
    segs = list_segments(part)
    if not segs:
        return 0
    for seg in reversed(segs):
        last = -1
        for _pos, h in scan_headers(seg.path, seg.size):
            last = h[0] + h[6]
        if last >= 0:
            return max(last + 1, segs[-1].base_offset)
    return segs[-1].base_offset


def _ms_to_ts(values: list[int]) -> pa.Array:
    return pa.array([v * 1000 for v in values], pa.int64()).cast(pa.timestamp("us", tz="UTC"))


class _Columns:
    """Column builders for one Arrow batch of records."""

    __slots__ = ("headers", "keys", "offsets", "stamps", "ts_types", "values")

    def __init__(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.stamps: list[int] = []
        self.ts_types: list[int] = []
        self.headers: list[list[dict[str, object]] | None] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def to_batch(self, topic: str, partition: int) -> pa.RecordBatch:
        n = len(self.offsets)
        return pa.RecordBatch.from_arrays(
            [
                pa.array(self.keys, pa.binary()),
                pa.array(self.values, pa.binary()),
                pa.array([topic] * n, pa.string()),
                pa.array([partition] * n, pa.int32()),
                pa.array(self.offsets, pa.int64()),
                _ms_to_ts(self.stamps),
                pa.array(self.ts_types, pa.int32()),
                pa.array(self.headers, HEADER_TYPE),
            ],
            schema=RECORD_SCHEMA,
        )


def read_segment(
    seg: Segment,
    start_offset: int = 0,
    end_offset: int | None = None,
    rows_per_batch: int = DEFAULT_ROWS_PER_BATCH,
    verify_crc: bool = True,
) -> Iterator[pa.RecordBatch]:
    """Records of one segment with ``start_offset <= offset < end_offset`` as Arrow batches.

    Control batches (transaction markers) are skipped, as a Kafka consumer skips them.
    """
    if seg.size == 0:
        return
    stop = end_offset if end_offset is not None else 1 << 62
    cols = _Columns()
    with open(seg.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        size = min(seg.size, len(mm))
        pos = 0
        while size - pos >= HEADER_SIZE:
            h = BATCH_HEADER.unpack_from(mm, pos)
            base, blen, attrs, last_delta, base_ts, max_ts, count = (
                h[0], h[1], h[5], h[6], h[7], h[8], h[12])
            end = pos + blen + LOG_OVERHEAD
            if blen < HEADER_SIZE - LOG_OVERHEAD or end > size:
                break  # torn tail
            if base >= stop:
                break
            if attrs & ATTR_CONTROL or base + last_delta < start_offset:
                pos = end
                continue
            if h[3] != 2:
                raise ProtocolError(f"unsupported record batch magic {h[3]} in {seg.path}")
            if verify_crc and crc32c.crc32c(mm[pos + CRC_START : end]) != h[4]:
                raise ProtocolError(f"record batch CRC mismatch at {pos} in {seg.path}")
            body = decompress(attrs & ATTR_COMPRESSION_MASK, mm[pos + HEADER_SIZE : end])
            _decode_records(body, count, base, base_ts, max_ts, attrs, start_offset, stop, cols)
            pos = end
            if len(cols) >= rows_per_batch:
                yield cols.to_batch(seg.topic, seg.partition)
                cols = _Columns()
    if len(cols):
        yield cols.to_batch(seg.topic, seg.partition)


def _decode_records(
    body: bytes, count: int, base: int, base_ts: int, max_ts: int, attrs: int,
    start: int, stop: int, cols: _Columns,
) -> None:
    # Hot loop: varints inlined for the common one-byte case.
    append_key = cols.keys.append
    append_value = cols.values.append
    append_offset = cols.offsets.append
    append_stamp = cols.stamps.append
    append_type = cols.ts_types.append
    append_headers = cols.headers.append
    log_append = bool(attrs & ATTR_TIMESTAMP_TYPE)
    ts_type = 1 if log_append else 0
    slow = read_varint
    p = 0
    for _ in range(count):
        b = body[p]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            length, p = slow(body, p)
        rec_end = p + length
        p += 1  # record attributes
        b = body[p]
        if b < 0x80:
            ts_delta = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            ts_delta, p = slow(body, p)
        b = body[p]
        if b < 0x80:
            off_delta = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            off_delta, p = slow(body, p)
        offset = base + off_delta
        if offset < start or offset >= stop:
            p = rec_end
            continue
        b = body[p]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            n, p = slow(body, p)
        if n < 0:
            key = None
        else:
            key = body[p : p + n]
            p += n
        b = body[p]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            n, p = slow(body, p)
        if n < 0:
            value = None
        else:
            value = body[p : p + n]
            p += n
        b = body[p]
        if b == 0:
            headers: list[dict[str, object]] = []
            p += 1
        else:
            nh, p = slow(body, p)
            headers = []
            for _h in range(nh):
                n, p = slow(body, p)
                hk = body[p : p + n].decode("utf-8", "replace") if n >= 0 else ""
                p += max(n, 0)
                n, p = slow(body, p)
                hv = body[p : p + n] if n >= 0 else None
                p += max(n, 0)
                headers.append({"key": hk, "value": hv})
        if p != rec_end:
            raise ProtocolError("record length mismatch")
        append_key(key)
        append_value(value)
        append_offset(offset)
        append_stamp(max_ts if log_append else base_ts + ts_delta)
        append_type(ts_type)
        append_headers(headers)


def read_batch_headers(seg: Segment, start_offset: int = 0,
                       end_offset: int | None = None) -> pa.RecordBatch:
    """One row per batch of the segment, from headers only."""
    stop = end_offset if end_offset is not None else 1 << 62
    rows: dict[str, list[object]] = {f.name: [] for f in BATCH_SCHEMA}
    stamps: list[int] = []
    for _pos, h in scan_headers(seg.path, seg.size):
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
