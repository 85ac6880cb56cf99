"""One table maps a failed log append to Kafka's error code; the coordinators' stores
answer some of those codes as Kafka's coordinators do."""

from __future__ import annotations

import errno

import pytest

from kafkalite.coordinator.runtime import store_error
from kafkalite.protocol.errors import ErrorCode as E
from kafkalite.storage.errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    RecordValidationError,
    TransactionCoordinatorFencedError,
    append_error,
)

CASES = [
    (InvalidProducerEpochError("fenced"), E.invalid_producer_epoch, E.invalid_producer_epoch),
    (TransactionCoordinatorFencedError("old"), E.transaction_coordinator_fenced,
     E.unknown_server_error),
    (RecordTooLargeError("big"), E.message_too_large, E.unknown_server_error),
    (CorruptRecordError("crc"), E.corrupt_message, E.unknown_server_error),
    (OutOfOrderSequenceError("gap"), E.out_of_order_sequence_number, E.unknown_server_error),
    (InvalidRecordError("control"), E.invalid_record, E.unknown_server_error),
    (RecordValidationError("bad", [(0, "bad")], False), E.invalid_record,
     E.unknown_server_error),
    (InvalidTxnStateError("open"), E.invalid_txn_state, E.unknown_server_error),
    (TimeoutError("slow"), E.request_timed_out, E.coordinator_not_available),
    (OSError(errno.ENOSPC, "disk full"), E.kafka_storage_error, E.not_coordinator),
    (ValueError("other"), E.unknown_server_error, E.unknown_server_error),
]


@pytest.mark.parametrize(("exc", "appended", "stored"), CASES)
def test_append_and_store_errors(exc: BaseException, appended: E, stored: E) -> None:
    assert append_error(exc) is appended
    assert store_error(exc) is stored
