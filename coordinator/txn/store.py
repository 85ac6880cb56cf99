"""The transaction coordinator core's state and write path: the ``__transaction_state``
partitions it owns, lookups, the records it writes, their replay, and its timers.

As in Kafka's TransactionStateManager, a transition is computed first and marked pending
on the transactional id's metadata (so a concurrent request gets CONCURRENT_TRANSACTIONS),
then written; ``replay`` of the written record completes it, for live writes and loading
alike. State changed before the append, as Kafka does: the pending transit itself; a new
transactional id's metadata (Empty, epoch -1) cached by InitProducerId before its first
record; and the fenced epoch of an aborting PrepareEpochFence (kept in memory when its
record fails, so the old producer stays fenced). Partitions that got their marker are
tracked in memory while a transaction completes, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from kafkalite.protocol.consumer_offsets import group_partition
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.features import TRANSACTION_VERSION
from kafkalite.protocol.names import TRANSACTION_STATE_TOPIC
from kafkalite.protocol.transaction_log import TransactionLogKey, TransactionLogValue, txn_partition
from kafkalite.timekeeping.timers import Timers

from ..results import Outcome, Write
from ..state_topics import TxnRecord
from .markers import MarkerWriter
from .state import EXPIRATION_ALLOWED, IllegalTxnState, TxnMetadata, TxnState, TxnTransit

log = structlog.get_logger("kafkalite.coordinator.transactions")

S = TxnState

#: Timer keys are (kind, transactional id), built by ``txn_timer``; the core's
#: ``timer_handlers`` table gives each kind its handler.
TIMEOUT_TIMER = "txn-timeout"  # an Ongoing transaction passes its transaction.timeout.ms
EXPIRE_TIMER = "txn-expire"  # an idle id passes transactional.id.expiration.ms
MARKERS_TIMER = "txn-markers"  # retry markers that failed with a retriable error
COMPLETE_TIMER = "txn-complete"  # retry the CompleteCommit/CompleteAbort record
TXN_TIMER_KINDS = (TIMEOUT_TIMER, EXPIRE_TIMER, MARKERS_TIMER, COMPLETE_TIMER)


def txn_timer(kind: str, transactional_id: str) -> tuple[str, str]:
    """The timer key of one of a transactional id's deadlines (``kind``: one of the above)."""
    return (kind, transactional_id)

Done = Callable[[ErrorCode, int], Outcome]


@dataclass(slots=True)
class TxnConfig:
    #: transaction.state.log.num.partitions
    num_partitions: int = 50
    #: transaction.max.timeout.ms
    max_timeout_ms: int = 900_000
    #: transactional.id.expiration.ms
    transactional_id_expiration_ms: int = 604_800_000
    #: The cluster's finalized ``transaction.version`` feature level (``protocol.features``;
    #: Kafka 4.x: 2): picks the record version (1 from level 1) and how the coordinator's
    #: own aborts bump epochs.
    transaction_version: int = TRANSACTION_VERSION.level
    #: offsets.topic.num.partitions, for AddOffsetsToTxn's group partition when the core
    #: is given no ``group_partition_for``.
    offsets_partitions: int = 8
    #: Pause before a marker or a completion record that failed is tried again.
    retry_backoff_ms: int = 100
    #: transaction.abort.timed.out.transaction.cleanup.interval.ms: retry of a timeout
    #: abort whose record failed.
    abort_retry_interval_ms: int = 10_000
    #: transaction.remove.expired.transaction.cleanup.interval.ms: retry of a failed expiry.
    expire_retry_interval_ms: int = 3_600_000


@dataclass(slots=True)
class TxnPartition:
    """One ``__transaction_state`` partition this coordinator owns."""

    partition: int
    #: The partition's leader epoch; written into every marker (fences older coordinators).
    coordinator_epoch: int = 0
    loading: bool = True
    txns: dict[str, TxnMetadata] = field(default_factory=dict)


class Call:
    """Answers one request: at once (the Outcome's response) or later (a reply to its
    waiter), whichever way its continuation runs."""

    __slots__ = ("_parked", "_result", "waiter")

    def __init__(self, waiter: Any) -> None:
        self.waiter = waiter
        self._result: Any = None
        self._parked = False

    def answer(self, result: Any) -> Outcome:
        if self._parked:
            return Outcome(replies=[(self.waiter, result)])
        self._result = result
        return Outcome()

    def finish(self, out: Outcome) -> Outcome:
        """Called once the method has returned its outcome: later answers become replies."""
        self._parked = True
        if self._result is not None:
            out.response = self._result
        return out


