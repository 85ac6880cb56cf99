"""Ending transactions: EndTxn (transaction version 0/1 and KIP-890's version 2), the
markers, the completion record, the coordinator's own aborts (InitProducerId fencing an
ongoing transaction, timeouts), the expiry of idle transactional ids, and loading.

Follows Kafka's TransactionCoordinator.endTransaction / endTransactionWithTV1,
TransactionMarkerChannelManager (markers, then CompleteCommit/CompleteAbort) and
TransactionStateManager (timed-out transactions, expired transactional ids, load).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from kafkalite.protocol.errors import NO_ERROR, ErrorCode

from ..results import Outcome
from ..state_topics import TimerHandler
from .markers import RETRIABLE, SKIPPED
from .state import (
    EXPIRATION_ALLOWED,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    IllegalTxnState,
    TxnMetadata,
    TxnState,
    TxnTransit,
)
from .store import (
    COMPLETE_TIMER,
    EXPIRE_TIMER,
    MARKERS_TIMER,
    TIMEOUT_TIMER,
    Done,
    S,
    TxnPartition,
    TxnStore,
    log,
    txn_timer,
)

#: (error, producer id, producer epoch, now) -> what to answer.
EndDone = Callable[[ErrorCode, int, int, int], Outcome]

_PREPARE = {True: S.PREPARE_COMMIT, False: S.PREPARE_ABORT}
_COMPLETE = {True: S.COMPLETE_COMMIT, False: S.COMPLETE_ABORT}


def _never(tid: str, state: TxnState) -> IllegalTxnState:
    return IllegalTxnState(f"found {tid} in state {state.label}: it never rests there")


class TxnCompletion:
    """Ending transactions, the coordinator's own aborts and expiry, over the store."""

    def __init__(self, store: TxnStore) -> None:
        self.store = store
        self.config = store.config
        self.timers = store.timers
        self.partitions = store.partitions
        self.markers = store.markers

    # --- EndTxn ------------------------------------------------------------------------

    def end_transaction(self, now: int, tid: str, pid: int, epoch: int, commit: bool,
                         from_client: bool, client_tv: int, k: EndDone) -> Outcome:
        if not tid:
            return k(ErrorCode.invalid_request, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, now)
        err, ps = self.store.lookup(tid)
        if ps is None:
            return k(err, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, now)
        meta = ps.txns.get(tid)
        if meta is None:
            return k(ErrorCode.invalid_producer_id_mapping, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, now)
        if client_tv >= 2:
            return self._end_v2(now, ps, meta, pid, epoch, commit, from_client, client_tv, k)
        return self._end_v1(now, ps, meta, pid, epoch, commit, from_client, k)

    def _end_v1(self, now: int, ps: TxnPartition, meta: TxnMetadata, pid: int, epoch: int,
                commit: bool, from_client: bool, k: EndDone) -> Outcome:
        """Kafka's endTransactionWithTV1: no epoch bump; a retry after completion is NONE."""
        pending = meta.pending
        if meta.producer_id != pid:
            res = ErrorCode.invalid_producer_id_mapping
        elif (from_client and epoch != meta.producer_epoch) or epoch < meta.producer_epoch:
            # A client may not bump the epoch; the coordinator's own abort carries the
            # fenced epoch.
            res = ErrorCode.producer_fenced
        elif pending is not None and pending.state is not S.PREPARE_EPOCH_FENCE:
            res = ErrorCode.concurrent_transactions
        elif meta.state is S.ONGOING:
            fencing = pending is not None and not commit
            if fencing:
                self._take_fenced_epoch(meta, epoch)
            transit = meta.prepare_abort_or_commit(_PREPARE[commit], 0, NO_PRODUCER_ID, now,
                                                   False)
            return self.store.write(ps, meta, transit,
                               self._after_prepare(ps, meta, pid, epoch, commit, fencing, 0, k))
        else:
            res = self._end_state_error(meta, commit, retry=True)
        return k(res, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, now)

    def _end_v2(self, now: int, ps: TxnPartition, meta: TxnMetadata, pid: int, epoch: int,
                commit: bool, from_client: bool, client_tv: int, k: EndDone) -> Outcome:
        """Kafka's endTransaction for transaction version 2 (EndTxn v5): every completion
        bumps the epoch, so a retry is told apart by its epoch (one below the current)."""
        fencing = meta.pending is not None and meta.pending.state is S.PREPARE_EPOCH_FENCE
        retry_on_overflow = (not fencing and meta.prev_producer_id == pid
                             and epoch == SHORT_MAX - 1 and meta.producer_epoch == 0)
        retry_on_bump = not fencing and meta.producer_epoch == epoch + 1
        state = meta.state
        if fencing:
            valid_epoch = ((not from_client or epoch == meta.producer_epoch)
                           and epoch >= meta.producer_epoch)
        elif state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid_epoch = retry_on_bump
        elif state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            valid_epoch = retry_on_bump or retry_on_overflow or epoch == meta.producer_epoch
        else:
            valid_epoch = epoch == meta.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow

        def prepare(state_to: TxnState, no_partition_added: bool) -> Outcome:
            next_pid = NO_PRODUCER_ID
            if not fencing and meta.producer_epoch >= SHORT_MAX - 1:
                allocated = self.store.new_producer_id()
                if allocated is None:
                    return k(ErrorCode.unknown_server_error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, now)
                next_pid = allocated
            if state_to is S.PREPARE_ABORT and fencing:
                self._take_fenced_epoch(meta, epoch)
            transit = meta.prepare_abort_or_commit(state_to, client_tv, next_pid, now,
                                                   no_partition_added)
            return self.store.write(ps, meta, transit, self._after_prepare(
                ps, meta, pid, epoch, commit, fencing, client_tv, k))

        if meta.producer_id != pid and not retry_on_overflow:
            res = ErrorCode.invalid_producer_id_mapping
        elif not valid_epoch:
            res = ErrorCode.producer_fenced
        elif meta.pending is not None and not fencing:
            res = ErrorCode.concurrent_transactions
        elif state is S.ONGOING:
            return prepare(_PREPARE[commit], False)
        elif state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            same = state is _COMPLETE[commit]
            if same and is_retry:
                return k(NO_ERROR, meta.producer_id, meta.producer_epoch, now)
            if not commit and not is_retry:
                return prepare(S.PREPARE_ABORT, True)  # an abort with nothing to abort
            res = ErrorCode.invalid_txn_state
        elif state is S.EMPTY and not commit:
            return prepare(S.PREPARE_ABORT, True)
        else:
            res = self._end_state_error(meta, commit, retry=False)
        return k(res, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, now)

    @staticmethod
    def _end_state_error(meta: TxnMetadata, commit: bool, retry: bool) -> ErrorCode:
        """The answer of an EndTxn that finds no Ongoing transaction."""
        state = meta.state
        if state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
            raise _never(meta.transactional_id, state)
        if state is _PREPARE[commit]:
            return ErrorCode.concurrent_transactions  # the same request is completing
        if retry and state is _COMPLETE[commit]:
            return NO_ERROR  # a retry of a completed EndTxn
        log.warning("txn.invalid_end", transactional_id=meta.transactional_id,
                    state=state.label, commit=commit)
        return ErrorCode.invalid_txn_state

    @staticmethod
    def _take_fenced_epoch(meta: TxnMetadata, epoch: int) -> None:
        """The fence becomes the abort: Kafka drops the PrepareEpochFence transit and moves
        the in-memory epoch to the fenced one before writing PrepareAbort."""
        meta.pending = None
        meta.producer_epoch = epoch
        meta.last_producer_epoch = NO_PRODUCER_EPOCH

    def _after_prepare(self, ps: TxnPartition, meta: TxnMetadata, pid: int, epoch: int,
                       commit: bool, fencing: bool, client_tv: int, k: EndDone) -> Done:
        tid = meta.transactional_id

        def done(err: ErrorCode, t: int) -> Outcome:
            if err is not NO_ERROR:
                if fencing and ps.txns.get(tid) is meta:
                    meta.has_failed_epoch_fence = True
                    log.warning("txn.fence_failed", transactional_id=tid,
                                epoch=meta.producer_epoch, error=err.name)
                return k(err, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, t)
            cur = ps.txns.get(tid)
            if cur is None:
                raise IllegalTxnState(f"{tid}: no metadata after its PrepareCommit/Abort")
            if cur.producer_id != pid:
                res = ErrorCode.invalid_producer_id_mapping
            elif cur.producer_epoch != epoch and not (client_tv >= 2
                                                      and cur.producer_epoch == epoch + 1):
                res = ErrorCode.producer_fenced
            elif cur.pending is not None:
                res = ErrorCode.concurrent_transactions
            elif cur.state is _PREPARE[commit]:
                transit = cur.prepare_complete(t)
                log.info("txn.prepared", transactional_id=tid, producer_id=cur.producer_id,
                         epoch=cur.producer_epoch, commit=commit,
                         partitions=len(cur.partitions))
                if client_tv >= 2:
                    out = k(NO_ERROR, transit.producer_id, transit.producer_epoch, t)
                else:
                    out = k(NO_ERROR, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, t)
                cur.marker_partitions = set(cur.partitions)
                return out.add(self._write_markers(ps, cur, t))
            elif cur.state in (S.DEAD, S.PREPARE_EPOCH_FENCE):
                raise _never(tid, cur.state)
            else:
                res = ErrorCode.invalid_txn_state
            return k(res, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, t)

        return done

    # --- markers and completion ----------------------------------------------------------

    def _write_markers(self, ps: TxnPartition, meta: TxnMetadata, now: int) -> Outcome:
        """Markers for the partitions still without one; then the completion record."""
        transit = meta.pending
        remaining = meta.marker_partitions
        if transit is None or remaining is None or \
                transit.state not in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            return Outcome()  # completed or cancelled meanwhile
        tid = meta.transactional_id
        commit = transit.state is S.COMPLETE_COMMIT
        if remaining:
            order = sorted(remaining)
            errors = self.markers.write_markers(meta.producer_id, meta.producer_epoch,
                                                ps.coordinator_epoch, commit, order)
            for tp in order:
                err = errors.get(tp, ErrorCode.request_timed_out)
                if err is NO_ERROR or err in SKIPPED:
                    remaining.discard(tp)
                    if err is not NO_ERROR:
                        log.info("txn.marker_skipped", transactional_id=tid, topic=tp[0],
                                 partition=tp[1], error=err.name)
                elif err not in RETRIABLE:
                    # Kafka cancels this transaction's markers: it stays in PrepareCommit/
                    # PrepareAbort until the partition is loaded again.
                    log.error("txn.markers_cancelled", transactional_id=tid, topic=tp[0],
                              partition=tp[1], error=err.name)
                    return Outcome()
            if remaining:
                self.timers.schedule(txn_timer(MARKERS_TIMER, tid),
                                     now + self.config.retry_backoff_ms)
                return Outcome()
        return self._write_completion(ps, meta, transit)

    def _write_completion(self, ps: TxnPartition, meta: TxnMetadata,
                          transit: TxnTransit) -> Outcome:
        tid = meta.transactional_id

        def done(err: ErrorCode, t: int) -> Outcome:
            if err is NO_ERROR:
                log.info("txn.completed", transactional_id=tid, state=transit.state.label,
                         producer_id=transit.producer_id, epoch=transit.producer_epoch)
            elif err is ErrorCode.coordinator_not_available:
                self.timers.schedule(txn_timer(COMPLETE_TIMER, tid),
                                     t + self.config.retry_backoff_ms)
            elif err not in (ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress):
                log.error("txn.complete_failed", transactional_id=tid, error=err.name)
            return Outcome()

        return self.store.write(ps, meta, transit, done,
                           retry_on=frozenset({ErrorCode.coordinator_not_available}))

    # --- load --------------------------------------------------------------------------

    def finish_load(self, partition: int, now: int) -> Outcome:
        """End loading: arm the timers and complete every transaction found prepared (its
        markers are written again: a partition that already has one gets a second, as in
        Kafka)."""
        ps = self.partitions[partition]
        ps.loading = False
        out = Outcome()
        for meta in list(ps.txns.values()):
            self.store.sync_timers(meta)
            if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                meta.prepare_complete(now)
                meta.marker_partitions = set(meta.partitions)
                out.add(self._write_markers(ps, meta, now))
        if ps.txns:
            log.info("txn.partition_loaded", partition=partition, transactions=len(ps.txns))
        return out

    # --- timers ------------------------------------------------------------------------

    def timer_handlers(self) -> dict[str, TimerHandler]:
        """Each transaction timer kind's handler (keys are (kind, transactional id))."""
        return {TIMEOUT_TIMER: self._timed(self._abort_timed_out),
                EXPIRE_TIMER: self._timed(self._expire_id),
                MARKERS_TIMER: self._timed(self._write_markers),
                COMPLETE_TIMER: self._timed(self._retry_completion)}

    def _timed(self, run: Callable[[TxnPartition, TxnMetadata, int], Outcome]
               ) -> TimerHandler:
        """A handler that runs ``run`` for the key's transaction, if it is still here."""

        def on_timer(key: tuple[Hashable, ...], _deadline: int, now: int) -> Outcome:
            tid = key[1]
            assert isinstance(tid, str)
            _err, ps = self.store.lookup(tid)
            meta = None if ps is None else ps.txns.get(tid)
            if ps is None or meta is None:
                return Outcome()
            return run(ps, meta, now)

        return on_timer

    def _retry_completion(self, ps: TxnPartition, meta: TxnMetadata, _now: int) -> Outcome:
        transit = meta.pending
        if transit is not None and meta.marker_partitions == set() \
                and transit.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            return self._write_completion(ps, meta, transit)
        return Outcome()

    def _abort_timed_out(self, ps: TxnPartition, meta: TxnMetadata, now: int) -> Outcome:
        """Kafka's abortTimedOutTransactions: fence the producer's epoch and abort."""
        if meta.state is not S.ONGOING or meta.pending is not None:
            return Outcome()  # the replay or failure of the pending record re-arms the timer
        if meta.start_ts + meta.timeout_ms >= now:
            self.store.sync_timers(meta)
            return Outcome()
        tid = meta.transactional_id
        transit = meta.prepare_fence_epoch()
        log.info("txn.timed_out", transactional_id=tid, producer_id=meta.producer_id,
                 epoch=meta.producer_epoch, fenced_epoch=transit.producer_epoch,
                 started=meta.start_ts, timeout_ms=meta.timeout_ms)

        def k(err: ErrorCode, _pid: int, _epoch: int, t: int) -> Outcome:
            if err is not NO_ERROR and err not in (ErrorCode.invalid_producer_id_mapping,
                                                   ErrorCode.producer_fenced,
                                                   ErrorCode.concurrent_transactions):
                log.warning("txn.timeout_abort_failed", transactional_id=tid, error=err.name)
                cur = ps.txns.get(tid)
                if cur is not None and cur.state is S.ONGOING:
                    self.timers.schedule(txn_timer(TIMEOUT_TIMER, tid),
                                         t + self.config.abort_retry_interval_ms)
            return Outcome()

        return self.end_transaction(now, tid, transit.producer_id, transit.producer_epoch,
                                     False, False, self.config.transaction_version, k)

    def _expire_id(self, ps: TxnPartition, meta: TxnMetadata, now: int) -> Outcome:
        """Kafka's removeExpiredTransactionalIds: a tombstone for an id idle too long."""
        expiration = self.config.transactional_id_expiration_ms
        if meta.pending is not None or meta.state not in EXPIRATION_ALLOWED:
            return Outcome()
        if meta.last_update_ts > now - expiration:
            self.store.sync_timers(meta)
            return Outcome()
        tid = meta.transactional_id
        transit = meta.prepare_dead()

        def done(err: ErrorCode, t: int) -> Outcome:
            if err is NO_ERROR:
                log.info("txn.id_expired", transactional_id=tid, producer_id=transit.producer_id,
                         last_update=meta.last_update_ts)
            elif ps.txns.get(tid) is meta:
                self.timers.schedule(txn_timer(EXPIRE_TIMER, tid),
                                     t + self.config.expire_retry_interval_ms)
            return Outcome()

        return self.store.write(ps, meta, transit, done)
