"""The deleting side of a partition log: DeleteRecords moving the log start offset, and
retention by time and size, both removing whole segments from the front as Kafka's
``UnifiedLog`` does. ``PartitionLog`` inherits it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from .errors import OffsetOutOfRangeError
from .leader_epoch import LeaderEpochCache
from .segment import Segment

if TYPE_CHECKING:
    from .log import LogConfig

log = structlog.get_logger("kafkalite.storage")

#: DeleteRecords' offset for "up to the high watermark".
HIGH_WATERMARK = -1


class LogDeletion:
    topic: str
    partition: int
    config: LogConfig
    clock: Callable[[], int]
    segments: list[Segment]
    _bases: list[int]
    log_start_offset: int
    aborted_txns: int
    epochs: LeaderEpochCache

    if TYPE_CHECKING:  # provided by PartitionLog
        @property
        def high_watermark(self) -> int: ...
        @property
        def size_bytes(self) -> int: ...
        def roll(self) -> Segment: ...

    def delete_records(self, offset: int) -> int:
        """Advance the log start offset to ``offset`` (-1: the high watermark).

        As Kafka's ``Partition.deleteRecordsOnLeader``: any other negative offset (-1001 is
        librdkafka's unset one) and one past the high watermark raise OffsetOutOfRangeError
        and delete nothing; one at or below the log start offset changes nothing.
        """
        if offset == HIGH_WATERMARK:
            offset = self.high_watermark
        if offset < 0:
            raise OffsetOutOfRangeError(
                f"The offset {offset} for partition {self.topic}-{self.partition} is not valid"
            )
        if offset > self.high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {offset} of partition "
                f"{self.topic}-{self.partition} since it is larger than the high watermark "
                f"{self.high_watermark}"
            )
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self._drop_segments_below(offset)
            self._start_moved()
        return self.log_start_offset

    def _start_moved(self) -> None:
        if self.epochs.truncate_from_start(self.log_start_offset):
            self.epochs.save()

    def _drop_segments_below(self, offset: int) -> None:
        while len(self.segments) > 1 and self.segments[1].base_offset <= offset:
            self._delete_oldest("log_start_offset")

    def _delete_oldest(self, reason: str) -> None:
        seg = self.segments.pop(0)
        self._bases.pop(0)
        seg.delete()
        self.aborted_txns -= len(seg.txn_index.entries)
        if self.log_start_offset < self.segments[0].base_offset:
            self.log_start_offset = self.segments[0].base_offset
            self._start_moved()
        log.info("log.segment_deleted", topic=self.topic, partition=self.partition,
                 base_offset=seg.base_offset, reason=reason,
                 log_start_offset=self.log_start_offset)

    def apply_retention(self) -> int:
        """Delete whole segments past ``retention.ms`` / ``retention.bytes``; return count."""
        cfg = self.config
        if not cfg.deletes:
            return 0
        deleted = 0
        now = self.clock()
        if cfg.retention_ms >= 0:
            while self.segments and self.segments[0].size > 0 and (
                now - self.segments[0].max_timestamp > cfg.retention_ms
            ):
                if len(self.segments) == 1:
                    self.roll()  # Kafka rolls an expired active segment so it can go too
                    if len(self.segments) == 1:
                        break
                self._delete_oldest("retention_ms")
                deleted += 1
        if cfg.retention_bytes >= 0:
            total = self.size_bytes
            while len(self.segments) > 1 and total - self.segments[0].size >= cfg.retention_bytes:
                total -= self.segments[0].size
                self._delete_oldest("retention_bytes")
                deleted += 1
        return deleted
