"""A closed segment's index is trusted on load; an entry damaged on disk (pointing into
the middle of a batch, or past the batch it names) must not make reads return the wrong
batch."""

from __future__ import annotations

import struct
from pathlib import Path

from kafkalite.protocol.records import NewRecord, build_batch, decode_batch
from kafkalite.storage.log import PartitionLog
from kafkalite.storage.log_config import LogConfig

NOW = 1_700_000_000_000


def write(directory: Path) -> None:
    plog = PartitionLog(directory, "t", 0, LogConfig(segment_bytes=4096, index_interval_bytes=200))
    for i in range(200):
        plog.append(build_batch([NewRecord(None, f"v{i}".encode() * 3)], timestamp=NOW + i))
    plog.close()


def reads_every_offset(directory: Path) -> bool:
    plog = PartitionLog(directory, "t", 0, LogConfig(segment_bytes=4096, index_interval_bytes=200))
    try:
        for off in range(200):
            _h, recs = decode_batch(plog.read(off, 1))
            if not any(r.offset == off and r.value == f"v{off}".encode() * 3 for r in recs):
                return False
        return plog.log_end_offset == 200
    finally:
        plog.close()


def test_index_entry_pointing_mid_batch(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    write(d)
    index = sorted(d.glob("*.index"))[0]
    data = bytearray(index.read_bytes())
    rel, pos = struct.unpack_from(">ii", data, 8)
    struct.pack_into(">ii", data, 8, rel, pos + 7)  # inside a batch, still in order
    index.write_bytes(bytes(data))
    assert reads_every_offset(d)


def test_last_index_entry_pointing_past_its_batch(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    write(d)
    index = sorted(d.glob("*.index"))[0]
    data = bytearray(index.read_bytes())
    n = len(data) // 8
    rel, _pos = struct.unpack_from(">ii", data, (n - 1) * 8)
    _rel2, pos2 = struct.unpack_from(">ii", data, (n - 2) * 8)
    struct.pack_into(">ii", data, (n - 2) * 8, rel - 1, pos2 + 3)
    index.write_bytes(bytes(data))
    assert reads_every_offset(d)


def test_new_log_creates_its_index_files_with_the_first_entry(tmp_path: Path) -> None:
    """A new log creates its segment file but no empty index files (a rolled segment's
    come with its first entry too); once written, every offset reads back after a
    reopen, and the index files are there."""
    d = tmp_path / "t-0"
    plog = PartitionLog(d, "t", 0, LogConfig(segment_bytes=4096, index_interval_bytes=200))
    assert (d / "00000000000000000000.log").exists()
    assert not list(d.glob("*.index")) and not list(d.glob("*.timeindex"))
    plog.close()
    # Reopened empty: still none, nothing to rebuild.
    PartitionLog(d, "t", 0, LogConfig(segment_bytes=4096, index_interval_bytes=200)).close()
    assert not list(d.glob("*.index"))
    write(d)
    assert reads_every_offset(d)
    segments = sorted(d.glob("*.log"))
    assert len(segments) > 1
    for seg in segments[:-1]:
        assert seg.with_suffix(".index").stat().st_size > 0
        assert seg.with_suffix(".timeindex").stat().st_size > 0
