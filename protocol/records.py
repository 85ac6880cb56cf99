"""Record batches (magic v2) as Kafka writes them.

The broker's hot path only touches the 61-byte batch header (``parse_batch_header``,
``check_batch``); decoding single records (``decode_batch``) is for tools, the
coordinator's own log and the pipeline.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import cramjam
import crc32c

from .errors import ProtocolError

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordCount
#: The 61-byte batch header, unpacked as a plain tuple where speed matters.
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
_HEADER = BATCH_HEADER
HEADER_SIZE = _HEADER.size  # 61
#: Bytes of the batch before ``batchLength`` counts: baseOffset and batchLength itself.
LOG_OVERHEAD = 12
#: CRC-32C covers everything from the attributes field to the end of the batch.
CRC_START = 21
_CRC_POS = 17
_ATTR_POS = 21
_MAX_TS_POS = 35

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


@dataclass(frozen=True, slots=True)
class BatchHeader:
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
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def parse_batch_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    if len(buf) - pos < HEADER_SIZE:
        raise ProtocolError("truncated record batch header")
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def check_batch(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Validate one batch at ``pos``: magic 2, sane lengths, CRC-32C. Return its header."""
    h = parse_batch_header(buf, pos)
    if h.magic != 2:
        raise ProtocolError(f"unsupported record batch magic {h.magic}")
    if h.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise ProtocolError(f"record batch length {h.batch_length} too small")
    end = pos + h.size
    if end > len(buf):
        raise ProtocolError("truncated record batch")
    if h.last_offset_delta < 0 or h.record_count < 0:
        raise ProtocolError("negative record count")
    view = memoryview(buf)[pos + CRC_START : end]
    if crc32c.crc32c(view) != h.crc:
        raise ProtocolError("record batch CRC mismatch")
    return h


def iter_batch_headers(
    buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) of each complete batch; stop at a partial one."""
    limit = len(buf) if end is None else end
    while limit - pos >= HEADER_SIZE:
        h = BatchHeader(*_HEADER.unpack_from(buf, pos))
        if h.batch_length < HEADER_SIZE - LOG_OVERHEAD or pos + h.size > limit:
            return
        yield pos, h
        pos += h.size


def set_base_offset(batch: bytearray, pos: int, base_offset: int) -> None:
    """Write the assigned base offset into a batch header (not covered by the CRC)."""
    struct.pack_into(">q", batch, pos, base_offset)


def set_log_append_time(batch: bytearray, pos: int, timestamp_ms: int) -> None:
    """Stamp LogAppendTime: set the attribute bit and max timestamp, then re-compute CRC."""
    h = parse_batch_header(batch, pos)
    struct.pack_into(">h", batch, pos + _ATTR_POS, h.attributes | ATTR_TIMESTAMP_TYPE)
    struct.pack_into(">q", batch, pos + _MAX_TS_POS, timestamp_ms)
    crc = crc32c.crc32c(memoryview(batch)[pos + CRC_START : pos + h.size])
    struct.pack_into(">I", batch, pos + _CRC_POS, crc)


# --- records ---------------------------------------------------------------------------


@dataclass(slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


def _zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def _write_varint(out: bytearray, n: int) -> None:
    v = _zigzag(n) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise ProtocolError("truncated varint in record")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise ProtocolError("varint too long in record")
    return (result >> 1) ^ -(result & 1), pos


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


def compress(codec: int, data: bytes) -> bytes:
    if codec == COMPRESSION_NONE:
        return data
    if codec == COMPRESSION_GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == COMPRESSION_SNAPPY:
        block = bytes(cramjam.snappy.compress_raw(data))
        return _XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block
    if codec == COMPRESSION_LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == COMPRESSION_ZSTD:
        return bytes(cramjam.zstd.compress(data))
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
    body = bytearray()
    for i, r in enumerate(records):
        rec = bytearray(b"\x00")
        _write_varint(rec, stamps[i] - base_ts)
        _write_varint(rec, i)
        for b in (r.key, r.value):
            if b is None:
                _write_varint(rec, -1)
            else:
                _write_varint(rec, len(b))
                rec += b
        _write_varint(rec, len(r.headers))
        for hk, hv in r.headers:
            kb = hk.encode()
            _write_varint(rec, len(kb))
            rec += kb
            if hv is None:
                _write_varint(rec, -1)
            else:
                _write_varint(rec, len(hv))
                rec += hv
        _write_varint(body, len(rec))
        body += rec
    payload = compress(compression, bytes(body))
    attrs = (attributes & ~ATTR_COMPRESSION_MASK) | compression
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
    header = bytearray(
        _HEADER.pack(
            base_offset,
            batch_length,
            partition_leader_epoch,
            2,
            0,
            attrs,
            len(records) - 1,
            base_ts,
            max(stamps),
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    )
    out = header + payload
    crc = crc32c.crc32c(memoryview(out)[CRC_START:])
    struct.pack_into(">I", out, _CRC_POS, crc)
    return bytes(out)
