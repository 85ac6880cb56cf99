"""Record batches (magic v2) as Kafka writes them.

The broker's hot path only touches the 61-byte batch header: ``BATCH_HEADER`` unpacks it
to a tuple read by field index (``h[PRODUCER_ID]``), ``assigned_parts`` and
``set_log_append_time`` patch it. ``BatchHeader`` names the same fields for everything
else. Decoding single records (``decode_batch``) is for tools, the coordinator's own log
and the pipeline; ``encode_batch`` is the one encoder, for new batches (``build_batch``)
and for the log cleaner's thinned ones (``rebuild_batch``).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import cramjam

from .crc import crc32c
from .errors import ProtocolError
from .varint import put_varint, read_uvarint
from .varint import read_varint as read_varint  # pipeline.segments imports it here

_FORMAT = ">qiibIhiqqqhii"
#: The 61-byte batch header. Hot paths unpack it to a plain tuple and read it by the field
#: indices below (``h[PRODUCER_ID]``); the rest build a ``BatchHeader``.
BATCH_HEADER = struct.Struct(_FORMAT)
HEADER_SIZE = BATCH_HEADER.size  # 61


class BatchHeader(NamedTuple):
    """A batch header's fields, in the order ``BATCH_HEADER`` unpacks them."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch on disk or on the wire."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & ATTR_COMPRESSION_MASK

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & ATTR_TIMESTAMP_TYPE)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)


#: Indices of the fields in the tuple ``BATCH_HEADER`` unpacks (``BatchHeader``'s order).
(
    BASE_OFFSET, BATCH_LENGTH, PARTITION_LEADER_EPOCH, MAGIC, CRC, ATTRIBUTES,
    LAST_OFFSET_DELTA, BASE_TIMESTAMP, MAX_TIMESTAMP, PRODUCER_ID, PRODUCER_EPOCH,
    BASE_SEQUENCE, RECORD_COUNT,
) = range(len(BatchHeader._fields))


def _position(field_index: int) -> int:
    return struct.calcsize(_FORMAT[: field_index + 1])  # the byte order and the fields before


#: Byte positions of the header fields within a batch.
BATCH_LENGTH_POS = _position(BATCH_LENGTH)  # 8
PARTITION_LEADER_EPOCH_POS = _position(PARTITION_LEADER_EPOCH)  # 12
MAGIC_POS = _position(MAGIC)  # 16
CRC_POS = _position(CRC)  # 17
ATTRIBUTES_POS = _position(ATTRIBUTES)  # 21
LAST_OFFSET_DELTA_POS = _position(LAST_OFFSET_DELTA)  # 23
BASE_TIMESTAMP_POS = _position(BASE_TIMESTAMP)  # 27
MAX_TIMESTAMP_POS = _position(MAX_TIMESTAMP)  # 35
#: Bytes of the batch before ``batchLength`` counts: baseOffset and batchLength itself.
LOG_OVERHEAD = PARTITION_LEADER_EPOCH_POS
#: CRC-32C covers everything from the attributes field to the end of the batch.
CRC_START = ATTRIBUTES_POS
#: The smallest ``batchLength``: a header and no records.
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD

COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
COMPRESSION_SNAPPY = 2
COMPRESSION_LZ4 = 3
COMPRESSION_ZSTD = 4
COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08  # set: LogAppendTime
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
MAX_SEQUENCE = 0x7FFFFFFF

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
#: baseOffset, batchLength, partitionLeaderEpoch: the bytes the broker assigns.
_ASSIGNED = struct.Struct(_FORMAT[:4])
#: The header up to the CRC, and from the attributes on (the part the CRC covers).
_UNCOVERED = struct.Struct(_FORMAT[: 1 + ATTRIBUTES])
_CRC_COVERED = struct.Struct(">" + _FORMAT[1 + ATTRIBUTES :])


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment``, wrapping from ``MAX_SEQUENCE`` to 0 as Kafka's do."""
    return (sequence + increment) & MAX_SEQUENCE


def parse_batch_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    if len(buf) - pos < HEADER_SIZE:
        raise ProtocolError("truncated record batch header")
    return BatchHeader._make(BATCH_HEADER.unpack_from(buf, pos))


