"""Produce v3 and up: per-partition appends of whole batches, acks 0/1/-1, idempotence,
transactional batches (verified with the transaction coordinator, or added to the
transaction from v12, before they open a transaction on a partition: ``txn_verify``).

Only batch headers are parsed here: storage checks magic, lengths and CRC, and decodes
records only where the topic's rules need it (storage/validation.py). With
``log.durable`` the touched partitions are fsynced, off the event loop, before an
acks=1/-1 response.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import functools
from typing import Any, NamedTuple

import structlog

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode, ProtocolError
from kafkalite.protocol.names import NO_THROTTLE
from kafkalite.protocol.records import ATTR_TRANSACTIONAL, ATTRIBUTES_POS
from kafkalite.storage.catalog import InvalidTopicName, TopicInfo
from kafkalite.storage.errors import (
    DuplicateSequenceError,
    InvalidTxnStateError,
    RecordValidationError,
    StorageError,
    append_error,
)
from kafkalite.storage.fsutil import fsync_and_close
from kafkalite.storage.log import PartitionLog

from ...apis import NO_RESPONSE
from ...auth import CLUSTER_NAME, Access, Operation, ResourceType
from ...context import RequestContext
from ...metrics import BrokerMetrics
from ...topic_store import Storage
from ..transactions.txn_verify import TxnVerification, produce_error

log = structlog.get_logger("kafkalite.produce")

PRODUCE = ApiKey.PRODUCE
#: Replicas in sync with the leader of a partition that has one replica.
IN_SYNC = 1

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    PRODUCE: (3, None),
}


def _unsynced(response: Any, message: str) -> Any:
    """``response`` with every partition it acknowledged answered KAFKA_STORAGE_ERROR: the
    batch is in the segment file but the fsync ``log.durable`` promised failed, so the
    producer must not take it as written (an idempotent retry finds it and is answered
    with its offset)."""
    change = {"error_code": ErrorCode.kafka_storage_error, "base_offset": -1,
              "log_append_time": None, "error_message": message}
    topics = []
    for t in response.responses:
        parts = tuple(
            dataclasses.replace(p, **{k: v for k, v in change.items()
                                      if k in {f.name for f in dataclasses.fields(p)}})
            if p.error_code == NO_ERROR else p
            for p in t.partition_responses)
        topics.append(dataclasses.replace(t, partition_responses=parts))
    return dataclasses.replace(response, responses=tuple(topics))


def _resolve(storage: Storage, access: Access, ctx: RequestContext, name: str
             ) -> TopicInfo | ErrorCode:
    """The topic to write to, auto-created where the broker allows it and the principal
    may create it (Create on the cluster or the topic, as Metadata's auto-creation)."""
    existing = storage.catalog.get(name)
    if existing is not None:
        return existing
    may_create = (access.permits(ctx, Operation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
                  or access.permits(ctx, Operation.CREATE, ResourceType.TOPIC, name))
    found = storage.resolve_topic(name, allow_create=may_create)
    if found is None:
        return ErrorCode.unknown_topic_or_partition
    if isinstance(found, InvalidTopicName):
        return ErrorCode.invalid_topic_exception
    return found


#: The low byte of a batch's attributes, which holds the transactional flag.
_TXN_BYTE = ATTRIBUTES_POS + 1


class _Verified:
    """The partition log asks this before a transactional batch opens a transaction there
    (KIP-890): is the partition in the producer's transaction (Produce v12+: added to it
    now)? Remembers the coordinator's error for the answer."""

    __slots__ = ("error", "topic_partition", "transactional_id", "verify", "version")

    def __init__(self, verify: TxnVerification, transactional_id: str,
                 topic_partition: tuple[str, int], version: int) -> None:
        self.verify = verify
        self.transactional_id = transactional_id
        self.topic_partition = topic_partition
        self.version = version
        self.error = NO_ERROR

    def __call__(self, producer_id: int, producer_epoch: int) -> bool:
        self.error = self.verify.check(self.transactional_id, producer_id, producer_epoch,
                                       self.topic_partition, add=self.version >= 12)
        return self.error is NO_ERROR


class _Shapes(NamedTuple):
    """The response's classes at one version."""

    response: type[Any]
    topic: type[Any]
    partition: type[Any]
    #: KIP-467's per-record errors (v8+).
    record_error: type[Any] | None


@functools.cache
def _shapes(version: int) -> _Shapes:
    resp_t = codecs.codec(PRODUCE, version).response_type
    return _Shapes(resp_t, nested(resp_t, "TopicProduceResponse"),
                   nested(resp_t, "PartitionProduceResponse"),
                   nested(resp_t, "BatchIndexAndErrorMessage") if version >= 8 else None)


def _partition(shape: type[Any], index: int, error: ErrorCode, base: int = -1,
               start: int = -1, append_time: int = -1, message: str | None = None,
               record_errors: tuple[Any, ...] = ()) -> Any:
    return build(
        shape, index=index, error_code=error, base_offset=base,
        log_append_time=(datetime.datetime.fromtimestamp(append_time / 1000, datetime.UTC)
                         if append_time >= 0 else None),
        log_start_offset=start, record_errors=record_errors, error_message=message,
    )


#: Refusals Kafka's ReplicaManager answers without the log start offset (size,
#: corruption, the disk); the others carry it.
_WITHOUT_LOG_START = frozenset({
    ErrorCode.corrupt_message, ErrorCode.message_too_large, ErrorCode.kafka_storage_error,
    ErrorCode.request_timed_out, ErrorCode.unknown_server_error})


def _refused(exc: StorageError | OSError, plog: PartitionLog, verified: _Verified | None,
             version: int, shapes: _Shapes, index: int) -> Any:
    """A partition's answer when its append raised ``exc``: the code from the one table
    (``storage.errors.APPEND_ERRORS``), with what Produce adds to some of them."""
    error, message, record_errors = append_error(exc), str(exc), ()
    if isinstance(exc, RecordValidationError):
        # KIP-467: the batch is refused whole; each bad record is named (v8+).
        if exc.invalid_timestamp:
            error = ErrorCode.invalid_timestamp
        if shapes.record_error is not None:
            record_errors = tuple(build(shapes.record_error, batch_index=i,
                                        batch_index_error_message=m)
                                  for i, m in exc.record_errors)
    elif isinstance(exc, InvalidTxnStateError) and verified is not None and (
            verified.error is not NO_ERROR):
        error, unverified = _unverified(verified.error, version)
        return _partition(shapes.partition, index, error, start=plog.log_start_offset,
                          message=unverified)
    elif isinstance(exc, OSError):
        log.error("produce.append_failed", topic=plog.topic, partition=plog.partition,
                  error=message)
    start = -1 if error in _WITHOUT_LOG_START else plog.log_start_offset
    return _partition(shapes.partition, index, error, start=start, message=message,
                      record_errors=record_errors)


def _unverified(error: ErrorCode, version: int) -> tuple[ErrorCode, str | None]:
    """A transactional batch the coordinator did not verify, as Produce answers it."""
    err = produce_error(error, version)
    message = ("Partition was not added to the transaction"
               if err is ErrorCode.invalid_txn_state else
               "Unable to verify the partition has been added to the "
               f"transaction. Underlying error: {error.name}"
               if err is ErrorCode.not_enough_replicas else None)
    return err, message


def _target(storage: Storage, access: Access, ctx: RequestContext, name: str | None,
            topic_id: Any) -> TopicInfo | ErrorCode:
    """The topic a request's entry writes to (by name, or by id from v13), or why not."""
    if name is None:
        found = storage.catalog.by_id(topic_id) if topic_id is not None else None
        if found is None:
            return ErrorCode.unknown_topic_id
        if not access.permits(ctx, Operation.WRITE, ResourceType.TOPIC, found.name):
            return ErrorCode.topic_authorization_failed
        return found
    if not access.permits(ctx, Operation.WRITE, ResourceType.TOPIC, name):
        # Checked before the topic is looked up (or auto-created), as KafkaApis.
        return ErrorCode.topic_authorization_failed
    return _resolve(storage, access, ctx, name)


_ACKS = (0, 1, -1)


def produce(storage: Storage, access: Access, metrics: BrokerMetrics, verify: TxnVerification,
            ctx: RequestContext, req: Any) -> Any:
    writes = _Writes(storage, access, metrics, verify, ctx, req)
    for t in req.topic_data:
        writes.topic(t)
    return writes.answer(req.acks, req.timeout)


class _Writes:
    """One Produce request's appends, partition by partition, and what its answer waits
    for: the fsync ``log.durable`` promises, and the followers under acks=all."""

    __slots__ = ("access", "acks", "ctx", "manager", "metrics", "req", "shapes", "storage",
                 "topics", "touched", "txn_allowed", "unreplicated", "verify")

    def __init__(self, storage: Storage, access: Access, metrics: BrokerMetrics,
                 verify: TxnVerification, ctx: RequestContext, req: Any) -> None:
        self.storage, self.access, self.metrics, self.verify = storage, access, metrics, verify
        self.ctx, self.req, self.acks = ctx, req, req.acks
        self.manager = storage.logs
        self.shapes = _shapes(ctx.api_version)
        # As KafkaApis: transactional batches need a transactional id the client may write
        # (checked per partition, to keep plain requests free of a second pass).
        self.txn_allowed = req.transactional_id is not None and access.permits(
            ctx, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id)
        self.topics: list[Any] = []
        #: Partitions appended to (fsynced before the answer under ``log.durable``).
        self.touched: list[PartitionLog] = []
        #: acks=all appends the followers have not all copied yet: (topic index,
        #: partition index in it, replica set, last offset).
        self.unreplicated: list[tuple[int, int, Any, int]] = []

    def topic(self, t: Any) -> None:
        name = getattr(t, "name", None)
        tid = getattr(t, "topic_id", None)
        info = _target(self.storage, self.access, self.ctx, name, tid)
        if isinstance(info, ErrorCode) or info.internal or self.acks not in _ACKS:
            err = (info if isinstance(info, ErrorCode)
                   else ErrorCode.invalid_required_acks if self.acks not in _ACKS
                   else ErrorCode.invalid_topic_exception)
            parts = tuple(_partition(self.shapes.partition, p.index, err)
                          for p in t.partition_data)
        else:
            parts_out: list[Any] = []
            for p in t.partition_data:
                parts_out.append(self.partition(info, p.index, p.records, len(parts_out)))
            parts = tuple(parts_out)
        self.topics.append(build(self.shapes.topic, name=name, topic_id=tid,
                                 partition_responses=parts))

    def partition(self, info: TopicInfo, index: int, records: bytes | None, at: int) -> Any:
        """Partition ``index``'s answer, the ``at``-th of its topic's: refused before the
        log is touched, or appended."""
        shape = self.shapes.partition
        plog = self.manager.get(info.name, index) if 0 <= index < info.partitions else None
        if plog is None:
            return _partition(shape, index, ErrorCode.unknown_topic_or_partition)
        if not records:
            return _partition(shape, index, ErrorCode.invalid_record)
        replicas = plog.replicator
        if self.acks == -1:
            in_sync = IN_SYNC if replicas is None else replicas.in_sync
            if plog.config.min_insync_replicas > in_sync:
                # As Kafka's Partition.appendRecordsToLeader: nothing is written.
                return _partition(
                    shape, index, ErrorCode.not_enough_replicas,
                    message=f"The size of the current ISR {in_sync} is insufficient to "
                    f"satisfy the min.isr requirement of {plog.config.min_insync_replicas} "
                    f"for partition {info.name}-{index}")
        verified: _Verified | None = None
        if len(records) > _TXN_BYTE and records[_TXN_BYTE] & ATTR_TRANSACTIONAL:
            if not self.txn_allowed:
                return _partition(shape, index, ErrorCode.transactional_id_authorization_failed)
            version = self.ctx.api_version
            if version >= 12 or self.verify.enabled:
                verified = _Verified(self.verify, self.req.transactional_id,
                                     (info.name, index), version)
        try:
            schema_check = self.storage.schema_check
            if schema_check is not None:
                schema_check(info.name, records)
            base, last = plog.append(records, from_client=True, txn_verified=verified)
            self.metrics.produced(info.name, last - base + 1, len(records))
        except DuplicateSequenceError as e:
            base = e.base_offset
        except (StorageError, OSError) as e:
            return _refused(e, plog, verified, self.ctx.api_version, self.shapes, index)
        self.touched.append(plog)
        if self.acks == -1 and replicas is not None and (
                plog.high_watermark < plog.log_end_offset):
            self.unreplicated.append((len(self.topics), at, replicas,
                                      plog.log_end_offset - 1))
        append_time = plog.clock() if plog.config.log_append_time else -1
        return _partition(shape, index, NO_ERROR, base, plog.log_start_offset, append_time)

    def answer(self, acks: int, timeout: Any) -> Any:
        """The response, or a coroutine that makes it once the writes are as durable and
        as replicated as promised; none for acks=0."""
        if acks == 0:
            failed = [p.index for t in self.topics for p in t.partition_responses
                      if p.error_code != NO_ERROR]
            if failed:
                # As Kafka: with no response to carry the error, closing the connection
                # is what makes the client refresh its metadata and notice.
                raise ProtocolError(f"produce with acks=0 failed for partitions {failed}")
            return NO_RESPONSE
        resp_t = self.shapes.response
        fds = ([fd for plog in self.touched for fd in plog.sync_handles()]
               if self.manager.durable else [])
        if self.unreplicated:
            return _after_replication(resp_t, self.topics, self.unreplicated, _ms(timeout),
                                      fds)
        response = build(resp_t, responses=tuple(self.topics), throttle_time=NO_THROTTLE)
        if fds:
            return _after_sync(response, fds)
        return response


async def _after_sync(response: Any, fds: list[int]) -> Any:
    """``response`` once the appends are on disk (``log.durable``)."""
    try:
        await asyncio.get_running_loop().run_in_executor(None, fsync_and_close, fds)
    except OSError as e:
        log.error("produce.fsync_failed", error=str(e))
        return _unsynced(response, f"fsync failed: {e}")
    return response


async def _after_replication(resp_t: type[Any], topics_out: list[Any],
                             waiting: list[tuple[int, int, Any, int]], timeout_ms: int,
                             fds: list[int]) -> Any:
    """acks=all: the answer once the high watermark has passed each append (Kafka's
    DelayedProduce), each partition's error as its wait ended."""
    if fds:
        await asyncio.get_running_loop().run_in_executor(None, fsync_and_close, fds)
    errors = await asyncio.gather(*(rs.acked(last, max(timeout_ms, 1))
                                    for _t, _p, rs, last in waiting))
    topics = list(topics_out)
    for (t, p, _rs, _last), err in zip(waiting, errors, strict=True):
        if err is NO_ERROR:
            continue
        parts = list(topics[t].partition_responses)
        parts[p] = dataclasses.replace(parts[p], error_code=err, base_offset=-1)
        topics[t] = dataclasses.replace(topics[t], partition_responses=tuple(parts))
    return build(resp_t, responses=tuple(topics), throttle_time=NO_THROTTLE)


def _ms(timeout: Any) -> int:
    """The request's timeout in ms (kio decodes it as a timedelta)."""
    if isinstance(timeout, datetime.timedelta):
        return int(timeout.total_seconds() * 1000)
    return int(timeout)
