"""Control batches: the COMMIT and ABORT transaction markers, as Kafka writes them.

A marker is a batch of one record with the control and transactional attributes set, the
producer's id and epoch, no sequence (-1) and no compression. Its record key is the
control record key (version int16 = 0, type int16: ABORT = 0, COMMIT = 1) and its value
the EndTransactionMarker (version int16 = 0, coordinator epoch int32); the record has no
headers and the batch's timestamps are the time it was written
(``MemoryRecords.withEndTransactionMarker``).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from .errors import ProtocolError
from .records import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    NO_SEQUENCE,
    NewRecord,
    build_batch,
    decode_batch,
)

CONTROL_ABORT = 0
CONTROL_COMMIT = 1
CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class EndTxnMarker(NamedTuple):
    commit: bool
    coordinator_epoch: int


def end_txn_marker_batch(producer_id: int, producer_epoch: int, coordinator_epoch: int,
                         commit: bool, timestamp: int) -> bytes:
    """The control batch (base offset 0, to be assigned) ending a transaction."""
    key = _KEY.pack(CONTROL_KEY_VERSION, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = _VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch)
    return build_batch([NewRecord(key, value, timestamp)], timestamp=timestamp,
                       producer_id=producer_id, producer_epoch=producer_epoch,
                       base_sequence=NO_SEQUENCE, attributes=ATTR_CONTROL | ATTR_TRANSACTIONAL)


def control_type(key: bytes | None) -> int:
    """The type of a control record from its key (-1: unknown, as Kafka's UNKNOWN)."""
    if key is None or len(key) < _KEY.size:
        raise ProtocolError("control record key shorter than 4 bytes")
    version, ctype = _KEY.unpack_from(key, 0)
    if version < 0:
        raise ProtocolError(f"invalid control record key version {version}")
    return int(ctype)


def read_end_txn_marker(batch: bytes | bytearray | memoryview) -> EndTxnMarker | None:
    """The marker a control batch holds; None for an empty batch (the cleaner emptied it)
    or a control record of another type. Raises ProtocolError for a malformed one."""
    _h, records = decode_batch(batch)
    if not records:
        return None
    rec = records[0]
    ctype = control_type(rec.key)
    if ctype not in (CONTROL_ABORT, CONTROL_COMMIT):
        return None
    value = rec.value
    if value is None or len(value) < _VALUE.size:
        raise ProtocolError("end transaction marker value shorter than 6 bytes")
    version, coordinator_epoch = _VALUE.unpack_from(value, 0)
    if version < 0:
        raise ProtocolError(f"invalid end transaction marker version {version}")
    return EndTxnMarker(ctype == CONTROL_COMMIT, coordinator_epoch)