def check_batch(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Validate one batch at ``pos``: magic 2, sane lengths, CRC-32C. Return its header."""
    h = parse_batch_header(buf, pos)
    if h.magic != 2:
        raise ProtocolError(f"unsupported record batch magic {h.magic}")
    if h.batch_length < MIN_BATCH_LENGTH:
        raise ProtocolError(f"record batch length {h.batch_length} too small")
    end = pos + h.size
    if end > len(buf):
        raise ProtocolError("truncated record batch")
    if h.last_offset_delta < 0 or h.record_count < 0:
        raise ProtocolError("negative record count")
    view = memoryview(buf)[pos + CRC_START : end]
    if crc32c(view) != h.crc:
        raise ProtocolError("record batch CRC mismatch")
    return h


def iter_batch_headers(
    buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) of each complete batch; stop at a partial one."""
    limit = len(buf) if end is None else end
    while limit - pos >= HEADER_SIZE:
        h = BatchHeader._make(BATCH_HEADER.unpack_from(buf, pos))
        if h.batch_length < MIN_BATCH_LENGTH or pos + h.size > limit:
            return
        yield pos, h
        pos += h.size


def set_base_offset(batch: bytearray, pos: int, base_offset: int) -> None:
    """Write the assigned base offset into a batch header (not covered by the CRC)."""
    _I64.pack_into(batch, pos, base_offset)


def assigned_parts(
    batch: memoryview, base_offset: int, leader_epoch: int
) -> list[bytes | memoryview]:
    """The one batch ``batch`` with the broker's base offset and partition leader epoch in
    place of the producer's (the CRC covers neither), as buffers for ``writev``: the
    records are not copied."""
    return [_ASSIGNED.pack(base_offset, len(batch) - LOG_OVERHEAD, leader_epoch),
            batch[MAGIC_POS:]]


def set_crc(batch: bytearray, pos: int = 0) -> None:
    """Re-compute the CRC-32C of the batch at ``pos`` (as long as its ``batchLength``) after
    a change to the fields it covers."""
    (length,) = _I32.unpack_from(batch, pos + BATCH_LENGTH_POS)
    crc = crc32c(memoryview(batch)[pos + CRC_START : pos + LOG_OVERHEAD + length])
    _U32.pack_into(batch, pos + CRC_POS, crc)


def set_log_append_time(batch: bytearray, pos: int, timestamp_ms: int) -> None:
    """Stamp LogAppendTime: set the attribute bit and max timestamp, then re-compute CRC."""
    (attributes,) = _I16.unpack_from(batch, pos + ATTRIBUTES_POS)
    _I16.pack_into(batch, pos + ATTRIBUTES_POS, attributes | ATTR_TIMESTAMP_TYPE)
    _I64.pack_into(batch, pos + MAX_TIMESTAMP_POS, timestamp_ms)
    set_crc(batch, pos)


# --- records ---------------------------------------------------------------------------


@dataclass(slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


def _read_varbytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise ProtocolError("truncated bytes in record")
    return bytes(buf[pos : pos + n]), pos + n


_XERIAL_MAGIC = b"\x82SNAPPY\x00"


def decompress(codec: int, data: bytes) -> bytes:
    try:
        if codec == COMPRESSION_NONE:
            return data
        if codec == COMPRESSION_GZIP:
            return zlib.decompress(data, 47)  # gzip or zlib header
        if codec == COMPRESSION_SNAPPY:
            if data.startswith(_XERIAL_MAGIC):
                # Java's xerial framing: 16-byte header, then (int32 size, block)*.
                out = bytearray()
                pos = 16
                while pos + 4 <= len(data):
                    (n,) = struct.unpack_from(">i", data, pos)
                    pos += 4
                    out += bytes(cramjam.snappy.decompress_raw(data[pos : pos + n]))
                    pos += n
                return bytes(out)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == COMPRESSION_LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == COMPRESSION_ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except ProtocolError:
        raise
    except Exception as e:
        raise ProtocolError(f"cannot decompress {COMPRESSION_NAMES.get(codec)} batch: {e}") from e
    raise ProtocolError(f"unknown compression codec {codec}")


def compress(codec: int, data: bytes, level: int | None = None) -> bytes:
    """``data`` compressed with ``codec`` at ``level`` (None or, for gzip, -1: the codec's
    default), as Kafka's ``compression.<codec>.level`` (KIP-390)."""
    if codec == COMPRESSION_NONE:
        return data
    if level is not None and level < 0:
        level = None
    if codec == COMPRESSION_GZIP:
        return bytes(cramjam.gzip.compress(data, level=level))
    if codec == COMPRESSION_SNAPPY:
        block = bytes(cramjam.snappy.compress_raw(data))
        return _XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block
    if codec == COMPRESSION_LZ4:
        return bytes(cramjam.lz4.compress(data, level=level))
    if codec == COMPRESSION_ZSTD:
        return bytes(cramjam.zstd.compress(data, level=level))
    raise ValueError(f"unknown compression codec {codec}")


def decode_batch(
    buf: bytes | bytearray | memoryview, pos: int = 0
) -> tuple[BatchHeader, list[Record]]:
    """Decode every record of the batch at ``pos`` (checks the CRC first)."""
    h = check_batch(buf, pos)
    body = bytes(buf[pos + HEADER_SIZE : pos + h.size])
    body = decompress(h.compression, body)
    records: list[Record] = []
    p = 0
    for _ in range(h.record_count):
        length, p = read_varint(body, p)
        end = p + length
        if end > len(body):
            raise ProtocolError("truncated record")
        p += 1  # attributes
        ts_delta, p = read_varint(body, p)
        off_delta, p = read_varint(body, p)
        key, p = _read_varbytes(body, p)
        value, p = _read_varbytes(body, p)
        n_headers, p = read_varint(body, p)
        headers: list[tuple[str, bytes | None]] = []
        for _h in range(n_headers):
            hk, p = _read_varbytes(body, p)
            hv, p = _read_varbytes(body, p)
            headers.append(((hk or b"").decode("utf-8", "replace"), hv))
        if p != end:
            raise ProtocolError("record length mismatch")
        ts = h.max_timestamp if h.log_append_time else h.base_timestamp + ts_delta
        records.append(Record(h.base_offset + off_delta, ts, key, value, headers))
    return h, records


class RecordSummary(NamedTuple):
    """What the broker's append-time validation needs of a record, without copying its
    key, value or headers."""

    timestamp: int
    offset_delta: int
    key_length: int  # -1: null key
    value_length: int  # -1: null value; -2: not read


def summarize_records(buf: bytes | bytearray | memoryview, pos: int = 0,
                      values: bool = False) -> list[RecordSummary]:
    """Timestamps, offset deltas and key lengths (and, with ``values``, value lengths) of
    every record of the (already checked) batch at ``pos``; decompresses once and copies
    no record fields. One-byte varints, most of them, are read inline: this runs for
    every batch written to a compacted topic."""
    h = parse_batch_header(buf, pos)
    if h.compression != COMPRESSION_NONE:
        body = decompress(h.compression, bytes(buf[pos + HEADER_SIZE : pos + h.size]))
    else:
        body = bytes(buf[pos + HEADER_SIZE : pos + h.size])
    base_ts = h.max_timestamp if h.log_append_time else h.base_timestamp
    fixed_ts = h.log_append_time
    read = read_uvarint
    out: list[RecordSummary] = []
    p = 0
    n = len(body)
    try:
        for _ in range(h.record_count):
            v = body[p]
            if v < 0x80:
                p += 1
            else:
                v, p = read(body, p)
            end = p + ((v >> 1) ^ -(v & 1))
            if end > n or end <= p:
                raise ProtocolError("truncated record")
            q = p + 1  # after the attributes byte
            v = body[q]
            if v < 0x80:
                q += 1
            else:
                v, q = read(body, q)
            ts_delta = (v >> 1) ^ -(v & 1)
            v = body[q]
            if v < 0x80:
                q += 1
            else:
                v, q = read(body, q)
            off_delta = (v >> 1) ^ -(v & 1)
            v = body[q]
            if v < 0x80:
                q += 1
            else:
                v, q = read(body, q)
            key_len = (v >> 1) ^ -(v & 1)
            if q + key_len > end:
                raise ProtocolError("record key overruns its record")
            value_len = -2
            if values:
                value_len, _q = read_varint(body, q + max(key_len, 0))
            out.append(RecordSummary(base_ts if fixed_ts else base_ts + ts_delta,
                                     off_delta, key_len, value_len))
            p = end
    except IndexError:
        raise ProtocolError("truncated record") from None
    return out


def iter_records(buf: bytes | bytearray | memoryview) -> Iterator[tuple[BatchHeader, Record]]:
    """Every record of every complete batch in ``buf`` (a segment or a fetch response)."""
    for pos, _h in iter_batch_headers(buf):
        h, recs = decode_batch(buf, pos)
        for r in recs:
            yield h, r


@dataclass(slots=True)
class NewRecord:
    key: bytes | None
    value: bytes | None
    timestamp: int = -1
    headers: Sequence[tuple[str, bytes | None]] = ()


#: One record to encode: timestamp delta, offset delta, key, value, headers.
RecordFields = tuple[int, int, bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]


def _zigzag_bytes(v: int) -> bytes:
    out = bytearray()
    put_varint(out, v)
    return bytes(out)


#: Signed varints of the small non-negative values most record fields hold (deltas and
#: lengths), ready to join.
_SMALL = tuple(_zigzag_bytes(v) for v in range(1024))


def _varint(v: int) -> bytes:
    return _SMALL[v] if 0 <= v < 1024 else _zigzag_bytes(v)


def _varbytes(parts: list[bytes], b: bytes | None) -> None:
    if b is None:
        parts.append(b"\x01")  # -1 as a zigzag varint
    else:
        parts.append(_varint(len(b)))
        parts.append(b)


def encode_batch(header: tuple[int, ...], records: Iterable[RecordFields],
                 level: int | None = None) -> bytes:
    """One magic-v2 batch of ``records`` under ``header``'s fields (a ``BatchHeader`` or a
    plain tuple in its order), compressed as its attributes say (at ``level``). The batch
    length, magic, CRC and record count are computed; the header's own are ignored."""
    body = bytearray()
    count = 0
    small = _SMALL
    for ts_delta, offset_delta, key, value, headers in records:
        if (not headers and key is not None and value is not None
                and 0 <= ts_delta < 1024 and 0 <= offset_delta < 1024
                and len(key) < 1024 and len(value) < 1024):
            # The common record: every field a one- or two-byte varint from the table.
            rec = b"".join((b"\x00", small[ts_delta], small[offset_delta], small[len(key)],
                            key, small[len(value)], value, b"\x00"))
            body += small[len(rec)] if len(rec) < 1024 else _zigzag_bytes(len(rec))
            body += rec
            count += 1
            continue
        parts = [b"\x00", _varint(ts_delta), _varint(offset_delta)]  # attributes: unused
        _varbytes(parts, key)
        _varbytes(parts, value)
        parts.append(_varint(len(headers)))
        for hk, hv in headers:
            _varbytes(parts, hk.encode())
            _varbytes(parts, hv)
        rec = b"".join(parts)
        body += _varint(len(rec))
        body += rec
        count += 1
    codec = header[ATTRIBUTES] & ATTR_COMPRESSION_MASK
    payload = body if codec == COMPRESSION_NONE else compress(codec, bytes(body), level)
    # The CRC-covered part first, then what precedes it: no pass to patch the CRC in.
    covered = _CRC_COVERED.pack(*header[ATTRIBUTES:RECORD_COUNT], count) + payload
    return _UNCOVERED.pack(header[BASE_OFFSET], MIN_BATCH_LENGTH + len(payload),
                           header[PARTITION_LEADER_EPOCH], 2, crc32c(covered)) + covered


def build_batch(
    records: Sequence[NewRecord],
    *,
    base_offset: int = 0,
    timestamp: int = 0,
    compression: int = COMPRESSION_NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = 0,
    attributes: int = 0,
) -> bytes:
    """Encode records into one magic-v2 batch. Records with timestamp -1 get ``timestamp``."""
    if not records:
        raise ValueError("a batch needs at least one record")
    stamps = [r.timestamp if r.timestamp >= 0 else timestamp for r in records]
    base_ts = min(stamps)
    header = (
        base_offset, 0, partition_leader_epoch, 2, 0,
        (attributes & ~ATTR_COMPRESSION_MASK) | compression, len(records) - 1, base_ts,
        max(stamps), producer_id, producer_epoch, base_sequence, len(records),
    )
    return encode_batch(header, [
        (stamps[i] - base_ts, i, r.key, r.value, r.headers) for i, r in enumerate(records)
    ])


def rebuild_batch(h: BatchHeader, records: Sequence[Record]) -> bytes:
    """A batch with ``h``'s base and last offset, producer fields and attributes, holding
    ``records`` (some of ``h``'s, as the log cleaner keeps them) at their own offsets and
    timestamps."""
    if h.log_append_time:  # every record carries the batch's max timestamp
        base_ts, max_ts = h.base_timestamp, h.max_timestamp
        rows = [(0, r.offset - h.base_offset, r.key, r.value, r.headers) for r in records]
    else:
        base_ts = min(r.timestamp for r in records)
        max_ts = max(r.timestamp for r in records)
        rows = [(r.timestamp - base_ts, r.offset - h.base_offset, r.key, r.value, r.headers)
                for r in records]
    return encode_batch(h._replace(base_timestamp=base_ts, max_timestamp=max_ts), rows)
