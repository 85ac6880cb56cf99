"""What Kafka's ``LogValidator`` checks of a batch before it is appended.

Every batch (``check_batch``): a whole magic-v2 batch, lengths, record count and CRC-32C
that agree, and no more than ``max.message.bytes``. A client's batch besides:

- A client may not write control batches, and an idempotent batch needs a sequence.
- On a compacted topic every record needs a key.
- With ``message.timestamp.type=CreateTime`` every record's timestamp must lie within
  ``message.timestamp.before.max.ms`` before and ``message.timestamp.after.max.ms`` after
  the broker's clock (KIP-937).
- A topic ``compression.type`` other than ``producer`` re-compresses the batch.

Bad records refuse the whole batch with a ``RecordValidationError`` naming each one
(KIP-467). Records are decoded only when the topic needs it: a compacted topic, a
timestamp bound the batch header cannot settle, or a re-compression; otherwise this costs
one header unpack.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalite.protocol.crc import crc32c
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTRIBUTES,
    BASE_OFFSET,
    BASE_SEQUENCE,
    BATCH_HEADER,
    BATCH_LENGTH,
    CRC,
    CRC_START,
    HEADER_SIZE,
    LAST_OFFSET_DELTA,
    LOG_OVERHEAD,
    MAGIC,
    MAX_TIMESTAMP,
    MIN_BATCH_LENGTH,
    PRODUCER_ID,
    RECORD_COUNT,
    RecordSummary,
    decode_batch,
    encode_batch,
    summarize_records,
)

from .errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
    RecordValidationError,
)

NO_TIMESTAMP = -1


def check_batch(view: memoryview, pos: int, max_bytes: int) -> int:
    """Check the batch at ``pos`` of ``view`` (header, length, count, CRC, size limit);
    return its size. Raises CorruptRecordError or RecordTooLargeError."""
    if len(view) - pos < HEADER_SIZE:
        raise CorruptRecordError("truncated record batch header")
    h = BATCH_HEADER.unpack_from(view, pos)
    length: int = h[BATCH_LENGTH]
    size = length + LOG_OVERHEAD
    if h[MAGIC] != 2:
        raise CorruptRecordError(f"unsupported record batch magic {h[MAGIC]}")
    if length < MIN_BATCH_LENGTH or pos + size > len(view):
        raise CorruptRecordError("record batch length does not match the data")
    if size > max_bytes:
        check_size(size, max_bytes)
    if h[RECORD_COUNT] <= 0 or h[LAST_OFFSET_DELTA] != h[RECORD_COUNT] - 1:
        raise CorruptRecordError("record count does not match the last offset delta")
    if crc32c(view[pos + CRC_START : pos + size]) != h[CRC]:
        raise CorruptRecordError("record batch CRC mismatch")
    return size


def check_size(size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise RecordTooLargeError(
            f"batch of {size} bytes exceeds max.message.bytes {max_bytes}")
_LONG = 1 << 64


def _java_long(v: int) -> int:
    """``v`` wrapped to a signed 64-bit value, as Java's arithmetic prints it."""
    v %= _LONG
    return v - _LONG if v >= 1 << 63 else v


@dataclass(frozen=True, slots=True)
class RecordRules:
    """The topic configs a client's batch is checked against."""

    compact: bool = False
    log_append_time: bool = False
    timestamp_before_ms: int = 2**63 - 1
    timestamp_after_ms: int = 2**63 - 1
    #: The codec batches are stored with, or None to keep the producer's (``producer``).
    compression: int | None = None
    compression_level: int | None = None


