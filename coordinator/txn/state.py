"""The transaction state machine: Kafka's TransactionState table and TransactionMetadata.

Every state lists the states it may be entered from (Kafka's ``validPreviousStates``); each
``prepare_*`` method computes the next metadata as a ``TxnTransit``, checks the transition
against the table and marks it pending; ``complete_transition`` applies a transit once
its record is in the log (called by the core's replay), after Kafka's own consistency
checks. Nothing here does I/O or reads a clock.

Kafka keeps two things outside the log, and so do we: the pending transit (the record
being written, which blocks concurrent transitions) and ``last_producer_epoch`` (KIP-360's
retry detection; records do not carry it, so after a load it is -1 as in Kafka).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from kafkalite.protocol.transaction_log import TransactionLogValue, TxnTopicPartitions

TopicPartition = tuple[str, int]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767


class TxnState(enum.IntEnum):
    """Kafka's TransactionState; the value is the id stored in TransactionStatus."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def label(self) -> str:
        """The name DescribeTransactions and ListTransactions use ("PrepareCommit", ...)."""
        return _LABELS[self]


S = TxnState
_LABELS = {
    S.EMPTY: "Empty", S.ONGOING: "Ongoing", S.PREPARE_COMMIT: "PrepareCommit",
    S.PREPARE_ABORT: "PrepareAbort", S.COMPLETE_COMMIT: "CompleteCommit",
    S.COMPLETE_ABORT: "CompleteAbort", S.DEAD: "Dead", S.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
STATE_BY_LABEL = {label: state for state, label in _LABELS.items()}

#: state -> the states it may be entered from (Kafka 4.x, transaction version 2 included:
#: PrepareAbort from Empty/CompleteCommit/CompleteAbort is an EndTxn v5 abort).
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY,
                                S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
#: States in which an idle transactional id may expire (transactional.id.expiration.ms).
EXPIRATION_ALLOWED = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


class IllegalTxnState(RuntimeError):
    """A transition Kafka treats as a bug (IllegalStateException): invalid per the table,
    a second pending transition, or a completed transit that does not fit."""


def is_epoch_exhausted(epoch: int) -> bool:
    """No epoch may reach Short.MAX_VALUE from a client, so the coordinator can always fence."""
    return epoch >= SHORT_MAX - 1


def _short(v: int) -> int:
    """Java's (short) cast."""
    v &= 0xFFFF
    return v - 0x10000 if v & 0x8000 else v


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """Kafka's TxnTransitMetadata: the metadata a record will set."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_ts: int
    last_update_ts: int
    client_tv: int

    def to_value(self, version: int = 1) -> TransactionLogValue:
        """The record Kafka's TransactionLog.valueToBytes writes for this transit."""
        if self.state is S.EMPTY and self.partitions:
            raise IllegalTxnState(f"state Empty with partitions {sorted(self.partitions)}")
        parts: tuple[TxnTopicPartitions, ...] | None = None
        if self.state is not S.EMPTY:
            by_topic: dict[str, list[int]] = {}
            for topic, p in sorted(self.partitions):
                by_topic.setdefault(topic, []).append(p)
            parts = tuple(TxnTopicPartitions(t, tuple(ps)) for t, ps in by_topic.items())
        return TransactionLogValue(
            producer_id=self.producer_id, producer_epoch=self.producer_epoch,
            transaction_timeout_ms=self.timeout_ms, transaction_status=int(self.state),
            transaction_partitions=parts, last_update_timestamp_ms=self.last_update_ts,
            start_timestamp_ms=self.start_ts, previous_producer_id=self.prev_producer_id,
            next_producer_id=self.next_producer_id, client_transaction_version=self.client_tv,
            version=version,
        )

    def written_as(self, value: TransactionLogValue) -> bool:
        """Whether ``value`` is this transit's record (the tagged fields of a v0 record
        are lost, so they are not compared)."""
        mine = self.to_value()
        return (mine.producer_id, mine.producer_epoch, mine.transaction_timeout_ms,
                mine.transaction_status, mine.last_update_timestamp_ms,
                mine.start_timestamp_ms, partitions_of(mine)) == (
            value.producer_id, value.producer_epoch, value.transaction_timeout_ms,
            value.transaction_status, value.last_update_timestamp_ms,
            value.start_timestamp_ms, partitions_of(value))


def partitions_of(value: TransactionLogValue) -> frozenset[TopicPartition]:
    """The partitions of a record (Kafka ignores them in state Empty)."""
    if value.transaction_status == S.EMPTY or value.transaction_partitions is None:
        return frozenset()
    return frozenset((tp.topic, p) for tp in value.transaction_partitions
                     for p in tp.partition_ids)


@dataclass(slots=True, eq=False)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60000
    state: TxnState = S.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ts: int = -1
    last_update_ts: int = -1
    client_tv: int = 0
    #: The transit being written (Kafka's pendingState), None when idle.
    pending: TxnTransit | None = None
    #: A fence's epoch bump failed to reach the log: do not bump again (Kafka's flag).
    has_failed_epoch_fence: bool = False
    #: In PrepareCommit/PrepareAbort while markers are written: partitions still without a
    #: marker (Kafka removes partitions from topicPartitions as markers land).
    marker_partitions: set[TopicPartition] | None = None

    @classmethod
    def from_record(cls, transactional_id: str, value: TransactionLogValue) -> TxnMetadata:
        """As Kafka's TransactionLog.readTxnRecordValue: the last epoch is not stored."""
        try:
            state = TxnState(value.transaction_status)
        except ValueError:
            raise ValueError(f"unknown transaction state id {value.transaction_status} "
                             f"for {transactional_id!r}") from None
        return cls(
            transactional_id, value.producer_id, value.previous_producer_id,
            value.next_producer_id, value.producer_epoch, NO_PRODUCER_EPOCH,
            value.transaction_timeout_ms, state, set(partitions_of(value)),
            value.start_timestamp_ms, value.last_update_timestamp_ms,
            value.client_transaction_version,
        )

    # --- prepare ----------------------------------------------------------------------

    def _transit(self, state: TxnState, **changes: object) -> TxnTransit:
        base = TxnTransit(
            self.producer_id, self.producer_id, self.next_producer_id, self.producer_epoch,
            self.last_producer_epoch, self.timeout_ms, state, frozenset(self.partitions),
            self.start_ts, self.last_update_ts, self.client_tv,
        )
        return replace(base, **changes)  # type: ignore[arg-type]

    def _prepare(self, transit: TxnTransit) -> TxnTransit:
        """Kafka's prepareTransitionTo: check the table, then mark the transit pending."""
        if self.pending is not None:
            raise IllegalTxnState(f"{self.transactional_id}: transition to "
                                  f"{transit.state.label} while {self.pending.state.label} "
                                  "is pending")
        if transit.producer_id < 0:
            raise IllegalTxnState(f"illegal new producer id {transit.producer_id}")
        if transit.state is not S.DEAD and transit.producer_epoch < 0:
            raise IllegalTxnState(f"illegal new producer epoch {transit.producer_epoch}")
        if self.state not in VALID_PREVIOUS[transit.state]:
            raise IllegalTxnState(f"{self.transactional_id}: {transit.state.label} cannot "
                                  f"follow {self.state.label}")
        self.pending = transit
        return transit

    def prepare_fence_epoch(self) -> TxnTransit:
        bumped = self.producer_epoch if (self.has_failed_epoch_fence
                                         or self.producer_epoch == SHORT_MAX) \
            else self.producer_epoch + 1
        return self._prepare(self._transit(S.PREPARE_EPOCH_FENCE, producer_epoch=bumped))

    def prepare_increment_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                now: int) -> TxnTransit | None:
        """InitProducerId on an existing id; None when the expected epoch is fenced."""
        if is_epoch_exhausted(self.producer_epoch):
            raise IllegalTxnState(f"no producer epochs left for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            # A retry of a bump whose answer was lost: hand out the same epoch again.
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            return None
        return self._prepare(self._transit(
            S.EMPTY, producer_epoch=epoch, last_producer_epoch=last, timeout_ms=timeout_ms,
            partitions=frozenset(), start_ts=-1, last_update_ts=now))

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now: int,
                                     record_last_epoch: bool) -> TxnTransit:
        if self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT):
            raise IllegalTxnState("cannot rotate producer ids while a transaction is pending")
        return self._prepare(self._transit(
            S.EMPTY, producer_id=new_producer_id, producer_epoch=0,
            last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            timeout_ms=timeout_ms, partitions=frozenset(), start_ts=-1, last_update_ts=now))

    def prepare_add_partitions(self, added: frozenset[TopicPartition], now: int,
                               client_tv: int) -> TxnTransit:
        starting = self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT)
        return self._prepare(self._transit(
            S.ONGOING, partitions=frozenset(self.partitions) | added,
            start_ts=now if starting else self.start_ts, last_update_ts=now,
            client_tv=client_tv))

    def prepare_abort_or_commit(self, state: TxnState, client_tv: int, next_producer_id: int,
                                now: int, no_partition_added: bool) -> TxnTransit:
        if client_tv >= 2:  # KIP-890: every completion bumps the epoch
            keep = self.producer_epoch == SHORT_MAX and state is S.PREPARE_ABORT
            epoch = self.producer_epoch if keep else self.producer_epoch + 1
            last = self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        return self._prepare(self._transit(
            state, producer_epoch=epoch, last_producer_epoch=last,
            start_ts=now if no_partition_added else self.start_ts,
            next_producer_id=next_producer_id, last_update_ts=now, client_tv=client_tv))

    def prepare_complete(self, now: int) -> TxnTransit:
        self.has_failed_epoch_fence = False
        state = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if self.client_tv >= 2 and self.next_producer_id != NO_PRODUCER_ID:
            pid, epoch = self.next_producer_id, 0  # the epoch overflowed: a new producer id
        else:
            pid, epoch = self.producer_id, self.producer_epoch
        return self._prepare(self._transit(
            state, producer_id=pid, producer_epoch=epoch, next_producer_id=NO_PRODUCER_ID,
            partitions=frozenset(), last_update_ts=now))

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(self._transit(S.DEAD, partitions=frozenset()))

    # --- complete ---------------------------------------------------------------------

    def complete_transition(self, t: TxnTransit) -> None:
        """Kafka's completeTransitionTo: apply the written transit after its checks."""
        if self.pending is None or self.pending.state is not t.state:
            raise IllegalTxnState(f"{self.transactional_id}: completing {t.state.label} "
                                  "without that transition pending")
        to = t.state
        ok = True
        if to is S.EMPTY:
            ok = ((self.producer_epoch == t.producer_epoch or self._valid_epoch_bump(t))
                  and not t.partitions and t.start_ts == -1)
        elif to is S.ONGOING:
            ok = (self._valid_epoch(t) and t.partitions >= self.partitions
                  and self.timeout_ms == t.timeout_ms)
        elif to in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            empty_abort = (to is S.PREPARE_ABORT and t.client_tv >= 2 and self.state in
                           (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT))
            ok = (self._valid_epoch(t) and set(t.partitions) == self.partitions
                  and self.timeout_ms == t.timeout_ms
                  and (self.start_ts == t.start_ts or empty_abort))
        elif to in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            ok = self._valid_epoch(t) and self.timeout_ms == t.timeout_ms and t.start_ts != -1
        else:  # PrepareEpochFence and Dead are never completed
            ok = False
        if not ok:
            raise IllegalTxnState(f"{self.transactional_id}: transit {t} does not fit {self}")
        self.producer_id = t.producer_id
        self.prev_producer_id = t.prev_producer_id
        self.next_producer_id = t.next_producer_id
        self.producer_epoch = t.producer_epoch
        self.last_producer_epoch = t.last_producer_epoch
        self.timeout_ms = t.timeout_ms
        self.partitions = set(t.partitions)
        self.start_ts = t.start_ts
        self.last_update_ts = t.last_update_ts
        self.client_tv = t.client_tv
        self.state = to
        self.pending = None
        self.marker_partitions = None

    def _valid_epoch(self, t: TxnTransit) -> bool:
        if t.client_tv >= 2 and t.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) \
                and t.producer_epoch == 0:
            return (t.last_producer_epoch == self.last_producer_epoch
                    and t.prev_producer_id == self.producer_id)
        if t.client_tv >= 2 and t.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return (t.last_producer_epoch == self.producer_epoch
                    and t.producer_id == self.producer_id)
        return t.producer_epoch == self.producer_epoch and t.producer_id == self.producer_id

    def _valid_epoch_bump(self, t: TxnTransit) -> bool:
        return (t.producer_epoch == _short(self.producer_epoch + 1)
                or (t.producer_epoch == 0 and t.producer_id != self.producer_id))

    def persisted(self) -> tuple[object, ...]:
        """The fields a v1 record carries (what a reload restores), for comparisons."""
        return (self.transactional_id, self.producer_id, self.prev_producer_id,
                self.next_producer_id, self.producer_epoch, self.timeout_ms, self.state,
                frozenset(self.partitions), self.start_ts, self.last_update_ts, self.client_tv)
