"""Searches of a partition log's segments by timestamp (ListOffsets by time and
MAX_TIMESTAMP), which read records but change nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import (
    BASE_OFFSET,
    BATCH_HEADER,
    LAST_OFFSET_DELTA,
    MAX_TIMESTAMP,
    decode_batch,
)

from .errors import OffsetOutOfRangeError
from .segment import Segment


def offset_for_timestamp(segments: Sequence[Segment], log_start_offset: int,
                         timestamp: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record with timestamp >= ``timestamp``."""
    for seg in segments:
        if seg.max_timestamp < timestamp or seg.size == 0:
            continue
        start = max(seg.time_index.lookup(timestamp), log_start_offset)
        found = seg.find_position(start)
        if found is None:
            continue
        for _pos, batch in seg.iter_batches(found[0]):
            h = BATCH_HEADER.unpack_from(batch, 0)
            last = h[BASE_OFFSET] + h[LAST_OFFSET_DELTA]
            if h[MAX_TIMESTAMP] < timestamp or last < log_start_offset:
                continue
            _header, records = decode_batch(batch)
            for r in records:
                if r.timestamp >= timestamp and r.offset >= log_start_offset:
                    return r.offset, r.timestamp
    return None

def max_timestamp(segments: Sequence[Segment], log_start_offset: int,
                  read: Callable[[int, int], bytes]) -> tuple[int, int]:
    """(offset, timestamp) of the first record with the largest timestamp, or (-1, -1).

    The segments know the batch; its records are decoded to find the record itself,
    as Kafka answers ListOffsets MAX_TIMESTAMP since KAFKA-16310.
    """
    best = (-1, -1)
    for seg in segments:
        if seg.max_timestamp > best[1]:
            best = (seg.offset_of_max_timestamp, seg.max_timestamp)
    if best[0] < log_start_offset:
        return -1, -1
    try:
        _h, records = decode_batch(read(best[0], 1))
    except (OffsetOutOfRangeError, ProtocolError):
        return best
    for r in records:
        if r.timestamp == best[1]:
            return r.offset, r.timestamp
    return best
