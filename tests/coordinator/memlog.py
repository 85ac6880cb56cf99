"""An in-memory partition log with the storage interface the runtime writes through.

The coordinator tests run the real runtime over these (and inject failures through them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kafkalite.protocol.control import end_txn_marker_batch
from kafkalite.protocol.records import parse_batch_header, set_base_offset
from kafkalite.storage.producer_state import CLIENT, AppendOrigin


class MemoryLog:
    def __init__(self) -> None:
        self.batches: list[bytes] = []
        self.log_end_offset = 0
        #: Tests set this to raise on the next appends (OSError, TimeoutError, ...).
        self.fail: Callable[[bytes], None] | None = None

    def append(self, batch: bytes, *, origin: AppendOrigin = CLIENT) -> tuple[int, int]:
        """Append as the partition log does, without its producer checks."""
        if self.fail is not None:
            self.fail(batch)
        h = parse_batch_header(batch)
        buf = bytearray(batch)
        base = self.log_end_offset
        set_base_offset(buf, 0, base)
        self.batches.append(bytes(buf))
        self.log_end_offset = base + h.last_offset_delta + 1
        return base, self.log_end_offset - 1

    def append_built(self, batch: bytes) -> tuple[int, int]:
        return self.append(batch)

    def append_control_marker(self, producer_id: int, producer_epoch: int,
                              coordinator_epoch: int, commit: bool,
                              transaction_version: int = 0) -> int:
        batch = end_txn_marker_batch(producer_id, producer_epoch, coordinator_epoch, commit, 0)
        return self.append(batch)[0]

    def flush(self) -> None:
        pass

    def iter_batches(self, start_offset: int = 0) -> Iterator[bytes]:
        for b in self.batches:
            h = parse_batch_header(b)
            if h.last_offset >= start_offset:
                yield b


class MemoryLogs:
    """``get_or_create(topic, partition)`` over MemoryLog instances."""

    def __init__(self) -> None:
        self.logs: dict[tuple[str, int], MemoryLog] = {}

    def get_or_create(self, topic: str, partition: int) -> MemoryLog:
        log = self.logs.get((topic, partition))
        if log is None:
            log = self.logs[(topic, partition)] = MemoryLog()
        return log
