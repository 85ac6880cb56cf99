"""Opening a partition log from its directory: the segments, recovery of the active one,
producer state and the leader epochs.

Closed segments open as they are (their indexes trusted unless damaged); the active
segment is scanned batch by batch and cut at the first torn or corrupt batch. Once
loaded, the segments' descriptors are closed again (``Segment.release``): the log's first
read or write reopens what it needs, so a broker opening thousands of idle logs in the
background does not keep a descriptor for each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from kafkalite.protocol.records import (
    BASE_OFFSET,
    BATCH_HEADER,
    HEADER_SIZE,
    PARTITION_LEADER_EPOCH,
)

from .segment import Segment

if TYPE_CHECKING:
    from .log import PartitionLog

log = structlog.get_logger("kafkalite.storage")


def load(plog: PartitionLog) -> None:
    bases = sorted(
        int(p.name[:-4]) for p in plog.dir.iterdir()
        if p.name.endswith(".log") and p.name[:-4].isdigit()
    )
    for p in plog.dir.iterdir():  # leftovers of an interrupted operation
        if p.name.endswith((".deleted", ".cleaned", ".swap", ".tmp")):
            p.unlink()
    interval = plog.config.index_interval_bytes
    if not bases:
        bases = [plog.log_start_offset]
    txn_damaged = False
    had_checkpoint = plog.epochs.load()
    for i, base in enumerate(bases):
        seg = Segment(plog.dir, base, plog.clock())
        if i < len(bases) - 1:
            seg.load_closed(interval)
            if i == 0 and not had_checkpoint:
                _first_epoch(plog, seg)
            try:
                seg.txn_index.load()
            except (OSError, ValueError) as e:
                log.warning("log.txn_index_rebuilt", topic=plog.topic,
                            partition=plog.partition, segment=seg.log_path.name,
                            reason=str(e))
                txn_damaged = True
        plog.segments.append(seg)
        plog._bases.append(base)
    headers = recover(plog, plog.active)
    plog.log_end_offset = plog.active.next_offset
    if plog.log_start_offset < plog.segments[0].base_offset:
        plog.log_start_offset = plog.segments[0].base_offset
    if plog.log_start_offset > plog.log_end_offset:
        plog.log_start_offset = plog.log_end_offset
    plog.txn.restore(plog.segments, headers, txn_damaged)
    _load_epochs(plog, had_checkpoint)
    for seg in plog.segments:
        seg.release()


def _first_epoch(plog: PartitionLog, seg: Segment) -> None:
    """Without a checkpoint (an older data directory, or one lost in a crash) the log's
    first batch tells the epoch it began in; recovery adds the active segment's."""
    if seg.size >= HEADER_SIZE:
        h = BATCH_HEADER.unpack(seg.pread(HEADER_SIZE, 0))
        if h[PARTITION_LEADER_EPOCH] >= 0:
            plog.epochs.assign(h[PARTITION_LEADER_EPOCH], h[BASE_OFFSET])


def _load_epochs(plog: PartitionLog, had_checkpoint: bool) -> None:
    """The epoch cache as of the recovered log, then this broker's leadership of the
    partition: a new partition starts in epoch 0; a partition that existed before
    takes the next epoch, as a Kafka broker's restart moves leadership away and back
    (docs/compatibility.md), so clients re-validate their positions."""
    cache = plog.epochs
    changed = cache.truncate_from_end(plog.log_end_offset)
    changed = cache.truncate_from_start(plog.log_start_offset) or changed
    existed = had_checkpoint or plog.log_end_offset > 0 or cache.latest_epoch >= 0
    if not plog.lead:
        plog.leader_epoch = max(cache.latest_epoch, 0)
        if changed or not had_checkpoint:
            cache.save()
        return
    epoch = max(cache.latest_epoch + 1 if existed else 0, plog._epoch_floor)
    if plog.become_leader(epoch, save=False) or changed or not had_checkpoint:
        cache.save()


def recover(plog: PartitionLog, seg: Segment) -> list[tuple[int, ...]]:
    """Validate the active segment batch by batch; cut it at the first bad batch.
    Returns the headers of the batches kept."""
    file_size = seg.size
    valid, headers = seg.scan(True, plog.config.index_interval_bytes)
    if valid < file_size:
        seg.truncate_to_position(valid)
        log.warning(
            "log.recovery_truncated",
            topic=plog.topic, partition=plog.partition, segment=seg.log_path.name,
            valid_bytes=valid, dropped_bytes=file_size - valid,
            next_offset=seg.next_offset,
        )
    seg.size = valid
    seg.index.write_pending()
    seg.time_index.write_pending()
    for h in headers:
        if h[PARTITION_LEADER_EPOCH] >= 0:
            plog.epochs.assign(h[PARTITION_LEADER_EPOCH], h[BASE_OFFSET])
    return headers
