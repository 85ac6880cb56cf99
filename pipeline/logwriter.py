"""Writing partition logs in Kafka's segment format, for fixtures and benchmarks.

Records become magic-v2 batches (``protocol.records.build_batch``) appended to
``<dir>/<topic>-<n>/<base offset>.log``; a new segment is rolled past ``segment_bytes``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from kafkalite.protocol.records import (
    COMPRESSION_NONE,
    NewRecord,
    build_batch,
    parse_batch_header,
    set_base_offset,
)


class PartitionWriter:
    def __init__(self, log_dir: str | Path, topic: str, partition: int,
                 segment_bytes: int = 1 << 30) -> None:
        self.dir = Path(log_dir) / f"{topic}-{partition}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.next_offset = 0
        self._file: BinaryIO | None = None
        self._size = 0

    def _roll(self) -> BinaryIO:
        if self._file is not None:
            self._file.close()
        self._file = open(self.dir / f"{self.next_offset:020d}.log", "ab")
        self._size = 0
        return self._file

    def append_batch(self, batch: bytes) -> int:
        """Append an encoded batch, giving it the next offset; return its base offset."""
        h = parse_batch_header(batch)
        f = self._file
        if f is None or self._size >= self.segment_bytes:
            f = self._roll()
        buf = bytearray(batch)
        set_base_offset(buf, 0, self.next_offset)
        f.write(buf)
        self._size += len(buf)
        base = self.next_offset
        self.next_offset += h.last_offset_delta + 1
        return base

    def append(self, records: Sequence[NewRecord], timestamp: int,
               compression: int = COMPRESSION_NONE) -> int:
        return self.append_batch(build_batch(records, timestamp=timestamp,
                                             compression=compression))

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
