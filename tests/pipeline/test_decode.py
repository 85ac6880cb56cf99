"""The column-by-column decoder (``pipeline/decode.py``) without Spark, against aiokafka's
record-by-record reader: the shapes its fast paths take — long runs of equal-sized
records across the offset delta's varint growing a byte (at 64 and 8192), sizes that vary
within a batch, headers, null keys and values, every codec, chunks cut at any record
count, and offset ranges."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from aiokafka.record.default_records import DefaultRecordBatch

from kafkalite.pipeline import segments as sg
from kafkalite.pipeline.logwriter import PartitionWriter
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    NewRecord,
)

T0 = 1_700_000_000_000
CODECS = [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4,
          COMPRESSION_ZSTD]


def write_shapes(root: Path) -> None:
    rng = random.Random(3)
    w = PartitionWriter(root, "shapes", 0)
    # 9,000 records of one size: offset deltas cross 64 and 8192, so the record length
    # grows by a byte twice within the batch.
    w.append([NewRecord(None, b"v" * 100, T0) for _ in range(9000)], T0)
    # Equal sizes with a key and a header, then a run broken every 37 records.
    w.append([NewRecord(b"key-%03d" % (i % 1000), b"x" * 50, T0 + 5, [("h", b"1")])
              for i in range(300)], T0)
    w.append([NewRecord(None, b"y" * (20 if i % 37 else 21), T0) for i in range(500)], T0)
    # Timestamp deltas whose varints vary in width, null values, empty keys.
    w.append([NewRecord(b"" if i % 5 == 0 else None, None if i % 7 == 0 else b"z" * 30,
                        T0 + rng.choice([0, 1, 100, 70_000, 10**9])) for i in range(400)], T0)
    for codec in CODECS:
        recs = []
        for _ in range(rng.randint(50, 300)):
            key = None if rng.random() < 0.2 else rng.randbytes(rng.randint(0, 20))
            value = None if rng.random() < 0.05 else rng.randbytes(rng.randint(0, 300))
            headers = [(f"h{j}", None if rng.random() < 0.2 else rng.randbytes(5))
                       for j in range(rng.choice([0, 0, 1, 3]))]
            recs.append(NewRecord(key, value, T0 + rng.randint(0, 100_000), headers))
        w.append(recs, T0, codec)
        w.append([NewRecord(None, b"c" * 64, T0) for _ in range(200)], T0, codec)
    w.close()


def independent(root: Path) -> list[tuple[Any, ...]]:
    rows = []
    for seg in sorted((root / "shapes-0").glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack_from(">i", data, pos + 8)
            batch = DefaultRecordBatch(data[pos : pos + 12 + length])
            assert batch.validate_crc()
            pos += 12 + length
            for r in batch:
                rows.append((r.offset, r.timestamp, r.key, r.value,
                             [(k, v) for k, v in r.headers]))
    return rows


def decoded(batches: list[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    table = pa.Table.from_batches(batches, schema=sg.RECORD_SCHEMA)
    out = []
    for r in table.to_pylist():
        out.append((r["offset"], int(r["timestamp"].timestamp() * 1000), r["key"], r["value"],
                    [(h["key"], h["value"]) for h in r["headers"]]))
    return out


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shapes")
    write_shapes(root)
    return root


@pytest.mark.parametrize("rows_per_batch", [1 << 16, 4096, 1])
def test_every_shape_decodes_as_the_independent_reader(shapes: Path,
                                                       rows_per_batch: int) -> None:
    (seg,) = sg.list_all_segments(shapes, ["shapes"])
    got = decoded(list(sg.read_segment(seg, rows_per_batch=rows_per_batch)))
    want = independent(shapes)
    assert len(want) > 11_000
    assert got == want


def test_offset_ranges(shapes: Path) -> None:
    (seg,) = sg.list_all_segments(shapes, ["shapes"])
    want = independent(shapes)
    for lo, hi in ((0, 1), (63, 65), (8191, 9300), (9000, 9801), (10_150, 10**9)):
        got = decoded(list(sg.read_segment(seg, lo, hi)))
        assert got == [r for r in want if lo <= r[0] < hi], (lo, hi)


def test_a_record_length_that_does_not_add_up_is_an_error_naming_the_segment(
        tmp_path: Path) -> None:
    w = PartitionWriter(tmp_path, "bad", 0)
    w.append([NewRecord(None, b"v" * 10, T0) for _ in range(100)], T0)
    w.close()
    path = tmp_path / "bad-0" / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    at = 61 + 17 * 15  # the 16th record's length (17-byte records after the batch header)
    assert data[at] == 32  # zigzag 16
    data[at] = 0x7E  # 63: in the middle of the equal-sized run
    path.write_bytes(bytes(data))
    (seg,) = sg.list_all_segments(tmp_path, ["bad"])
    with pytest.raises(ProtocolError, match=str(path)):
        list(sg.read_segment(seg, verify_crc=False))


def test_only_the_columns_asked_for(shapes: Path) -> None:
    (seg,) = sg.list_all_segments(shapes, ["shapes"])
    full = pa.Table.from_batches(list(sg.read_segment(seg)))
    part = pa.Table.from_batches(list(sg.read_segment(seg, 63, 9000,
                                                      columns=["value", "offset"])))
    assert part.schema.names == ["value", "offset"]
    want = full.filter(pc.and_(pc.greater_equal(full["offset"], 63),
                               pc.less(full["offset"], 9000)))
    assert part.equals(want.select(["value", "offset"]))


def _zigzag_varint(v: int) -> bytes:
    z = ((v << 1) ^ (v >> 63)) & (2**64 - 1)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


@pytest.mark.parametrize("widest", [1, 2, 9, 10])
def test_varints_of_every_width(widest: int) -> None:
    import numpy as np

    from kafkalite.pipeline.decode import _PAD, _varints

    rng = random.Random(widest)
    limit = {1: 63, 2: 8191, 9: 2**62 - 1, 10: 2**63 - 1}[widest]
    values = [rng.randint(-limit - 1, limit) for _ in range(2000)] + [limit, -limit - 1, 0]
    encoded = [_zigzag_varint(v) for v in values]
    assert max(len(e) for e in encoded) == widest
    pos = np.cumsum([0] + [len(e) for e in encoded[:-1]]).astype(np.int64)
    buf = np.frombuffer(b"".join(encoded) + _PAD, np.uint8)
    got, n = _varints(buf, pos, "test")
    assert got.tolist() == values
    assert n.tolist() == [len(e) for e in encoded]
