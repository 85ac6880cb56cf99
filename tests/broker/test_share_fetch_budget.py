"""The pure parts of sizing a ShareFetch as Kafka 4.4 does: the session's partitions
rotated by the epoch (PartitionRotateStrategy ROUND_ROBIN) and new records cut into
ranges of about BatchSize on batch boundaries (SharePartition.createBatches)."""

from __future__ import annotations

import uuid

from kafkalite.broker.handlers.data.share_fetch import rotated
from kafkalite.broker.share.manager import _split_new
from kafkalite.coordinator.share.partition import AcquiredRange, LogBatch

T = uuid.UUID(int=1)
PARTS = [(T, 0), (T, 1), (T, 2)]


def test_each_epoch_starts_one_partition_further() -> None:
    assert rotated(PARTS, 0) == PARTS
    assert rotated(PARTS, -1) == PARTS
    assert rotated(PARTS, 1) == [(T, 1), (T, 2), (T, 0)]
    assert rotated(PARTS, 2) == [(T, 2), (T, 0), (T, 1)]
    assert rotated(PARTS, 3) == PARTS
    assert rotated(PARTS, 5) == [(T, 2), (T, 0), (T, 1)]
    assert rotated(PARTS[:1], 7) == PARTS[:1]


BATCHES = [LogBatch(0, 4), LogBatch(5, 9), LogBatch(10, 14), LogBatch(15, 15)]


def test_new_records_are_cut_on_batch_boundaries_at_the_batch_size() -> None:
    whole = [AcquiredRange(0, 15, 1)]
    assert _split_new(whole, 0, BATCHES, 500) == whole
    assert _split_new(whole, 0, BATCHES, 3) == [
        AcquiredRange(0, 4, 1), AcquiredRange(5, 9, 1), AcquiredRange(10, 14, 1),
        AcquiredRange(15, 15, 1)]
    assert _split_new(whole, 0, BATCHES, 8) == [
        AcquiredRange(0, 9, 1), AcquiredRange(10, 15, 1)]
    # Records delivered before keep their ranges.
    again = [AcquiredRange(0, 9, 2), AcquiredRange(10, 15, 1)]
    assert _split_new(again, 10, BATCHES, 3) == [
        AcquiredRange(0, 9, 2), AcquiredRange(10, 14, 1), AcquiredRange(15, 15, 1)]
