"""Errors raised by partition logs; handlers map each to Kafka's error code."""

from __future__ import annotations


class StorageError(Exception):
    """Base class of the log's own errors (disk errors surface as OSError, untouched)."""


class CorruptRecordError(StorageError):
    """A batch failed validation: magic, lengths, CRC-32C or record count (CORRUPT_MESSAGE)."""


class RecordTooLargeError(StorageError):
    """A batch is larger than the topic's ``max.message.bytes`` (MESSAGE_TOO_LARGE)."""


class OffsetOutOfRangeError(StorageError):
    """A read or DeleteRecords offset outside [log start, log end] (OFFSET_OUT_OF_RANGE)."""


class OutOfOrderSequenceError(StorageError):
    """An idempotent producer's batch does not follow its last sequence."""


class InvalidProducerEpochError(StorageError):
    """A batch from an older epoch of a producer id that has moved on."""


class DuplicateSequenceError(StorageError):
    """A retry of one of the producer's last batches; carries the offsets first assigned."""

    def __init__(self, base_offset: int, last_offset: int) -> None:
        super().__init__(f"duplicate batch, first written at offset {base_offset}")
        self.base_offset = base_offset
        self.last_offset = last_offset
