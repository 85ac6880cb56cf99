"""Sparse offset and time indexes beside each segment, in Kafka's file formats.

- ``.index``: 8-byte entries (relative offset int32, file position int32), big endian.
- ``.timeindex``: 12-byte entries (timestamp int64, relative offset int32).

Entries are kept in memory as well (two parallel lists searched with ``bisect``) and
appended to the files as they are made. Kafka preallocates its index files and trims
them on close; a Kafka-written file may therefore end in zero entries, which loading
ignores.
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
#: Index entries hold offsets as int32s relative to the segment's base offset.
MAX_RELATIVE_OFFSET = 0x7FFFFFFF


class IndexCorrupt(Exception):
    pass


class _IndexFile:
    entry: struct.Struct

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fd: int | None = None
        self._pending = bytearray()
        #: Entries written since the last fsync (they may be written through a descriptor
        #: since closed by ``release``).
        self._unsynced = False

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def _write(self, data: bytes) -> None:
        self._pending += data
        # Index entries come every few KiB of log; writing them in small groups keeps the
        # syscalls off the per-batch path. Unwritten entries are rebuilt by recovery.
        if len(self._pending) >= 4096:
            self.write_pending()

    def write_pending(self) -> None:
        if self._pending:
            os.write(self._open(), bytes(self._pending))
            self._pending.clear()
            self._unsynced = True

    def flush(self) -> None:
        self.write_pending()
        if not self._unsynced:
            return
        self._unsynced = False
        if self._fd is not None:
            os.fsync(self._fd)
            return
        # Released since written: synced through a descriptor of its own (not kept).
        try:
            fd = os.open(self.path, os.O_WRONLY)
        except FileNotFoundError:
            return  # deleted with its segment
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def release(self) -> None:
        """Close the descriptor until the next write (pending entries written first)."""
        self.close()

    def close(self) -> None:
        self.write_pending()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _truncate(self) -> None:
        """Empty the file; one not there yet is created by the first entry written, as a
        rolled segment's is (a new log does not create two empty files)."""
        try:
            os.truncate(self.path, 0)
        except FileNotFoundError:
            pass

    def _raw_entries(self) -> list[tuple[int, ...]]:
        data = self.path.read_bytes()
        size = self.entry.size
        if len(data) % size:
            raise IndexCorrupt(f"{self.path.name}: size {len(data)} not a multiple of {size}")
        return [self.entry.unpack_from(data, i) for i in range(0, len(data), size)]


class OffsetIndex(_IndexFile):
    entry = _OFFSET_ENTRY

    def __init__(self, path: Path, base_offset: int) -> None:
        super().__init__(path, base_offset)
        self.offsets: list[int] = []  # absolute offsets
        self.positions: list[int] = []

    def reset(self) -> None:
        """Drop every entry and truncate the file (before a rebuild)."""
        self.close()
        self.offsets.clear()
        self.positions.clear()
        self._truncate()

    def load(self, log_size: int) -> None:
        """Read entries from the file; raise IndexCorrupt if they make no sense."""
        rows = self._raw_entries()
        # Trailing zero entries are preallocated space in an index Kafka did not trim.
        while len(rows) > 1 and rows[-1] == (0, 0):
            rows.pop()
        if len(rows) == 1 and rows[0] == (0, 0) and log_size == 0:
            rows = []
        last_rel = last_pos = -1
        for rel, pos in rows:
            if rel < last_rel or pos < last_pos or pos >= max(log_size, 1) or rel < 0:
                raise IndexCorrupt(f"{self.path.name}: entries out of order or past the log")
            last_rel, last_pos = rel, pos
        self.offsets = [self.base_offset + r for r, _ in rows]
        self.positions = [p for _, p in rows]

    def append(self, offset: int, position: int) -> None:
        if self.offsets and offset <= self.offsets[-1]:
            return
        self.offsets.append(offset)
        self.positions.append(position)
        self._write(_OFFSET_ENTRY.pack(offset - self.base_offset, position))

    def lookup(self, offset: int) -> int:
        """Position of the batch holding the largest indexed offset <= ``offset`` (else 0)."""
        i = bisect.bisect_right(self.offsets, offset) - 1
        return self.positions[i] if i >= 0 else 0

    def truncate_after_position(self, position: int) -> None:
        """Drop entries for batches at or past ``position`` and rewrite the file."""
        i = bisect.bisect_left(self.positions, position)
        if i == len(self.positions):
            return
        del self.offsets[i:]
        del self.positions[i:]
        self.rewrite()

    def rewrite(self) -> None:
        self.close()
        self._pending.clear()
        data = b"".join(
            _OFFSET_ENTRY.pack(o - self.base_offset, p)
            for o, p in zip(self.offsets, self.positions, strict=True)
        )
        self.path.write_bytes(data)


class TimeIndex(_IndexFile):
    entry = _TIME_ENTRY

    def __init__(self, path: Path, base_offset: int) -> None:
        super().__init__(path, base_offset)
        self.timestamps: list[int] = []
        self.offsets: list[int] = []

    def reset(self) -> None:
        self.close()
        self.timestamps.clear()
        self.offsets.clear()
        self._truncate()

    def load(self) -> None:
        rows = self._raw_entries()
        while rows and rows[-1] == (0, 0):
            rows.pop()
        last_ts = last_rel = -(2**63)
        for ts, rel in rows:
            if ts < last_ts or rel < last_rel or rel < 0:
                raise IndexCorrupt(f"{self.path.name}: entries out of order")
            last_ts, last_rel = ts, rel
        self.timestamps = [t for t, _ in rows]
        self.offsets = [self.base_offset + r for _, r in rows]

    @property
    def last_timestamp(self) -> int:
        return self.timestamps[-1] if self.timestamps else -1

    def maybe_append(self, timestamp: int, offset: int) -> None:
        if self.timestamps and timestamp <= self.timestamps[-1]:
            return
        self.timestamps.append(timestamp)
        self.offsets.append(offset)
        self._write(_TIME_ENTRY.pack(timestamp, offset - self.base_offset))

    def lookup(self, timestamp: int) -> int:
        """The offset to start searching from for the first record at or after ``timestamp``."""
        i = bisect.bisect_left(self.timestamps, timestamp) - 1
        return self.offsets[i] if i >= 0 else self.base_offset
