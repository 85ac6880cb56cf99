"""Record batches to Arrow columns in bulk.

A chunk of (decompressed) batch bodies is decoded column by column with NumPy: the only
step per record in Python is the walk from one record to the next (a record's length is
a varint in front of it, so the next start depends on the previous one); every field
after that — attributes, timestamp and offset deltas, keys, values and headers — is
decoded for all records of the chunk at once, and keys and values are gathered into
Arrow's binary buffers without a Python object per record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import read_varint

_PAD = b"\0" * 16  # so a truncated varint reads zeros instead of past the buffer

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


@dataclass
class Chunk:
    """Batch bodies waiting to be decoded together, with what each batch's header said."""

    bodies: list[bytes | memoryview] = field(default_factory=list)
    base: list[int] = field(default_factory=list)
    count: list[int] = field(default_factory=list)
    base_ts: list[int] = field(default_factory=list)
    max_ts: list[int] = field(default_factory=list)
    log_append: list[bool] = field(default_factory=list)
    records: int = 0
    nbytes: int = 0

    def add(self, body: bytes | memoryview, base: int, count: int, base_ts: int, max_ts: int,
            log_append: bool) -> None:
        self.bodies.append(body)
        self.base.append(base)
        self.count.append(count)
        self.base_ts.append(base_ts)
        self.max_ts.append(max_ts)
        self.log_append.append(log_append)
        self.records += count
        self.nbytes += len(body)