def validate_client_batch(batch: memoryview, topic_partition: str, rules: RecordRules,
                          now: int) -> memoryview | bytes:
    """The batch to append for one the client sent (itself, or re-compressed), or raise
    ``InvalidRecordError`` / ``RecordValidationError``. The batch's CRC is already checked."""
    h = BATCH_HEADER.unpack_from(batch, 0)
    attributes = h[ATTRIBUTES]
    if attributes & ATTR_CONTROL:
        raise InvalidRecordError("Clients are not allowed to write control records in topic "
                                 f"partition {topic_partition}")
    if h[PRODUCER_ID] >= 0 and h[BASE_SEQUENCE] < 0:
        raise InvalidRecordError(
            f"Invalid sequence number {h[BASE_SEQUENCE]} in record batch with producerId "
            f"{h[PRODUCER_ID]} in topic partition {topic_partition}")
    source = attributes & ATTR_COMPRESSION_MASK
    recompress = rules.compression is not None and rules.compression != source
    create_time = not rules.log_append_time
    producer_append_time = bool(attributes & ATTR_TIMESTAMP_TYPE)
    # Record timestamps are >= 0 (or -1, unchecked), so a bound reaching before the epoch
    # cannot refuse any; an upper bound is settled by the header's max timestamp.
    check_before = create_time and rules.timestamp_before_ms < now
    check_after = create_time and h[MAX_TIMESTAMP] - now > rules.timestamp_after_ms
    if not (rules.compact or check_before or check_after or recompress
            or (producer_append_time and not create_time)):
        return batch
    try:
        # Value lengths only for the message of a producer-stamped LogAppendTime (rare).
        summaries = summarize_records(batch, values=producer_append_time)
    except ProtocolError as e:
        raise CorruptRecordError(str(e)) from e
    _check_records(summaries, h[BASE_OFFSET], producer_append_time, topic_partition, rules,
                   now)
    if not recompress:
        return batch
    assert rules.compression is not None
    return _recompress(batch, rules.compression, rules.compression_level)


def _check_records(summaries: list[RecordSummary], base_offset: int,
                   producer_append_time: bool, topic_partition: str, rules: RecordRules,
                   now: int) -> None:
    errors: list[tuple[int, str]] = []
    timestamp_error = False
    before, after = rules.timestamp_before_ms, rules.timestamp_after_ms
    create_time = not rules.log_append_time
    for i, r in enumerate(summaries):
        if rules.compact and r.key_length < 0:
            errors.append((i, "Compacted topic cannot accept message without key in topic "
                              f"partition {topic_partition}"))
        elif create_time and r.timestamp != NO_TIMESTAMP:
            if now - r.timestamp > before or r.timestamp - now > after:
                timestamp_error = True
                errors.append((i, f"Timestamp {r.timestamp} of message with offset "
                                  f"{base_offset + r.offset_delta} is out of range. The "
                                  f"timestamp should be within [{_java_long(now - before)}, "
                                  f"{_java_long(now + after)}]"))
        elif producer_append_time:
            timestamp_error = True
            record = (f"DefaultRecord(offset={base_offset + r.offset_delta}, "
                      f"timestamp={r.timestamp}, key={max(r.key_length, 0)} bytes, "
                      f"value={max(r.value_length, 0)} bytes)")
            errors.append((i, f"Invalid timestamp type in message {record}. Producer should "
                              "not set timestamp type to LogAppendTime."))
    if not errors:
        return
    if timestamp_error:
        message = "One or more records have been rejected due to invalid timestamp"
    else:
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
        message = (f"One or more records have been rejected due to {len(errors)} record "
                   "errors in total, and only showing the first three errors at most: "
                   f"[{shown}]")
    raise RecordValidationError(message, errors, timestamp_error)


def _recompress(batch: memoryview, codec: int, level: int | None) -> bytes:
    """The batch's records in one batch compressed with ``codec``, as Kafka's
    ``buildRecordsAndAssignOffsets``: producer fields kept, inner offsets renumbered from 0,
    the first record's timestamp as the base."""
    try:
        h, records = decode_batch(batch)
    except ProtocolError as e:
        raise CorruptRecordError(str(e)) from e
    stamps = [r.timestamp for r in records]
    base_ts = stamps[0] if stamps else h.base_timestamp
    header = h._replace(
        attributes=(h.attributes & ~ATTR_COMPRESSION_MASK & ~ATTR_TIMESTAMP_TYPE) | codec,
        last_offset_delta=len(records) - 1, base_timestamp=base_ts,
        max_timestamp=max(stamps, default=h.max_timestamp))
    return encode_batch(header, [(r.timestamp - base_ts, i, r.key, r.value, r.headers)
                                 for i, r in enumerate(records)], level)
