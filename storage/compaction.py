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

import struct
from collections.abc import Iterable
from dataclasses import dataclass

import crc32c

from protocol.records import (
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    Record,
    compress,
    decode_batch,
    iter_batch_headers,
)

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC_POS = 17


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


def _varint(out: bytearray, n: int) -> None:
    v = ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _varbytes(out: bytearray, b: bytes | None) -> None:
    if b is None:
        _varint(out, -1)
    else:
        _varint(out, len(b))
        out += b


def rebuild_batch(h: BatchHeader, records: list[Record]) -> bytes:
    """A batch with ``h``'s base and last offset, producer fields and compression, holding
    ``records`` at their own offsets and timestamps."""
    log_append = h.log_append_time
    base_ts = h.base_timestamp if log_append else min(r.timestamp for r in records)
    max_ts = h.max_timestamp if log_append else max(r.timestamp for r in records)
    body = bytearray()
    for r in records:
        rec = bytearray(b"\x00")
        _varint(rec, 0 if log_append else r.timestamp - base_ts)
        _varint(rec, r.offset - h.base_offset)
        _varbytes(rec, r.key)
        _varbytes(rec, r.value)
        _varint(rec, len(r.headers))
        for hk, hv in r.headers:
            _varbytes(rec, hk.encode())
            _varbytes(rec, hv)
        _varint(body, len(rec))
        body += rec
    payload = compress(h.compression, bytes(body))
    out = bytearray(_HEADER.pack(
        h.base_offset, HEADER_SIZE - LOG_OVERHEAD + len(payload), h.partition_leader_epoch, 2, 0,
        h.attributes, h.last_offset_delta, base_ts, max_ts, h.producer_id, h.producer_epoch,
        h.base_sequence, len(records),
    ))
    out += payload
    struct.pack_into(">I", out, _CRC_POS, crc32c.crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


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

