"""The deleting side of a partition log: DeleteRecords moving the log start offset, and
retention by time and size, both removing whole segments from the front as Kafka's
``UnifiedLog`` does.

``PartitionLog`` holds one ``LogDeletion``: this part decides what may go (the offset
checks of DeleteRecords, the retention rules); the log removes it
(``move_start``, ``remove_oldest_segment``, ``roll``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import OffsetOutOfRangeError

if TYPE_CHECKING:
    from .log import PartitionLog

#: DeleteRecords' offset for "up to the high watermark".
HIGH_WATERMARK = -1


class LogDeletion:
    def __init__(self, log: PartitionLog) -> None:
        self.log = log

    def delete_records(self, offset: int) -> int:
        """Advance the log start offset to ``offset`` (-1: the high watermark).

        As Kafka's ``Partition.deleteRecordsOnLeader``: any other negative offset (-1001 is
        librdkafka's unset one) and one past the high watermark raise OffsetOutOfRangeError
        and delete nothing; one at or below the log start offset changes nothing.
        """
        plog = self.log
        hw = plog.high_watermark
        if offset == HIGH_WATERMARK:
            offset = hw
        if offset < 0:
            raise OffsetOutOfRangeError(
                f"The offset {offset} for partition {plog.topic}-{plog.partition} is not valid"
            )
        if offset > hw:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {offset} of partition "
                f"{plog.topic}-{plog.partition} since it is larger than the high watermark "
                f"{hw}"
            )
        if offset > plog.log_start_offset:
            plog.move_start(offset)
        return plog.log_start_offset

    def apply_retention(self) -> int:
        """Delete whole segments past ``retention.ms`` / ``retention.bytes``; return count."""
        plog = self.log
        cfg = plog.config
        if not cfg.deletes:
            return 0
        segments = plog.segments
        deleted = 0
        now = plog.clock()
        if cfg.retention_ms >= 0:
            while segments and segments[0].size > 0 and (
                now - segments[0].max_timestamp > cfg.retention_ms
            ):
                if len(segments) == 1:
                    plog.roll()  # Kafka rolls an expired active segment so it can go too
                    if len(segments) == 1:
                        break
                plog.remove_oldest_segment("retention_ms")
                deleted += 1
        if cfg.retention_bytes >= 0:
            total = plog.size_bytes
            while len(segments) > 1 and total - segments[0].size >= cfg.retention_bytes:
                total -= segments[0].size
                plog.remove_oldest_segment("retention_bytes")
                deleted += 1
        return deleted
