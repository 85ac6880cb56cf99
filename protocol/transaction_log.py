"""Record schemas of ``__transaction_state``: TransactionLogKey and TransactionLogValue.

Written by hand to match Kafka's ``transaction-coordinator`` message JSON
(TransactionLogKey.json, TransactionLogValue.json) byte for byte:

- the key is the int16 record type ``0`` (CoordinatorRecordType.TRANSACTION_LOG, which is
  also the key version) followed by the TransactionalId as an int16-length string;
- the value starts with its own int16 version. v0 is the classic layout; v1 (written once
  ``transaction.version`` >= 1) is flexible: compact lengths, a tagged-field section on the
  partitions struct and on the value, where tag 0 PreviousProducerId (default -1), tag 1
  NextProducerId (default -1), tag 2 ClientTransactionVersion (default 0) and tag 3
  NextProducerEpoch (default -1, newer Kafka) are written only when not at their default,
  as Kafka's generated code does;
- a tombstone (value ``None``) removes the transactional id.

Also: the ``__transaction_state`` partition of a transactional id, and the JSON shape of
Kafka's ``TransactionLogMessageFormatter`` for a ``transactions dump``.

Pure: no imports from the coordinator or broker.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from .consumer_offsets import group_partition
from .errors import ProtocolError
from .schema_io import Reader as _Reader
from .schema_io import Writer as _Writer
from .varint import put_uvarint

#: CoordinatorRecordType.TRANSACTION_LOG: the key's int16 prefix.
TRANSACTION_LOG_KEY = 0
#: Value versions Kafka defines: 0 (classic) and 1 (flexible, KIP-890).
VALUE_VERSIONS = (0, 1)

_TAG_PREVIOUS_PRODUCER_ID = 0
_TAG_NEXT_PRODUCER_ID = 1
_TAG_CLIENT_TRANSACTION_VERSION = 2
_TAG_NEXT_PRODUCER_EPOCH = 3

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I64 = struct.Struct(">q")


class UnknownTxnRecordType(ProtocolError):
    """A key whose record type is not TRANSACTION_LOG (Kafka logs and skips it on load)."""


class UnknownTxnValueVersion(ProtocolError):
    """A value version this broker cannot read (Kafka skips the record on load)."""


@dataclass(frozen=True, slots=True)
class TransactionLogKey:
    transactional_id: str


@dataclass(frozen=True, slots=True)
class TxnTopicPartitions:
    """One entry of TransactionPartitions: a topic and its partition ids."""

    topic: str
    partition_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    #: TransactionState id: 0 Empty ... 7 PrepareEpochFence.
    transaction_status: int
    #: None (null) in state Empty, as Kafka writes it.
    transaction_partitions: tuple[TxnTopicPartitions, ...] | None
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    # Tagged fields of v1 (absent from v0: they read back as their defaults).
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0
    next_producer_epoch: int = -1
    #: The value version to write (decoding sets the version read): 1 once the cluster's
    #: ``transaction.version`` is 1 or more, 0 before.
    version: int = 1


# --- key ----------------------------------------------------------------------------------


def encode_key(key: TransactionLogKey) -> bytes:
    w = _Writer()
    w.i16(TRANSACTION_LOG_KEY)
    w.string(key.transactional_id)
    return bytes(w.buf)


def decode_key(data: bytes) -> TransactionLogKey:
    r = _Reader(data)
    version = r.i16()
    if version != TRANSACTION_LOG_KEY:
        raise UnknownTxnRecordType(f"unknown __transaction_state key type {version}")
    return TransactionLogKey(r.req_string())


# --- value --------------------------------------------------------------------------------


def _tag(buf: bytearray, tag: int, payload: bytes) -> None:
    put_uvarint(buf, tag)
    put_uvarint(buf, len(payload))
    buf += payload


def encode_value(value: TransactionLogValue, version: int | None = None) -> bytes:
    """The value bytes in ``version`` (default: the value's own); v0 drops the tagged
    fields, which it cannot carry."""
    if version is None:
        version = value.version
    if version not in VALUE_VERSIONS:
        raise ValueError(f"TransactionLogValue has no version {version}")
    flexible = version >= 1
    w = _Writer(flexible=flexible)
    w.i16(version)
    w.i64(value.producer_id)
    w.i16(value.producer_epoch)
    w.i32(value.transaction_timeout_ms)
    w.buf.append(value.transaction_status & 0xFF)
    parts = value.transaction_partitions
    w.array_len(None if parts is None else len(parts))
    for tp in parts or ():
        w.string(tp.topic)
        w.array_len(len(tp.partition_ids))
        for p in tp.partition_ids:
            w.i32(p)
        w.tags()
    w.i64(value.last_update_timestamp_ms)
    w.i64(value.start_timestamp_ms)
    if flexible:
        tags: list[tuple[int, bytes]] = []
        if value.previous_producer_id != -1:
            tags.append((_TAG_PREVIOUS_PRODUCER_ID, _I64.pack(value.previous_producer_id)))
        if value.next_producer_id != -1:
            tags.append((_TAG_NEXT_PRODUCER_ID, _I64.pack(value.next_producer_id)))
        if value.client_transaction_version != 0:
            tags.append((_TAG_CLIENT_TRANSACTION_VERSION,
                         _I16.pack(value.client_transaction_version)))
        if value.next_producer_epoch != -1:
            tags.append((_TAG_NEXT_PRODUCER_EPOCH, _I16.pack(value.next_producer_epoch)))
        put_uvarint(w.buf, len(tags))
        for tag, payload in tags:
            _tag(w.buf, tag, payload)
    return bytes(w.buf)


def value_version(data: bytes) -> int:
    if len(data) < 2:
        raise ProtocolError("truncated TransactionLogValue")
    return int.from_bytes(data[:2], "big", signed=True)


def decode_value(data: bytes) -> TransactionLogValue:
    r = _Reader(data)
    version = r.i16()
    if version not in VALUE_VERSIONS:
        raise UnknownTxnValueVersion(f"unknown TransactionLogValue version {version}")
    r.flexible = version >= 1
    producer_id = r.i64()
    epoch = r.i16()
    timeout = r.i32()
    (status,) = _I8.unpack(r._raw(1))
    n = r.uvarint() - 1 if r.flexible else r.i32()
    parts: tuple[TxnTopicPartitions, ...] | None = None
    if n >= 0:
        entries: list[TxnTopicPartitions] = []
        for _ in range(n):
            topic = r.req_string()
            ids = tuple(r.i32() for _ in range(r.array_len()))
            r.tags()
            entries.append(TxnTopicPartitions(topic, ids))
        parts = tuple(entries)
    last_update = r.i64()
    start = r.i64()
    prev_pid, next_pid, client_tv, next_epoch = -1, -1, 0, -1
    if r.flexible:
        for _ in range(r.uvarint()):
            tag = r.uvarint()
            size = r.uvarint()
            payload = r._raw(size)
            # Unknown tags are skipped, as Kafka's generated readers do.
            if tag == _TAG_PREVIOUS_PRODUCER_ID and size == 8:
                (prev_pid,) = _I64.unpack(payload)
            elif tag == _TAG_NEXT_PRODUCER_ID and size == 8:
                (next_pid,) = _I64.unpack(payload)
            elif tag == _TAG_CLIENT_TRANSACTION_VERSION and size == 2:
                (client_tv,) = _I16.unpack(payload)
            elif tag == _TAG_NEXT_PRODUCER_EPOCH and size == 2:
                (next_epoch,) = _I16.unpack(payload)
    return TransactionLogValue(producer_id, epoch, timeout, int(status), parts, last_update,
                               start, int(prev_pid), int(next_pid), int(client_tv),
                               int(next_epoch), version)


# --- partition of a transactional id -------------------------------------------------------


def txn_partition(transactional_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions``
    (the same function as a group's ``__consumer_offsets`` partition)."""
    return group_partition(transactional_id, num_partitions)


# --- JSON, as Kafka's TransactionLogMessageFormatter prints records -------------------------


def key_json(data: bytes) -> dict[str, Any]:
    version = value_version(data)
    try:
        key: Any = {"transactionalId": decode_key(data).transactional_id}
    except ProtocolError:
        key = "unknown"
    return {"version": version, "data": key}


def value_data_json(value: TransactionLogValue, version: int) -> dict[str, Any]:
    """Field names and order of Kafka's generated TransactionLogValueJsonConverter: tagged
    fields only in v1+ and only when not at their default."""
    flexible = version >= 1
    out: dict[str, Any] = {"producerId": value.producer_id}
    if flexible and value.previous_producer_id != -1:
        out["previousProducerId"] = value.previous_producer_id
    if flexible and value.next_producer_id != -1:
        out["nextProducerId"] = value.next_producer_id
    out["producerEpoch"] = value.producer_epoch
    out["transactionTimeoutMs"] = value.transaction_timeout_ms
    out["transactionStatus"] = value.transaction_status
    parts = value.transaction_partitions
    out["transactionPartitions"] = None if parts is None else [
        {"topic": tp.topic, "partitionIds": list(tp.partition_ids)} for tp in parts
    ]
    out["transactionLastUpdateTimestampMs"] = value.last_update_timestamp_ms
    out["transactionStartTimestampMs"] = value.start_timestamp_ms
    if flexible and value.client_transaction_version != 0:
        out["clientTransactionVersion"] = value.client_transaction_version
    if flexible and value.next_producer_epoch != -1:
        out["nextProducerEpoch"] = value.next_producer_epoch
    return out


def value_json(data: bytes) -> dict[str, Any]:
    version = value_version(data)
    try:
        body: Any = value_data_json(decode_value(data), version)
    except UnknownTxnValueVersion:
        body = "unknown"
    return {"version": version, "data": body}


def record_json(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """``{"key": ..., "value": ...}`` for one record; a malformed record raises
    ProtocolError (the caller decides whether to skip it)."""
    return {
        "key": None if key is None else key_json(key),
        "value": None if value is None else value_json(value),
    }
