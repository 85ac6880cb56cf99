"""read_committed in the Spark data source: the last stable offset and aborted
transactions of a log directory (kafkalite's, or one laid out by Kafka), the batch and
stream readers (called directly, no Spark), and one Spark read with the option."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafkalite.pipeline import segments as sg
from kafkalite.pipeline.source import _BatchReader, _parse_options, _StreamReader
from kafkalite.pipeline.transactions import TxnView, transaction_view
from kafkalite.protocol.records import ATTR_TRANSACTIONAL, NewRecord, build_batch
from kafkalite.storage.log import PartitionLog
from kafkalite.storage.log_config import LogConfig

pytestmark = pytest.mark.timeout(600)

T0 = 1_700_000_000_000
A, B, C = 11, 22, 33
COMMITTED = ["p0", "a1", "p3", "p5", "a6", "p8"]
EVERYTHING = ["p0", "a1", "b2", "p3", "b4", "p5", "a6", "p8", "c10", "p11"]


def open_log(root: Path) -> PartitionLog:
    return PartitionLog(root / "tx-0", "tx", 0, LogConfig(segment_bytes=300),
                        clock=lambda: T0)


def write(plog: PartitionLog, value: str, pid: int = -1, seq: int = 0) -> None:
    plog.append(build_batch([NewRecord(None, value.encode(), T0)], timestamp=T0,
                            producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                            base_sequence=seq if pid >= 0 else -1,
                            attributes=ATTR_TRANSACTIONAL if pid >= 0 else 0))


@pytest.fixture
def txn_log(tmp_path: Path) -> Path:
    """A commits, B aborts (across segments), C is still open with a record after it."""
    root = tmp_path / "logs"
    plog = open_log(root)
    write(plog, "p0")
    write(plog, "a1", A, 0)
    write(plog, "b2", B, 0)
    write(plog, "p3")
    write(plog, "b4", B, 1)
    write(plog, "p5")
    write(plog, "a6", A, 1)
    plog.append_control_marker(B, 0, 0, commit=False)   # 7
    write(plog, "p8")
    plog.append_control_marker(A, 0, 0, commit=True)    # 9
    write(plog, "c10", C, 0)
    write(plog, "p11")
    assert len(plog.segments) > 2 and plog.last_stable_offset == 10
    plog.close()
    return root


def partition(root: Path) -> sg.PartitionDir:
    (pdir,) = sg.list_partitions(root, ["tx"])
    return pdir


def test_view_of_a_kafkalite_directory(txn_log: Path) -> None:
    view = transaction_view(partition(txn_log))
    assert view == TxnView(10, ((B, 2, 7),))
    # Without the snapshots the whole partition is scanned, to the same answer.
    for p in (txn_log / "tx-0").glob("*.snapshot"):
        p.unlink()
    assert transaction_view(partition(txn_log)) == view
    assert view.aborted_in(0, 2) == () and view.aborted_in(7, None) == ((B, 2, 7),)


def kafka_batch(base: int, pid: int, seq: int, *values: bytes) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                  producer_id=pid, producer_epoch=3, base_sequence=seq,
                                  batch_size=1 << 16)
    for i, v in enumerate(values):
        b.append(i, timestamp=T0, key=None, value=v, headers=[])
    out = bytearray(b.build())
    struct.pack_into(">q", out, 0, base)
    return bytes(out)


def kafka_marker(base: int, pid: int, commit: bool) -> bytes:
    """A control batch laid out by hand from Kafka's format (crc32c over attributes on)."""
    import crc32c

    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 5)
    rec = bytes([0, 0, 0, len(key) * 2]) + key + bytes([len(value) * 2]) + value + b"\x00"
    body = bytes([len(rec) * 2]) + rec
    tail = struct.pack(">hiqqqhii", 0x30, 0, T0, T0, pid, 3, -1, 1) + body
    crc = crc32c.crc32c(tail)
    return struct.pack(">qiibI", base, len(tail) + 9, 0, 2, crc) + tail