def _run(raw: np.ndarray, pos: int, end: int, limit: int) -> int:
    """How many records from ``pos`` on have the size of the first (at most ``limit``).

    Exact, not a guess: the length field of each record at ``pos + k * size`` is read and
    compared, so a record is accepted only if the one before it ends where it starts.
    Records in a batch often share one size, changing only where the offset delta's
    varint grows a byte (at 64, 8192, ...).
    """
    b0 = int(raw[pos])
    if b0 < 0x80:
        width, v = 1, b0
    else:
        b1 = int(raw[pos + 1])
        if b1 >= 0x80:
            return 0
        width, v = 2, (b0 & 0x7F) | (b1 << 7)
    size = width + ((v >> 1) ^ -(v & 1))
    if size <= width:
        return 0
    k = min(limit, (end - pos) // size)
    if k < 2:
        return 0
    starts = np.arange(pos, pos + k * size, size, dtype=np.int64)
    first = raw[starts]
    if width == 1:
        ok = first == b0
    else:
        ok = (first == b0) & (raw[starts + 1] == raw[pos + 1])
    bad = np.flatnonzero(~ok)
    return int(bad[0]) if bad.size else k


_PROBE = 64  # records checked at a time for a run of one size; doubled while runs hold


def _walk(buf: bytes, ends: list[int], counts: list[int], where: str) -> np.ndarray:
    """Start position of every record: the chain of record lengths, batch by batch.

    Runs of equal-sized records are found and checked in bulk (:func:`_run`); where sizes
    vary, records are walked one by one, for longer stretches each time a check fails.
    """
    raw = np.frombuffer(buf, np.uint8)
    parts: list[np.ndarray] = []
    starts: list[int] = []
    append = starts.append
    pos = 0
    walk = 16  # records to walk one by one before checking for a run again
    try:
        for end, count in zip(ends, counts, strict=True):
            left = count
            probe = _PROBE
            while left:
                m = _run(raw, pos, end, min(left, probe)) if left >= 8 else 0
                if m >= 8:
                    b = buf[pos]
                    v = b if b < 0x80 else (b & 0x7F) | (buf[pos + 1] << 7)
                    step = ((v >> 1) ^ -(v & 1)) + (1 if b < 0x80 else 2)
                    if starts:
                        parts.append(np.array(starts, np.int64))
                        starts = []
                        append = starts.append
                    parts.append(np.arange(pos, pos + m * step, step, dtype=np.int64))
                    pos += m * step
                    left -= m
                    probe = probe * 2 if m == probe else _PROBE
                    walk = 16
                    continue
                for _ in range(min(left, walk)):
                    append(pos)
                    b = buf[pos]
                    if b < 0x80:
                        pos += 1 + ((b >> 1) ^ -(b & 1))
                        continue
                    b2 = buf[pos + 1]
                    if b2 < 0x80:
                        v = (b & 0x7F) | (b2 << 7)
                        pos += 2 + ((v >> 1) ^ -(v & 1))
                        continue
                    n, pos = read_varint(buf, pos)
                    pos += n
                left -= min(left, walk)
                walk = min(walk * 2, 4096)
            if pos != end:
                raise ProtocolError(f"record lengths do not add up to the batch size in {where}")
    except IndexError:
        raise ProtocolError(f"truncated record in {where}") from None
    if starts:
        parts.append(np.array(starts, np.int64))
    out = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    if out.size > 1 and not bool(np.all(out[1:] > out[:-1])):
        raise ProtocolError(f"negative record length in {where}")
    return out


def _varints(buf: np.ndarray, pos: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag-decoded values (int64) and byte lengths of the varints starting at ``pos``."""
    if pos.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if int(pos.max()) >= buf.size - len(_PAD) or int(pos.min()) < 0:
        raise ProtocolError(f"truncated record in {where}")
    b = buf[pos]
    val = (b & 0x7F).astype(np.int64)
    cont = b >= 0x80
    count = int(np.count_nonzero(cont))
    if not count:
        return (val >> 1) ^ -(val & 1), np.ones(pos.size, np.int64)
    n = np.ones(pos.size, np.int64)
    k = 1  # bytes read so far by every varint still going on
    while count:
        if k == 9:  # 63 bits: the rest needs unsigned arithmetic (a varlong's 10th byte)
            return _wide_varints(buf, pos, where)
        if count * 4 > pos.size:
            # Most go on (a record length past 63 bytes, an offset delta past 63): whole
            # arrays, no index lists. The byte after a varint's end is read and masked out
            # (the padding keeps it inside the buffer).
            b = buf[pos + k]
            val |= np.where(cont, (b & 0x7F).astype(np.int64) << (7 * k), 0)
            n += cont
            cont &= b >= 0x80
        else:
            more = np.flatnonzero(cont)
            b = buf[pos[more] + k]
            val[more] |= (b & 0x7F).astype(np.int64) << (7 * k)
            n[more] += 1
            cont[more[b < 0x80]] = False
        count = int(np.count_nonzero(cont))
        k += 1
    return (val >> 1) ^ -(val & 1), n


def _wide_varints(buf: np.ndarray, pos: np.ndarray, where: str
                  ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_varints` for chunks where some varint is longer than 9 bytes."""
    b = buf[pos].astype(np.uint64)
    val = b & np.uint64(0x7F)
    n = np.ones(pos.size, np.int64)
    more = np.flatnonzero(b & np.uint64(0x80))
    shift = 7
    while more.size:
        if shift > 63:
            raise ProtocolError(f"varint too long in {where}")
        b = buf[pos[more] + n[more]].astype(np.uint64)
        val[more] |= (b & np.uint64(0x7F)) << np.uint64(shift)
        n[more] += 1
        more = more[(b & np.uint64(0x80)) != 0]
        shift += 7
    signed = (val >> np.uint64(1)).view(np.int64) ^ -(val & np.uint64(1)).view(np.int64)
    return signed, n


def _gather(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The bytes ``buf[s:s+n]`` of every (s, n), concatenated; the ranges are ascending."""
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, np.uint8)
    longest = int(lens.max())
    if longest * lens.size <= 2 * total and int(starts.max()) + longest <= buf.size:
        # Lengths alike (one length, as often): each range as a row of a sliding-window
        # view, copied row by row; rows longer than their range are cut by a mask.
        rows = np.lib.stride_tricks.sliding_window_view(buf, longest)[starts]
        if longest * lens.size == total:
            flat: np.ndarray = rows.reshape(-1)
            return flat
        cut: np.ndarray = rows[np.arange(longest) < lens[:, None]]
        return cut
    if total * 8 < buf.size:
        # Sparse: index the few bytes wanted.
        first = np.zeros(lens.size, np.int64)
        np.cumsum(lens[:-1], out=first[1:])
        idx = np.repeat(starts - first, lens) + np.arange(total, dtype=np.int64)
        picked: np.ndarray = buf[idx]
        return picked
    # Dense (values): a mask of alternating runs (gap, wanted), then one selection.
    runs = np.empty(2 * lens.size + 1, np.int64)
    runs[0] = starts[0]
    runs[2:-1:2] = starts[1:] - (starts[:-1] + lens[:-1])
    runs[1::2] = lens
    runs[-1] = buf.size - (starts[-1] + lens[-1])
    flags = np.zeros(runs.size, np.bool_)
    flags[1::2] = True
    out: np.ndarray = buf[np.repeat(flags, runs)]
    return out


def _binary(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray, typ: pa.DataType,
            nullable: bool = True) -> pa.Array:
    n = lens.size
    valid = lens >= 0
    ln = np.where(valid, lens, 0)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(ln, out=offsets[1:])
    if offsets[-1] > 0x7FFFFFFF:
        raise ProtocolError("more than 2 GiB of keys or values in one chunk")
    data = _gather(buf, starts, ln)
    nulls = n - int(valid.sum()) if nullable else 0
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    arr = pa.Array.from_buffers(
        typ, n, [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)], nulls
    )
    if typ == pa.string():
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid:
            # Not UTF-8: decode as the record-by-record reader does, with replacement.
            arr = pa.array(
                [None if v is None else v.decode("utf-8", "replace")
                 for v in arr.cast(pa.binary()).to_pylist()], pa.string())
    return arr


def decode_chunk(chunk: Chunk, topic: str, partition: int, start_offset: int, stop_offset: int,
                 where: str, columns: Sequence[str] | None = None) -> pa.RecordBatch:
    """The records of every batch in ``chunk`` with ``start <= offset < stop``, as Arrow:
    the columns of ``RECORD_SCHEMA``, or only ``columns`` (in that order; the others are
    not built)."""
    raw = b"".join([*chunk.bodies, _PAD])
    ends = np.cumsum([len(b) for b in chunk.bodies]).tolist()
    starts = _walk(raw, ends, chunk.count, where)
    buf = np.frombuffer(raw, np.uint8)
    n = starts.size

    length, w = _varints(buf, starts, where)
    rec_end = starts + w + length
    q = starts + w + 1  # past the record attributes
    ts_delta, w = _varints(buf, q, where)
    q += w
    off_delta, w = _varints(buf, q, where)
    q += w
    klen, w = _varints(buf, q, where)
    kstart = q + w
    q = kstart + np.maximum(klen, 0)
    vlen, w = _varints(buf, q, where)
    vstart = q + w
    q = vstart + np.maximum(vlen, 0)
    hcount, w = _varints(buf, q, where)
    q += w
    if n and int(hcount.min()) < 0:
        raise ProtocolError(f"negative header count in {where}")

    # Headers, one level at a time: the j-th header of every record that has one.
    hoff = np.zeros(n + 1, np.int64)
    np.cumsum(hcount, out=hoff[1:])
    nh = int(hoff[-1])
    hk_start = np.zeros(nh, np.int64)
    hk_len = np.zeros(nh, np.int64)
    hv_start = np.zeros(nh, np.int64)
    hv_len = np.zeros(nh, np.int64)
    j = 0
    rows = np.flatnonzero(hcount > 0)
    while rows.size:
        at = hoff[rows] + j
        p = q[rows]
        kl, w = _varints(buf, p, where)
        hk_start[at] = p + w
        hk_len[at] = np.maximum(kl, 0)  # a null header key reads as ""
        p = p + w + hk_len[at]
        vl, w = _varints(buf, p, where)
        hv_start[at] = p + w
        hv_len[at] = vl
        q[rows] = p + w + np.maximum(vl, 0)
        j += 1
        rows = rows[hcount[rows] > j]
    if not np.array_equal(q, rec_end):
        raise ProtocolError(f"record length mismatch in {where}")

    counts = np.array(chunk.count, np.int64)
    batch_of = np.repeat(np.arange(counts.size), counts)
    offsets = np.array(chunk.base, np.int64)[batch_of] + off_delta
    log_append = np.array(chunk.log_append, np.bool_)[batch_of]
    stamps = np.where(log_append, np.array(chunk.max_ts, np.int64)[batch_of],
                      np.array(chunk.base_ts, np.int64)[batch_of] + ts_delta)

    def headers() -> pa.Array:
        values = pa.StructArray.from_arrays(
            [_binary(buf, hk_start, hk_len, pa.string()),
             _binary(buf, hv_start, hv_len, pa.binary())],
            fields=list(HEADER_TYPE.value_type),
        )
        return pa.ListArray.from_arrays(pa.array(hoff.astype(np.int32)), values,
                                        type=HEADER_TYPE)

    make = {
        "key": lambda: _binary(buf, kstart, klen, pa.binary()),
        "value": lambda: _binary(buf, vstart, vlen, pa.binary()),
        "topic": lambda: pa.repeat(pa.scalar(topic, pa.string()), n),
        "partition": lambda: pa.array(np.full(n, partition, np.int32)),
        "offset": lambda: pa.array(offsets),
        "timestamp": lambda: pa.array(stamps * 1000).cast(pa.timestamp("us", tz="UTC")),
        "timestampType": lambda: pa.array(log_append.astype(np.int32)),
        "headers": headers,
    }
    schema = RECORD_SCHEMA if columns is None else pa.schema(
        [RECORD_SCHEMA.field(c) for c in columns])
    batch = pa.RecordBatch.from_arrays([make[f.name]() for f in schema], schema=schema)
    keep = (offsets >= start_offset) & (offsets < stop_offset)
    if not bool(keep.all()):
        batch = batch.filter(pa.array(keep))
    return batch