class TxnStore:
    """The transaction coordinator's state: its partitions, their transactional ids, the
    records that change them and the timers that follow them (a part the core and its
    other parts receive)."""

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
        self.config = config
        self.timers = timers if timers is not None else Timers()
        self.partitions: dict[int, TxnPartition] = {}
        self.markers = markers
        self._allocate = allocate_producer_id
        self._partition_of: dict[str, int] = {}
        self.group_partition_for = group_partition_for or (
            lambda group_id: group_partition(group_id, config.offsets_partitions))

    # --- lookup ----------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        p = self._partition_of.get(transactional_id)
        if p is None:
            p = txn_partition(transactional_id, self.config.num_partitions)
            self._partition_of[transactional_id] = p
        return p

    def transaction(self, transactional_id: str) -> TxnMetadata | None:
        ps = self.partitions.get(self.partition_for(transactional_id))
        return None if ps is None else ps.txns.get(transactional_id)

    def lookup(self, transactional_id: str) -> tuple[ErrorCode, TxnPartition | None]:
        """Kafka's getTransactionState checks: ownership, then loading."""
        ps = self.partitions.get(self.partition_for(transactional_id))
        if ps is None:
            return ErrorCode.not_coordinator, None
        if ps.loading:
            return ErrorCode.coordinator_load_in_progress, None
        return NO_ERROR, ps

    def new_producer_id(self) -> int | None:
        try:
            return self._allocate()
        except Exception as e:
            log.error("txn.producer_id_failed", error=repr(e))
            return None

    @property
    def value_version(self) -> int:
        return 1 if self.config.transaction_version >= 1 else 0

    def snapshot(self) -> dict[str, tuple[object, ...]]:
        """The persisted fields of every transactional id (what a reload restores)."""
        return {tid: m.persisted() for ps in self.partitions.values() for tid, m in ps.txns.items()}

    # --- the write path ----------------------------------------------------------------

    def write(self, ps: TxnPartition, meta: TxnMetadata, transit: TxnTransit, done: Done,
               retry_on: frozenset[ErrorCode] = frozenset()) -> Outcome:
        """Write the pending ``transit`` (Dead: a tombstone); ``done(err, now)`` runs after the
        append and its replay. On an error the pending transit is dropped, unless the error
        is in ``retry_on`` (the caller will write it again), as appendTransactionToLog does."""
        tid = meta.transactional_id
        value: TransactionLogValue | None = (
            None if transit.state is S.DEAD else transit.to_value(self.value_version))

        def then(err: ErrorCode, t: int) -> Outcome:
            current = self.partitions.get(ps.partition) is ps
            if err is NO_ERROR:
                if not current:
                    return done(ErrorCode.not_coordinator, t)
                if meta.pending is transit and ps.txns.get(tid) is meta:
                    raise IllegalTxnState(f"{tid}: record appended but not replayed")
                return done(err, t)
            log.info("txn.append_failed", transactional_id=tid, state=transit.state.label,
                     error=err.name)
            if current and ps.txns.get(tid) is meta:
                if err not in retry_on and meta.pending is transit:
                    meta.pending = None
                self.sync_timers(meta)
            return done(err, t)

        rec = (TransactionLogKey(tid), value)
        return Outcome(writes=[Write(ps.partition, tid, [rec], then, TRANSACTION_STATE_TOPIC)])

    # --- replay and loading ------------------------------------------------------------

    def begin_load(self, partition: int, coordinator_epoch: int = 0) -> TxnPartition:
        self.unload(partition)
        ps = self.partitions[partition] = TxnPartition(partition, coordinator_epoch)
        return ps

    def replay_all(self, partition: int,
                   records: Sequence[tuple[TransactionLogKey, TransactionLogValue | None]]
                   ) -> None:
        for key, value in records:
            self.replay(partition, key, value)

    def replay_transactional(self, partition: int, producer_id: int, producer_epoch: int,
                             records: Sequence[TxnRecord]) -> None:
        """``__transaction_state`` holds no transactional batches (Kafka writes none there):
        such records are not the coordinator's and are ignored."""
        log.warning("txn.transactional_records_ignored", partition=partition,
                    producer_id=producer_id, records=len(records))

    def replay(self, partition: int, key: TransactionLogKey,
               value: TransactionLogValue | None) -> None:
        """Apply one ``__transaction_state`` record: the only way persisted state changes."""
        ps = self.partitions.get(partition)
        if ps is None:
            return
        tid = key.transactional_id
        if value is None:
            if ps.txns.pop(tid, None) is not None:
                self.cancel_timers(tid)
            return
        meta = ps.txns.get(tid)
        pending = meta.pending if meta is not None else None
        if not ps.loading and meta is not None and pending is not None \
                and pending.written_as(value):
            meta.complete_transition(pending)
        else:
            meta = ps.txns[tid] = TxnMetadata.from_record(tid, value)
        if not ps.loading:
            self.sync_timers(meta)

    def unload(self, partition: int) -> None:
        ps = self.partitions.pop(partition, None)
        if ps is None:
            return
        for tid in ps.txns:
            self.cancel_timers(tid)
        if ps.txns:
            log.info("txn.partition_unloaded", partition=partition, transactions=len(ps.txns))

    # --- timers ------------------------------------------------------------------------

    def sync_timers(self, meta: TxnMetadata) -> None:
        """Deadlines follow the state: Kafka's timedOutTransactions (start + timeout < now)
        and shouldExpire (last update <= now - transactional.id.expiration.ms)."""
        tid = meta.transactional_id
        if meta.state is S.ONGOING:
            self.timers.schedule(txn_timer(TIMEOUT_TIMER, tid), meta.start_ts + meta.timeout_ms + 1)
        else:
            self.timers.cancel(txn_timer(TIMEOUT_TIMER, tid))
        if meta.state in EXPIRATION_ALLOWED:
            self.timers.schedule(txn_timer(EXPIRE_TIMER, tid),
                                 meta.last_update_ts + self.config.transactional_id_expiration_ms)
        else:
            self.timers.cancel(txn_timer(EXPIRE_TIMER, tid))

    def cancel_timers(self, tid: str) -> None:
        for kind in TXN_TIMER_KINDS:
            self.timers.cancel(txn_timer(kind, tid))
