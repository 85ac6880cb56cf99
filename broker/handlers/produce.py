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
import os
from typing import Any

import structlog

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode, ProtocolError
from kafkalite.protocol.names import NO_THROTTLE
from kafkalite.protocol.records import ATTR_TRANSACTIONAL, ATTRIBUTES_POS
from kafkalite.storage.catalog import InvalidTopicName, TopicInfo
from kafkalite.storage.errors import (
    CorruptRecordError,
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    RecordValidationError,
    append_error,
)
from kafkalite.storage.log import PartitionLog

from ..apis import NO_RESPONSE
from ..auth import CLUSTER_NAME, Access, Operation, ResourceType
from ..context import RequestContext
from ..metrics import BrokerMetrics
from ..topic_store import Storage
from .txn_verify import TxnVerification, produce_error

log = structlog.get_logger("kafkalite.produce")

PRODUCE = ApiKey.PRODUCE
#: Replicas in sync with the leader of a partition that has one replica.
IN_SYNC = 1

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    PRODUCE: (3, None),
}


def _fsync_all(fds: list[int]) -> None:
    try:
        for fd in fds:
            os.fsync(fd)
    finally:
        for fd in fds:
            os.close(fd)


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


def produce(storage: Storage, access: Access, metrics: BrokerMetrics, verify: TxnVerification,
            ctx: RequestContext, req: Any) -> Any:
    version = ctx.api_version
    resp_t = codecs.codec(PRODUCE, version).response_type
    part_t = nested(resp_t, "PartitionProduceResponse")
    error_t = nested(resp_t, "BatchIndexAndErrorMessage") if version >= 8 else None
    topic_t = nested(resp_t, "TopicProduceResponse")
    manager = storage.logs
    catalog = storage.catalog
    schema_check = storage.schema_check
    # As KafkaApis: transactional batches need a transactional id the client may write
    # (checked per partition below, to keep plain requests free of a second pass).
    txn_allowed = req.transactional_id is not None and access.permits(
        ctx, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactional_id)
    acks = req.acks
    touched: list[PartitionLog] = []
    topics_out: list[Any] = []
    #: acks=all appends the followers have not all copied yet: (topic index, partition
    #: index in it, replica set, last offset).
    unreplicated: list[tuple[int, int, Any, int]] = []

    def part(index: int, error: ErrorCode, base: int = -1, start: int = -1,
             append_time: int = -1, message: str | None = None,
             record_errors: tuple[Any, ...] = ()) -> Any:
        return build(
            part_t, index=index, error_code=error, base_offset=base,
            log_append_time=(
                datetime.datetime.fromtimestamp(append_time / 1000, datetime.UTC)
                if append_time >= 0 else None
            ),
            log_start_offset=start, record_errors=record_errors, error_message=message,
        )

    for t in req.topic_data:
        name = getattr(t, "name", None)
        tid = getattr(t, "topic_id", None)
        info: TopicInfo | ErrorCode
        if name is None:
            found = catalog.by_id(tid) if tid is not None else None
            info = found if found is not None else ErrorCode.unknown_topic_id
            if found is not None and not access.permits(ctx, Operation.WRITE,
                                                        ResourceType.TOPIC, found.name):
                info = ErrorCode.topic_authorization_failed
        elif not access.permits(ctx, Operation.WRITE, ResourceType.TOPIC, name):
            # Checked before the topic is looked up (or auto-created), as KafkaApis.
            info = ErrorCode.topic_authorization_failed
        else:
            info = _resolve(storage, access, ctx, name)
        if isinstance(info, ErrorCode) or info.internal or acks not in (0, 1, -1):
            err = (
                info if isinstance(info, ErrorCode)
                else ErrorCode.invalid_required_acks if acks not in (0, 1, -1)
                else ErrorCode.invalid_topic_exception
            )
            parts = tuple(part(p.index, err) for p in t.partition_data)
            topics_out.append(build(topic_t, name=name, topic_id=tid,
                                    partition_responses=parts))
            continue
        parts_out = []
        for p in t.partition_data:
            plog = manager.get(info.name, p.index) if 0 <= p.index < info.partitions else None
            if plog is None:
                parts_out.append(part(p.index, ErrorCode.unknown_topic_or_partition))
                continue
            records = p.records
            if not records:
                parts_out.append(part(p.index, ErrorCode.invalid_record))
                continue
            replicas = plog.replicator
            in_sync = IN_SYNC if replicas is None else replicas.in_sync
            if acks == -1 and plog.config.min_insync_replicas > in_sync:
                # As Kafka's Partition.appendRecordsToLeader: nothing is written.
                parts_out.append(part(
                    p.index, ErrorCode.not_enough_replicas,
                    message=f"The size of the current ISR {in_sync} is insufficient to "
                    f"satisfy the min.isr requirement of {plog.config.min_insync_replicas} "
                    f"for partition {info.name}-{p.index}"))
                continue
            verified: _Verified | None = None
            if len(records) > _TXN_BYTE and records[_TXN_BYTE] & ATTR_TRANSACTIONAL:
                if not txn_allowed:
                    parts_out.append(part(p.index, ErrorCode.transactional_id_authorization_failed))
                    continue
                if version >= 12 or verify.enabled:
                    verified = _Verified(verify, req.transactional_id, (info.name, p.index),
                                         version)
            try:
                if schema_check is not None:
                    schema_check(info.name, records)
                base, last = plog.append(records, from_client=True,
                                         txn_verified=verified)
                metrics.produced(info.name, last - base + 1, len(records))
            except DuplicateSequenceError as e:
                base = e.base_offset
            except CorruptRecordError as e:
                parts_out.append(part(p.index, ErrorCode.corrupt_message, message=str(e)))
                continue
            except RecordValidationError as e:
                # KIP-467: the batch is refused whole; each bad record is named (v8+).
                parts_out.append(part(
                    p.index, ErrorCode.invalid_timestamp if e.invalid_timestamp
                    else ErrorCode.invalid_record,
                    start=plog.log_start_offset, message=e.message,
                    record_errors=() if error_t is None else tuple(
                        build(error_t, batch_index=i, batch_index_error_message=m)
                        for i, m in e.record_errors)))
                continue
            except InvalidRecordError as e:
                parts_out.append(part(p.index, ErrorCode.invalid_record,
                                      start=plog.log_start_offset, message=str(e)))
                continue
            except RecordTooLargeError as e:
                parts_out.append(part(p.index, ErrorCode.message_too_large, message=str(e)))
                continue
            # Errors other than unknown partition, size and corruption carry the log start
            # offset, as Kafka's ReplicaManager answers them.
            except OutOfOrderSequenceError as e:
                parts_out.append(part(p.index, ErrorCode.out_of_order_sequence_number,
                                      start=plog.log_start_offset, message=str(e)))
                continue
            except InvalidProducerEpochError as e:
                parts_out.append(part(p.index, ErrorCode.invalid_producer_epoch,
                                      start=plog.log_start_offset, message=str(e)))
                continue
            except InvalidTxnStateError as e:
                if verified is not None and verified.error is not NO_ERROR:
                    err = produce_error(verified.error, version)
                    message = ("Partition was not added to the transaction"
                               if err is ErrorCode.invalid_txn_state else
                               "Unable to verify the partition has been added to the "
                               f"transaction. Underlying error: {verified.error.name}"
                               if err is ErrorCode.not_enough_replicas else None)
                    parts_out.append(part(p.index, err, start=plog.log_start_offset,
                                          message=message))
                else:
                    parts_out.append(part(p.index, ErrorCode.invalid_txn_state,
                                          start=plog.log_start_offset, message=str(e)))
                continue
            except OSError as e:
                log.error("produce.append_failed", topic=info.name, partition=p.index,
                          error=str(e))
                parts_out.append(part(p.index, append_error(e), message=str(e)))
                continue
            touched.append(plog)
            if acks == -1 and replicas is not None and (
                    plog.high_watermark < plog.log_end_offset):
                unreplicated.append((len(topics_out), len(parts_out), replicas,
                                     plog.log_end_offset - 1))
            append_time = plog.clock() if plog.config.log_append_time else -1
            parts_out.append(part(p.index, NO_ERROR, base, plog.log_start_offset,
                                  append_time))
        topics_out.append(build(topic_t, name=name, topic_id=tid,
                                partition_responses=tuple(parts_out)))
    if acks == 0:
        failed = [p.index for t in topics_out for p in t.partition_responses
                  if p.error_code != NO_ERROR]
        if failed:
            # As Kafka: with no response to carry the error, closing the connection
            # is what makes the client refresh its metadata and notice.
            raise ProtocolError(f"produce with acks=0 failed for partitions {failed}")
        return NO_RESPONSE
    if unreplicated:
        fds = ([fd for plog in touched for fd in plog.sync_handles()] if manager.durable
               else [])
        return _after_replication(resp_t, topics_out, unreplicated, _ms(req.timeout), fds)
    response = build(resp_t, responses=tuple(topics_out), throttle_time=NO_THROTTLE)
    if manager.durable and touched:
        fds = [fd for plog in touched for fd in plog.sync_handles()]
        loop = asyncio.get_running_loop()

        async def after_sync() -> Any:
            try:
                await loop.run_in_executor(None, _fsync_all, fds)
            except OSError as e:
                log.error("produce.fsync_failed", error=str(e))
                return _unsynced(response, f"fsync failed: {e}")
            return response

        return after_sync()
    return response



async def _after_replication(resp_t: type[Any], topics_out: list[Any],
                             waiting: list[tuple[int, int, Any, int]], timeout_ms: int,
                             fds: list[int]) -> Any:
    """acks=all: the answer once the high watermark has passed each append (Kafka's
    DelayedProduce), each partition's error as its wait ended."""
    if fds:
        await asyncio.get_running_loop().run_in_executor(None, _fsync_all, fds)
    errors = await asyncio.gather(*(rs.acked(last, max(timeout_ms, 1))
                                    for _t, _p, rs, last in waiting))
    topics = list(topics_out)
    for (t, p, _rs, _last), err in zip(waiting, errors, strict=True):
        if err is ErrorCode.none:
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
