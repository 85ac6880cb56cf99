"""The pure transaction coordinator: one method per request, returning an ``Outcome``.

Follows Kafka's TransactionCoordinator (handleInitProducerId, handleAddPartitionsToTransaction,
handleVerifyPartitionsInTransaction, handleEndTransaction, handleDescribeTransactions,
handleListTransactions) with the version-dependent parts of KafkaApis folded in:
PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for clients that predate it (InitProducerId
before v4; AddPartitionsToTxn, AddOffsetsToTxn and EndTxn before v2), and the client's
transaction version comes from the request version (EndTxn v5 and AddPartitionsToTxn v4+
speak KIP-890's version 2).

Methods take ``now`` (ms) and, when a record may be written, an opaque waiter. A request
answered at once has the Outcome's ``response`` set; otherwise the response is PARKED and
arrives as a reply once the record is appended and replayed. Records go to
``__transaction_state`` (``Write.topic``); markers go through the injected MarkerWriter;
new producer ids come from the injected allocator. Deadlines are keys of the injected
timers (``("txn-timeout", id)``, ``("txn-expire", id)``, and the marker/completion
retries ``("txn-markers", id)``, ``("txn-complete", id)``); the scheduler hands each due
key to its kind's handler in ``timer_handlers``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kafkalite.protocol import transaction_log as tl
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.timekeeping.timers import Timers

from ..results import Outcome
from ..runtime import Coordinator
from ..state_topics import RecordCodec, SkipRecord
from .completion import TxnCompletion
from .markers import MarkerWriter
from .results import (
    AddPartitionsResult,
    DescribedTransaction,
    EndTxnResult,
    InitProducerIdResult,
    ListedTransaction,
    ListTransactionsResult,
    TxnPartitionsRequest,
)
from .state import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    STATE_BY_LABEL,
    IllegalTxnState,
    TopicPartition,
    TxnMetadata,
    is_epoch_exhausted,
)
from .store import Call, S, TxnConfig, TxnStore, log


def _decode(key: bytes, value: bytes | None) -> tuple[Any, Any]:
    try:
        k = tl.decode_key(key)
    except tl.UnknownTxnRecordType as e:
        raise SkipRecord(str(e)) from e
    return k, None if value is None else tl.decode_value(value)


#: ``__transaction_state``'s records as the runtime appends and replays them.
TRANSACTION_CODEC = RecordCodec(
    tl.encode_key, lambda v: None if v is None else tl.encode_value(v), _decode)

Answer = Callable[[ErrorCode, int], Outcome]


def _fenced_for(version: int, first_with_fenced: int, err: ErrorCode) -> ErrorCode:
    """Clients older than KIP-588 know INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED."""
    if err is ErrorCode.producer_fenced and version < first_with_fenced:
        return ErrorCode.invalid_producer_epoch
    return err


class TransactionCoordinatorCore:
    """The requests; the state is the store's (``txn.store``), ending transactions the
    completion part's (``txn.completion``)."""

    def __init__(
        self,
        config: TxnConfig,
        timers: Timers | None = None,
        *,
        allocate_producer_id: Callable[[], int],
        markers: MarkerWriter,
        group_partition_for: Callable[[str], int] | None = None,
    ) -> None:
        """``allocate_producer_id``: a new producer id (storage owns them; may raise).
        ``markers``: writes COMMIT/ABORT markers (``txn.markers``). ``group_partition_for``:
        the ``__consumer_offsets`` partition of a group, as the group coordinator maps it."""
        store = self.store = TxnStore(config, timers, allocate_producer_id=allocate_producer_id,
                                      markers=markers, group_partition_for=group_partition_for)
        self.completion = TxnCompletion(store)
        self.config = config
        self.timers = store.timers
        self.partitions = store.partitions
        self.markers = markers
        self.group_partition_for = store.group_partition_for
        # What the runtime and tools call, as the parts serve it.
        self.partition_for = store.partition_for
        self.transaction = store.transaction
        self.snapshot = store.snapshot
        self.begin_load = store.begin_load
        self.replay_all = store.replay_all
        self.replay_transactional = store.replay_transactional
        self.replay = store.replay
        self.unload = store.unload
        self.finish_load = self.completion.finish_load
        self.timer_handlers = self.completion.timer_handlers

    # --- InitProducerId ------------------------------------------------------------------

    def init_producer_id(
        self,
        now: int,
        waiter: Any,
        *,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        version: int = 5,
    ) -> Outcome:
        """Response: InitProducerIdResult. ``producer_id``/``producer_epoch``: KIP-360's
        expected id and epoch of a producer recovering its epoch (v3+), -1 otherwise."""
        call = Call(waiter)

        def answer(err: ErrorCode, pid: int = NO_PRODUCER_ID,
                   epoch: int = NO_PRODUCER_EPOCH) -> Outcome:
            if err is not NO_ERROR:
                return call.answer(InitProducerIdResult(_fenced_for(version, 4, err)))
            return call.answer(InitProducerIdResult(NO_ERROR, pid, epoch))

        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
            return call.finish(answer(ErrorCode.invalid_request))
        expected = None if producer_id == NO_PRODUCER_ID else (producer_id, producer_epoch)
        if transactional_id is None:
            # An idempotent producer: a fresh id at epoch 0, whatever it asked for.
            pid = self.store.new_producer_id()
            return call.finish(answer(NO_ERROR, pid, 0) if pid is not None
                               else answer(ErrorCode.unknown_server_error))
        return call.finish(self._init(now, transactional_id, transaction_timeout_ms, expected,
                                      answer))

    def _init(self, now: int, tid: str, timeout_ms: int, expected: tuple[int, int] | None,
              answer: Callable[..., Outcome]) -> Outcome:
        if not tid:
            return answer(ErrorCode.invalid_request)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return answer(ErrorCode.invalid_transaction_timeout)
        err, ps = self.store.lookup(tid)
        if ps is None:
            return answer(err)
        meta = ps.txns.get(tid)
        if meta is None:
            pid = self.store.new_producer_id()
            if pid is None:
                return answer(ErrorCode.unknown_server_error)
            # Cached before its first record is written, as Kafka does.
            meta = ps.txns[tid] = TxnMetadata(tid, pid, timeout_ms=timeout_ms,
                                              last_update_ts=now)
        if meta.pending is not None:
            return answer(ErrorCode.concurrent_transactions)
        if expected is not None and not self._expected_valid(meta, *expected):
            return answer(ErrorCode.producer_fenced)
        state = meta.state
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return answer(ErrorCode.concurrent_transactions)
        if state is S.ONGOING:
            # Abort the ongoing transaction under a bumped epoch; the client retries and
            # then gets an epoch of its own (bumped once more).
            fence = meta.prepare_fence_epoch()
            log.info("txn.fencing", transactional_id=tid, producer_id=meta.producer_id,
                     epoch=meta.producer_epoch, fenced_epoch=fence.producer_epoch)

            def fenced(err: ErrorCode, _pid: int, _epoch: int, _t: int) -> Outcome:
                return answer(ErrorCode.concurrent_transactions if err is NO_ERROR else err)

            # The abort runs at the transaction's own client version, as Kafka's
            # coordinator does: a transaction begun without KIP-890's completion bump
            # (AddPartitionsToTxn from the client) is not bumped again by its fence.
            return self.completion.end_transaction(
                now, tid, fence.producer_id, fence.producer_epoch, False, False,
                meta.client_tv, fenced)
        if state not in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            raise IllegalTxnState(f"found {tid} in state {state.label}")
        if is_epoch_exhausted(meta.producer_epoch) and (
                expected is None or expected[1] == meta.producer_epoch):
            new_pid = self.store.new_producer_id()
            if new_pid is None:
                return answer(ErrorCode.unknown_server_error)
            transit = meta.prepare_producer_id_rotation(new_pid, timeout_ms, now,
                                                        expected is not None)
        else:
            try:
                bumped = meta.prepare_increment_epoch(
                    timeout_ms, None if expected is None else expected[1], now)
            except IllegalTxnState as e:
                log.error("txn.init_failed", transactional_id=tid, error=str(e))
                return answer(ErrorCode.unknown_server_error)
            if bumped is None:
                log.info("txn.epoch_fenced", transactional_id=tid, expected=expected,
                         epoch=meta.producer_epoch, last_epoch=meta.last_producer_epoch)
                return answer(ErrorCode.producer_fenced)
            transit = bumped

        def done(err: ErrorCode, _t: int) -> Outcome:
            if err is not NO_ERROR:
                return answer(err)
            log.info("txn.initialized", transactional_id=tid, producer_id=transit.producer_id,
                     epoch=transit.producer_epoch, partition=ps.partition)
            return answer(NO_ERROR, transit.producer_id, transit.producer_epoch)

        return self.store.write(ps, meta, transit, done)

    @staticmethod
    def _expected_valid(meta: TxnMetadata, pid: int, epoch: int) -> bool:
        """KIP-360: the expected producer may continue when the metadata is new, names the
        current id, or names the previous id at an exhausted epoch (a lost rotation)."""
        return (meta.producer_epoch == NO_PRODUCER_EPOCH or pid == meta.producer_id
                or (pid == meta.prev_producer_id and is_epoch_exhausted(epoch)))

    # --- AddPartitionsToTxn, AddOffsetsToTxn ----------------------------------------------

    def add_partitions(self, now: int, waiter: Any, *, transactional_id: str, producer_id: int,
                       producer_epoch: int, partitions: Iterable[TopicPartition],
                       version: int = 3) -> Outcome:
        """AddPartitionsToTxn v0-3 (one transaction). Response: AddPartitionsResult with the
        one error for every partition."""
        call = Call(waiter)
        parts = tuple(partitions)

        def answer(err: ErrorCode, _t: int) -> Outcome:
            err = _fenced_for(version, 2, err)
            return call.answer(AddPartitionsResult(transactional_id, dict.fromkeys(parts, err)))

        return call.finish(self._add(now, transactional_id, producer_id, producer_epoch,
                                     frozenset(parts), 0, answer))

    def add_partitions_batch(self, now: int, waiter: Any,
                             transactions: Sequence[TxnPartitionsRequest],
                             version: int = 5) -> Outcome:
        """AddPartitionsToTxn v4+ (from brokers): several transactions, each added or only
        verified. Response: list[AddPartitionsResult] in request order, once all are done."""
        call = Call(waiter)
        results: list[AddPartitionsResult | None] = [None] * len(transactions)
        out = Outcome()

        def collect(i: int, res: AddPartitionsResult) -> Outcome:
            results[i] = res
            if any(r is None for r in results):
                return Outcome()
            return call.answer([r for r in results if r is not None])

        if not transactions:
            return call.finish(call.answer([]))
        for i, txn in enumerate(transactions):
            if txn.verify_only:
                out.add(collect(i, self.verify_partitions(
                    txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.partitions)))
                continue

            def answer(err: ErrorCode, _t: int, i: int = i,
                       txn: TxnPartitionsRequest = txn) -> Outcome:
                return collect(i, AddPartitionsResult(
                    txn.transactional_id,
                    dict.fromkeys(txn.partitions, _fenced_for(version, 2, err))))

            client_tv = 2 if version > 3 else 0
            out.add(self._add(now, txn.transactional_id, txn.producer_id, txn.producer_epoch,
                              frozenset(txn.partitions), client_tv, answer))
        return call.finish(out)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> AddPartitionsResult:
        """Kafka's handleVerifyPartitionsInTransaction (KIP-890 part 1): is each partition in
        the producer's ongoing transaction? Reads state only."""
        parts = tuple(partitions)

        def every(err: ErrorCode) -> AddPartitionsResult:
            return AddPartitionsResult(transactional_id, dict.fromkeys(parts, err))

        if not transactional_id:
            return every(ErrorCode.invalid_request)
        err, ps = self.store.lookup(transactional_id)
        if ps is None:
            return every(err)
        meta = ps.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return every(ErrorCode.invalid_producer_id_mapping)
        if meta.producer_epoch != producer_epoch:
            return every(ErrorCode.producer_fenced)
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return every(ErrorCode.concurrent_transactions)
        return AddPartitionsResult(transactional_id, {
            tp: NO_ERROR if tp in meta.partitions else ErrorCode.transaction_abortable
            for tp in parts})

    def add_offsets(self, now: int, waiter: Any, *, transactional_id: str, producer_id: int,
                    producer_epoch: int, group_id: str, version: int = 3) -> Outcome:
        """AddOffsetsToTxn: adds the group's ``__consumer_offsets`` partition. Response:
        ErrorCode."""
        call = Call(waiter)
        tp = (OFFSETS_TOPIC, self.group_partition_for(group_id))

        def answer(err: ErrorCode, _t: int) -> Outcome:
            return call.answer(_fenced_for(version, 2, err))

        return call.finish(self._add(now, transactional_id, producer_id, producer_epoch,
                                     frozenset({tp}), 0, answer))

    def _add(self, now: int, tid: str, pid: int, epoch: int, parts: frozenset[TopicPartition],
             client_tv: int, answer: Answer) -> Outcome:
        if not tid:
            return answer(ErrorCode.invalid_request, now)
        err, ps = self.store.lookup(tid)
        if ps is None:
            return answer(err, now)
        meta = ps.txns.get(tid)
        if meta is None:
            return answer(ErrorCode.invalid_producer_id_mapping, now)
        # Pending first: with an epoch overflow the producer may already use the new id.
        if meta.pending is not None:
            return answer(ErrorCode.concurrent_transactions, now)
        if meta.producer_id != pid:
            return answer(ErrorCode.invalid_producer_id_mapping, now)
        if meta.producer_epoch != epoch:
            return answer(ErrorCode.producer_fenced, now)
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return answer(ErrorCode.concurrent_transactions, now)
        if meta.state is S.ONGOING and parts <= meta.partitions:
            return answer(NO_ERROR, now)  # nothing new: no record
        transit = meta.prepare_add_partitions(parts, now, client_tv)
        return self.store.write(ps, meta, transit, answer)

    # --- EndTxn --------------------------------------------------------------------------

    def end_txn(self, now: int, waiter: Any, *, transactional_id: str, producer_id: int,
                producer_epoch: int, committed: bool, version: int = 4) -> Outcome:
        """Response: EndTxnResult (v5 carries the producer id and epoch to use next)."""
        call = Call(waiter)

        def answer(err: ErrorCode, pid: int, epoch: int, _t: int) -> Outcome:
            return call.answer(EndTxnResult(_fenced_for(version, 2, err), pid, epoch))

        client_tv = 2 if version > 4 else 0
        return call.finish(self.completion.end_transaction(now, transactional_id, producer_id,
                                                 producer_epoch, committed, True, client_tv,
                                                 answer))

    # --- DescribeTransactions, ListTransactions --------------------------------------------

    def describe_transactions(self, transactional_ids: Iterable[str]) -> Outcome:
        """Response: list[DescribedTransaction], one per id asked, in order."""
        return Outcome([self._describe(tid) for tid in transactional_ids])

    def _describe(self, tid: str) -> DescribedTransaction:
        if not tid:
            return DescribedTransaction(ErrorCode.invalid_request, tid)
        err, ps = self.store.lookup(tid)
        if ps is None:
            return DescribedTransaction(err, tid)
        meta = ps.txns.get(tid)
        if meta is None or meta.state is S.DEAD:
            return DescribedTransaction(ErrorCode.transactional_id_not_found, tid)
        shown = meta.marker_partitions if meta.marker_partitions is not None else meta.partitions
        topics: dict[str, list[int]] = {}
        for topic, p in sorted(shown):
            topics.setdefault(topic, []).append(p)
        return DescribedTransaction(NO_ERROR, tid, meta.state.label, meta.timeout_ms,
                                    meta.start_ts, meta.producer_id, meta.producer_epoch,
                                    list(topics.items()))

    def list_transactions(self, now: int, *, state_filters: Iterable[str] = (),
                          producer_id_filters: Iterable[int] = (),
                          duration_filter_ms: int = -1,
                          transactional_id_pattern: str | None = None) -> Outcome:
        """Response: ListTransactionsResult. ``duration_filter_ms`` (v1+): only transactions
        running longer than that; ``transactional_id_pattern`` (v2+): a regular expression
        the whole id must match."""
        if any(ps.loading for ps in self.partitions.values()):
            return Outcome(ListTransactionsResult(ErrorCode.coordinator_load_in_progress))
        names = list(state_filters)
        states = {STATE_BY_LABEL[n] for n in names if n in STATE_BY_LABEL}
        unknown = [n for n in names if n not in STATE_BY_LABEL]
        pids = set(producer_id_filters)
        pattern = None
        if transactional_id_pattern:
            try:
                pattern = re.compile(transactional_id_pattern)
            except re.error:
                return Outcome(ListTransactionsResult(ErrorCode.invalid_regular_expression))
        listed: list[ListedTransaction] = []
        for p in sorted(self.partitions):
            for meta in self.partitions[p].txns.values():
                if meta.state is S.DEAD:
                    continue  # being expired
                if pids and meta.producer_id not in pids:
                    continue
                if names and meta.state not in states:
                    continue
                if duration_filter_ms >= 0 and now - meta.start_ts <= duration_filter_ms:
                    continue
                if pattern is not None and pattern.fullmatch(meta.transactional_id) is None:
                    continue
                listed.append(ListedTransaction(meta.transactional_id, meta.producer_id,
                                                meta.state.label))
        return Outcome(ListTransactionsResult(NO_ERROR, unknown, listed))


__all__ = [
    "AddPartitionsResult",
    "DescribedTransaction",
    "EndTxnResult",
    "InitProducerIdResult",
    "ListTransactionsResult",
    "ListedTransaction",
    "TransactionCoordinatorCore",
    "TxnConfig",
    "TxnPartitionsRequest",
]


#: The transaction coordinator as request handlers reach it: operations run by the runtime.
Transactions = Coordinator[TransactionCoordinatorCore]
