"""Errors raised by partition logs; handlers map each to Kafka's error code."""

from __future__ import annotations

from kafkalite.protocol.errors import ErrorCode


class StorageError(Exception):
    """Base class of the log's own errors (disk errors surface as OSError, untouched)."""


class CorruptRecordError(StorageError):
    """A batch failed validation: magic, lengths, CRC-32C or record count (CORRUPT_MESSAGE)."""


class RecordTooLargeError(StorageError):
    """A batch is larger than the topic's ``max.message.bytes`` (MESSAGE_TOO_LARGE)."""


class OffsetOutOfRangeError(StorageError):
    """A read or DeleteRecords offset outside [log start, log end] (OFFSET_OUT_OF_RANGE)."""


class OutOfOrderSequenceError(StorageError):
    """An idempotent producer's batch does not follow its last sequence (or a new epoch
    does not start at 0)."""


class InvalidProducerEpochError(StorageError):
    """A batch from an older epoch of a producer id that has moved on."""


class DuplicateSequenceError(StorageError):
    """A retry of one of the producer's last batches; carries the offsets first assigned."""

    def __init__(self, base_offset: int, last_offset: int) -> None:
        super().__init__(f"duplicate batch, first written at offset {base_offset}")
        self.base_offset = base_offset
        self.last_offset = last_offset


class InvalidRecordError(StorageError):
    """A batch Kafka's LogValidator refuses as a whole (INVALID_RECORD): a control batch or
    several batches from a client, an idempotent batch without a sequence."""


class RecordValidationError(StorageError):
    """Records of a batch failed validation (KIP-467): the whole batch is refused, and
    ``record_errors`` names each bad record by its index in the batch.

    ``invalid_timestamp`` selects INVALID_TIMESTAMP over INVALID_RECORD, as Kafka's
    ``LogValidator.processRecordErrors`` does when any record's timestamp is out of range.
    """

    def __init__(self, message: str, record_errors: list[tuple[int, str]],
                 invalid_timestamp: bool) -> None:
        super().__init__(message)
        self.message = message
        self.record_errors = record_errors
        self.invalid_timestamp = invalid_timestamp


class InvalidTxnStateError(StorageError):
    """A plain batch from a producer with a transaction open on the partition, or a
    transactional one the coordinator has not seen added to a transaction (INVALID_TXN_STATE)."""


class TransactionCoordinatorFencedError(StorageError):
    """A marker from a coordinator epoch older than the partition's last marker for that
    producer (TRANSACTION_COORDINATOR_FENCED)."""


#: A failed log append as the Kafka error the write's answer carries, first match wins
#: (``TimeoutError`` is an ``OSError``, so it comes first). The one table: produce, the
#: marker writer and the coordinators' stores all read it.
APPEND_ERRORS: tuple[tuple[type[BaseException], ErrorCode], ...] = (
    (InvalidProducerEpochError, ErrorCode.invalid_producer_epoch),
    (TransactionCoordinatorFencedError, ErrorCode.transaction_coordinator_fenced),
    (RecordTooLargeError, ErrorCode.message_too_large),
    (CorruptRecordError, ErrorCode.corrupt_message),
    (OutOfOrderSequenceError, ErrorCode.out_of_order_sequence_number),
    (InvalidRecordError, ErrorCode.invalid_record),
    (RecordValidationError, ErrorCode.invalid_record),
    (InvalidTxnStateError, ErrorCode.invalid_txn_state),
    (TimeoutError, ErrorCode.request_timed_out),
    (OSError, ErrorCode.kafka_storage_error),
)


def append_error(exc: BaseException) -> ErrorCode:
    """The Kafka error code of a failed log append."""
    for kind, code in APPEND_ERRORS:
        if isinstance(exc, kind):
            return code
    return ErrorCode.unknown_server_error
