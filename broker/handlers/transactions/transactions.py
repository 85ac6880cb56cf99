"""AddPartitionsToTxn v0-v5, AddOffsetsToTxn v0-v4, EndTxn v0-v5, WriteTxnMarkers v1-v2,
DescribeTransactions v0 and ListTransactions v0-v2: wire <-> the transaction coordinator's
core (``coordinator/txn/transactions.py``), driven by the runtime, with KafkaApis'
authorization (Write on the transactional id, Write on each topic for AddPartitionsToTxn
before v4, Read on the group for AddOffsetsToTxn, ClusterAction for AddPartitionsToTxn v4+
and WriteTxnMarkers, Describe for the describing APIs). InitProducerId is in
``producer_ids``, TxnOffsetCommit in ``txn_offsets``.

A request that writes is answered once its ``__transaction_state`` record is appended and
replayed; appends are synchronous, so that is before the runtime's ``write`` returns, and the
``Answer`` waiter merely holds the core's reply until then.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from kafkalite.coordinator.results import PARKED, Outcome
from kafkalite.coordinator.runtime import Coordinator
from kafkalite.coordinator.txn.state import TopicPartition
from kafkalite.coordinator.txn.transactions import (
    AddPartitionsResult,
    DescribedTransaction,
    EndTxnResult,
    ListTransactionsResult,
    Transactions,
    TxnPartitionsRequest,
)
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import INTERNAL_TOPICS, NO_THROTTLE

from ...auth import CLUSTER_NAME, Access, Operation, ResourceType
from ...context import RequestContext
from ...topic_store import Storage

ADD_PARTITIONS_TO_TXN = ApiKey.ADD_PARTITIONS_TO_TXN
ADD_OFFSETS_TO_TXN = ApiKey.ADD_OFFSETS_TO_TXN
END_TXN = ApiKey.END_TXN
WRITE_TXN_MARKERS = ApiKey.WRITE_TXN_MARKERS
DESCRIBE_TRANSACTIONS = ApiKey.DESCRIBE_TRANSACTIONS
LIST_TRANSACTIONS = ApiKey.LIST_TRANSACTIONS

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    ADD_PARTITIONS_TO_TXN: (0, 5),
    ADD_OFFSETS_TO_TXN: (0, 4),
    END_TXN: (0, 5),
    WRITE_TXN_MARKERS: (1, 2),
    DESCRIBE_TRANSACTIONS: (0, 0),
    LIST_TRANSACTIONS: (0, 2),
}

C = TypeVar("C")


class Answer:
    """The waiter a core method is given: holds its reply until the handler reads it (or,
    were an append ever to complete later, hands it to a coroutine awaiting it)."""

    __slots__ = ("done", "future", "value")

    def __init__(self) -> None:
        self.done = False
        self.value: Any = None
        self.future: Any = None

    def __call__(self, value: Any) -> None:
        self.value = value
        self.done = True
        if self.future is not None and not self.future.done():
            self.future.set_result(value)


def ask(coordinator: Coordinator[C], start: Callable[[C, int, Answer], Outcome],
        respond: Callable[[Any], Any]) -> Any:
    """Run ``start(the core, now, waiter)`` through the runtime; ``respond`` to its result."""
    waiter = Answer()
    out = coordinator.write(lambda c, now: start(c, now, waiter))
    if out is not PARKED:
        return respond(out)
    if waiter.done:
        return respond(waiter.value)
    return _later(waiter, respond)


def _later(waiter: Answer, respond: Callable[[Any], Any]) -> Coroutine[Any, Any, Any]:
    waiter.future = asyncio.get_running_loop().create_future()

    async def wait() -> Any:
        return respond(await waiter.future)

    return wait()


def _topic_results(res_t: type[Any], part_t: type[Any],
                   errors: dict[TopicPartition, ErrorCode]) -> tuple[Any, ...]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, p), err in errors.items():
        by_topic.setdefault(topic, []).append(
            build(part_t, partition_index=p, partition_error_code=err))
    return tuple(build(res_t, name=t, results_by_partition=tuple(ps))
                 for t, ps in by_topic.items())


# --- AddPartitionsToTxn -------------------------------------------------------------------


def _checked_partitions(storage: Storage, access: Access, ctx: RequestContext,
                        parts: list[TopicPartition], from_client: bool
                        ) -> dict[TopicPartition, ErrorCode] | None:
    """KafkaApis' checks before the coordinator sees a transaction's partitions: Write on
    each topic (from clients, v0-3; internal topics never pass), then existence. Any
    failure fails the transaction: the others answer OPERATION_NOT_ATTEMPTED."""
    errors: dict[TopicPartition, ErrorCode] = {}
    for topic, p in parts:
        if from_client and (topic in INTERNAL_TOPICS or not access.permits(
                ctx, Operation.WRITE, ResourceType.TOPIC, topic)):
            errors[(topic, p)] = ErrorCode.topic_authorization_failed
            continue
        info = storage.catalog.get(topic)
        if info is None or not 0 <= p < info.partitions:
            errors[(topic, p)] = ErrorCode.unknown_topic_or_partition
    if not errors:
        return None
    return {tp: errors.get(tp, ErrorCode.operation_not_attempted) for tp in parts}


def add_partitions_to_txn(storage: Storage, txn: Transactions, access: Access,
                          ctx: RequestContext, req: Any) -> Any:
    v = ctx.api_version
    resp_t = codecs.codec(ADD_PARTITIONS_TO_TXN, v).response_type
    res_t = nested(resp_t, "AddPartitionsToTxnTopicResult")
    part_t = nested(resp_t, "AddPartitionsToTxnPartitionResult")
    if v < 4:
        tid = req.v3_and_below_transactional_id
        parts = list(dict.fromkeys((t.name, int(p)) for t in req.v3_and_below_topics
                                   for p in t.partitions))

        def respond_v3(errors: dict[TopicPartition, ErrorCode]) -> Any:
            return build(resp_t, throttle_time=NO_THROTTLE,
                         results_by_topic_v3_and_below=_topic_results(res_t, part_t, errors))

        if not access.permits(ctx, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
            return respond_v3(dict.fromkeys(parts, ErrorCode.transactional_id_authorization_failed))
        failed = _checked_partitions(storage, access, ctx, parts, True)
        if failed is not None:
            return respond_v3(failed)
        return ask(txn, lambda t, now, w: t.add_partitions(
            now, w, transactional_id=tid, producer_id=req.v3_and_below_producer_id,
            producer_epoch=req.v3_and_below_producer_epoch, partitions=parts, version=v),
            lambda r: respond_v3(r.errors))
    # v4+: from brokers, several transactions, each added or only verified.
    txn_res_t = nested(resp_t, "AddPartitionsToTxnResult")

    def respond(results: list[AddPartitionsResult], error: ErrorCode = NO_ERROR) -> Any:
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=error,
                     results_by_transaction=tuple(
                         build(txn_res_t, transactional_id=r.transactional_id,
                               topic_results=_topic_results(res_t, part_t, r.errors))
                         for r in results))

    if not access.permits(ctx, Operation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        return respond([], ErrorCode.cluster_authorization_failed)
    early: dict[int, AddPartitionsResult] = {}
    asked: list[tuple[int, TxnPartitionsRequest]] = []
    for i, t in enumerate(req.transactions):
        parts = list(dict.fromkeys((tp.name, int(p)) for tp in t.topics for p in tp.partitions))
        failed = _checked_partitions(storage, access, ctx, parts, False)
        if failed is not None:
            early[i] = AddPartitionsResult(t.transactional_id, failed)
            continue
        asked.append((i, TxnPartitionsRequest(t.transactional_id, t.producer_id,
                                              t.producer_epoch, tuple(parts), t.verify_only)))

    def merge(answered: list[AddPartitionsResult]) -> Any:
        out = dict(early)
        for (i, _t), r in zip(asked, answered, strict=True):
            out[i] = r
        return respond([out[i] for i in sorted(out)])

    if not asked:
        return merge([])
    return ask(txn, lambda t, now, w: t.add_partitions_batch(
            now, w, [t for _i, t in asked], version=v), merge)


# --- AddOffsetsToTxn, EndTxn --------------------------------------------------------------


def add_offsets_to_txn(txn: Transactions, access: Access, ctx: RequestContext,
                       req: Any) -> Any:
    resp_t = codecs.codec(ADD_OFFSETS_TO_TXN, ctx.api_version).response_type

    def respond(err: ErrorCode) -> Any:
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=err)

    if not access.permits(ctx, Operation.WRITE, ResourceType.TRANSACTIONAL_ID,
                          req.transactional_id):
        return respond(ErrorCode.transactional_id_authorization_failed)
    if not access.permits(ctx, Operation.READ, ResourceType.GROUP, req.group_id):
        return respond(ErrorCode.group_authorization_failed)
    return ask(txn, lambda t, now, w: t.add_offsets(
            now, w, transactional_id=req.transactional_id, producer_id=req.producer_id,
        producer_epoch=req.producer_epoch, group_id=req.group_id, version=ctx.api_version),
        respond)


def end_txn(txn: Transactions, access: Access, ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(END_TXN, ctx.api_version).response_type

    def respond(r: EndTxnResult) -> Any:
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=r.error,
                     producer_id=r.producer_id, producer_epoch=r.producer_epoch)

    if not access.permits(ctx, Operation.WRITE, ResourceType.TRANSACTIONAL_ID,
                          req.transactional_id):
        return respond(EndTxnResult(ErrorCode.transactional_id_authorization_failed))
    return ask(txn, lambda t, now, w: t.end_txn(
            now, w, transactional_id=req.transactional_id, producer_id=req.producer_id,
        producer_epoch=req.producer_epoch, committed=bool(req.committed),
        version=ctx.api_version), respond)


# --- WriteTxnMarkers ----------------------------------------------------------------------


def write_txn_markers(storage: Storage, txn: Transactions, access: Access,
                      ctx: RequestContext, req: Any) -> Any:
    """What a broker's transaction coordinator sends to partition leaders. Kafka asks for
    Alter or ClusterAction on the cluster (a client without them gets
    CLUSTER_AUTHORIZATION_FAILED on every partition, and nothing is written); a permitted
    request is carried out as Kafka does: each marker appended to its partitions (for
    ``__consumer_offsets`` through the group coordinator)."""
    resp_t = codecs.codec(WRITE_TXN_MARKERS, ctx.api_version).response_type
    result_t = nested(resp_t, "WritableTxnMarkerResult")
    topic_t = nested(resp_t, "WritableTxnMarkerTopicResult")
    part_t = nested(resp_t, "WritableTxnMarkerPartitionResult")
    allowed = (access.permits(ctx, Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)
               or access.permits(ctx, Operation.CLUSTER_ACTION, ResourceType.CLUSTER,
                                 CLUSTER_NAME))
    results = []
    for m in req.markers:
        parts = [(t.name, int(p)) for t in m.topics for p in t.partition_indexes]
        errors: dict[TopicPartition, ErrorCode] = {}
        if not allowed:
            errors = dict.fromkeys(parts, ErrorCode.cluster_authorization_failed)
        else:
            known = []
            for topic, p in parts:
                info = storage.catalog.get(topic)
                if info is None or not 0 <= p < info.partitions:
                    errors[(topic, p)] = ErrorCode.unknown_topic_or_partition
                else:
                    known.append((topic, p))
            if known:
                errors.update(_write_markers(txn, m, known))
        by_topic: dict[str, list[Any]] = {}
        for (topic, p), err in errors.items():
            by_topic.setdefault(topic, []).append(build(part_t, partition_index=p,
                                                        error_code=err))
        results.append(build(result_t, producer_id=m.producer_id, topics=tuple(
            build(topic_t, name=t, partitions=tuple(ps)) for t, ps in by_topic.items())))
    return build(resp_t, markers=tuple(results))


# --- DescribeTransactions, ListTransactions -------------------------------------------------


def describe_transactions(txn: Transactions, access: Access, ctx: RequestContext,
                          req: Any) -> Any:
    resp_t = codecs.codec(DESCRIBE_TRANSACTIONS, ctx.api_version).response_type
    state_t = nested(resp_t, "TransactionState")
    topic_t = nested(resp_t, "TopicData")
    out = []
    for tid in req.transactional_ids:
        if not access.permits(ctx, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
            d = DescribedTransaction(ErrorCode.transactional_id_authorization_failed, tid)
        else:
            d = _describe(txn, tid)
        # As KafkaApis: only the topics the principal may describe.
        topics = [(t, ps) for t, ps in d.topics
                  if access.permits(ctx, Operation.DESCRIBE, ResourceType.TOPIC, t)]
        out.append(build(
            state_t, error_code=d.error, transactional_id=tid, transaction_state=d.state,
            transaction_timeout=datetime.timedelta(milliseconds=d.timeout_ms),
            transaction_start_time=_timestamp(d.start_time_ms),
            producer_id=d.producer_id, producer_epoch=d.producer_epoch,
            topics=tuple(build(topic_t, topic=t, partitions=tuple(ps)) for t, ps in topics)))
    return build(resp_t, throttle_time=NO_THROTTLE, transaction_states=tuple(out))


def _timestamp(ms: int) -> datetime.datetime:
    """An int64 timestamp field as kio takes it (-1, no transaction started, included)."""
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)


def _write_markers(txn: Transactions, m: Any, partitions: list[TopicPartition]
                   ) -> dict[TopicPartition, ErrorCode]:
    return txn.query(lambda t: t.markers.write_markers(
        m.producer_id, m.producer_epoch, m.coordinator_epoch, bool(m.transaction_result),
        partitions, int(getattr(m, "transaction_version", 0))))


def _describe(txn: Transactions, tid: str) -> DescribedTransaction:
    described = txn.query(lambda t: t.describe_transactions([tid]).response)
    assert isinstance(described, list)
    d = described[0]
    assert isinstance(d, DescribedTransaction)
    return d


def list_transactions(txn: Transactions, access: Access, ctx: RequestContext,
                      req: Any) -> Any:
    resp_t = codecs.codec(LIST_TRANSACTIONS, ctx.api_version).response_type
    state_t = nested(resp_t, "TransactionState")
    res = txn.read(lambda t, now: t.list_transactions(
        now, state_filters=req.state_filters, producer_id_filters=req.producer_id_filters,
        duration_filter_ms=int(getattr(req, "duration_filter", -1)),
        transactional_id_pattern=getattr(req, "transactional_id_pattern", None)).response)
    assert isinstance(res, ListTransactionsResult)
    # As KafkaApis: only the transactional ids the principal may describe.
    listed = [t for t in res.transactions
              if access.permits(ctx, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                t.transactional_id)]
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=res.error,
                 unknown_state_filters=tuple(res.unknown_state_filters),
                 transaction_states=tuple(
                     build(state_t, transactional_id=t.transactional_id,
                           producer_id=t.producer_id, transaction_state=t.state)
                     for t in listed))