def test_view_of_a_kafka_laid_out_directory(tmp_path: Path) -> None:
    """Segments, .txnindex and a snapshot as a Kafka broker leaves them: A aborted in the
    first segment (known from its .txnindex), B open across the roll (from the snapshot)
    and committed in the active segment, C aborted there (from the markers)."""
    d = tmp_path / "kafka" / "tx-0"
    d.mkdir(parents=True)
    first = kafka_batch(0, A, 0, b"a0") + kafka_batch(1, B, 0, b"b1") + \
        kafka_marker(2, A, commit=False)
    (d / f"{0:020d}.log").write_bytes(first)
    (d / f"{0:020d}.txnindex").write_bytes(struct.pack(">hqqqq", 0, A, 0, 2, 1))
    (d / f"{0:020d}.index").write_bytes(b"")
    active = kafka_batch(3, C, 0, b"c3") + kafka_marker(4, B, commit=True) + \
        kafka_marker(5, C, commit=False)
    (d / f"{3:020d}.log").write_bytes(active)
    check = DefaultRecordBatch(kafka_marker(5, C, commit=False))  # an independent reader
    assert check.validate_crc() and check.is_control_batch and check.is_transactional
    # Snapshot at the roll: B's transaction open since offset 1.
    import crc32c

    entry = struct.pack(">qhiqiqiq", B, 3, 0, 1, 0, T0, -1, 1)
    body = struct.pack(">i", 1) + entry
    (d / f"{3:020d}.snapshot").write_bytes(struct.pack(">hI", 1, crc32c.crc32c(body)) + body)
    view = transaction_view(partition(tmp_path / "kafka"))
    assert view == TxnView(6, ((A, 0, 2), (C, 3, 5)))
    # The readers skip A's and C's batches, and every marker.
    reader = _BatchReader(_parse_options({"path": str(tmp_path / "kafka"),
                                          "isolationLevel": "read_committed"}))
    got = [v.decode() for part in reader.partitions() for b in reader.read(part)
           for v in b.column("value").to_pylist()]
    assert got == ["b1"]


def read_values(reader: Any, parts: Any) -> list[str]:
    return [v.decode() for part in parts for b in reader.read(part)
            for v in b.column("value").to_pylist()]


def test_batch_and_stream_readers(txn_log: Path) -> None:
    opts = {"path": str(txn_log), "topics": "tx"}
    batch = _BatchReader(_parse_options({**opts, "isolationLevel": "read_committed"}))
    assert read_values(batch, batch.partitions()) == COMMITTED
    plain = _BatchReader(_parse_options({**opts, "kafka.isolation.level": "read_uncommitted"}))
    assert read_values(plain, plain.partitions()) == EVERYTHING
    with pytest.raises(ValueError, match="isolationLevel"):
        _parse_options({**opts, "isolationLevel": "serializable"})

    stream = _StreamReader(_parse_options({**opts, "isolationLevel": "read_committed"}))
    start = stream.initialOffset()
    end = stream.latestOffset(start)
    assert end == {"tx-0": 10}  # the last stable offset, not the log end (12)
    assert read_values(stream, stream.partitions(start, end)) == COMMITTED
    plog = open_log(txn_log)
    plog.append_control_marker(C, 0, 0, commit=True)
    plog.close()
    later = stream.latestOffset(end)
    assert later == {"tx-0": 13}
    assert read_values(stream, stream.partitions(end, later)) == ["c10", "p11"]


def test_spark_reads_committed_records(spark: Any, txn_log: Path) -> None:
    df = spark.read.format("kafkalite").option("path", str(txn_log)) \
        .option("isolationLevel", "read_committed").load()
    rows = df.orderBy("offset").collect()
    assert [r.value.decode() for r in rows] == COMMITTED
    assert [r.offset for r in rows] == [0, 1, 3, 5, 6, 8]
