"""Writing COMMIT/ABORT markers: the interface the transaction coordinator core calls, and
the local implementation for a single broker.

Kafka's coordinator sends WriteTxnMarkers to each partition's leader. On one broker that
is a local append, so the core calls a ``MarkerWriter`` synchronously, once per attempt,
with the partitions still waiting for their marker, and reads one error per partition:

- ``NONE``: the marker is in the partition's log (for ``__consumer_offsets``: and the group
  coordinator has completed the producer's transactional offsets, see below);
- ``UNKNOWN_TOPIC_OR_PARTITION``: the partition is gone (a deleted topic): skipped, as
  Kafka skips partitions that have no leader;
- ``NOT_LEADER_OR_FOLLOWER``, ``NOT_ENOUGH_REPLICAS``, ``NOT_ENOUGH_REPLICAS_AFTER_APPEND``,
  ``REQUEST_TIMED_OUT``, ``KAFKA_STORAGE_ERROR``: retried later (the core's
  ``("txn-markers", id)`` timer);
- ``UNSUPPORTED_FOR_MESSAGE_FORMAT``, ``UNSUPPORTED_VERSION``: skipped, as Kafka does;
- ``INVALID_PRODUCER_EPOCH``, ``TRANSACTION_COORDINATOR_FENCED`` and anything else: the
  transaction stops there (Kafka cancels its markers; the state is settled on the next
  load of the ``__transaction_state`` partition).

Transactional offsets (TxnOffsetCommit) hand-off: a transaction that called
AddOffsetsToTxn has the group's ``__consumer_offsets`` partition among its partitions. Its
marker goes to the group coordinator through ``TxnOffsetsCompletion.complete_transaction``,
which must append the same control marker to that ``__consumer_offsets`` partition (on
the group runtime's write path, so replay order is log order) and then, for that
producer id on that partition, make the pending transactional offsets the committed
ones (``commit=True``) or drop them (``commit=False``) -- what Kafka's group coordinator
does when it replays an end-transaction marker. Until then OffsetFetch with
``require_stable`` answers UNSTABLE_OFFSET_COMMIT for those partitions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import structlog

from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.storage.errors import append_error

from .state import TopicPartition

log = structlog.get_logger("kafkalite.coordinator.transactions")


#: Errors after which the marker is tried again.
RETRIABLE = frozenset({
    ErrorCode.not_leader_or_follower, ErrorCode.not_enough_replicas,
    ErrorCode.not_enough_replicas_after_append, ErrorCode.request_timed_out,
    ErrorCode.kafka_storage_error,
})
#: Errors after which the partition needs no marker any more.
SKIPPED = frozenset({
    ErrorCode.unknown_topic_or_partition, ErrorCode.unsupported_for_message_format,
    ErrorCode.unsupported_version,
})


class MarkerWriter(Protocol):
    def write_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                      commit: bool, partitions: Sequence[TopicPartition],
                      transaction_version: int = 0) -> dict[TopicPartition, ErrorCode]:
        """Append a COMMIT (``commit``) or ABORT control batch for the producer to each
        partition; one error per partition (a missing entry counts as retriable). The
        marker's ``transaction_version`` (WriteTxnMarkers v2) sets how its epoch is
        checked."""
        ...


class MarkerLog(Protocol):
    """A partition log that takes control markers (the partition-log side's API)."""

    def append_control_marker(self, producer_id: int, producer_epoch: int,
                              coordinator_epoch: int, commit: bool,
                              transaction_version: int = 0) -> object: ...


class TxnOffsetsCompletion(Protocol):
    """The group coordinator's half of a marker on a ``__consumer_offsets`` partition."""

    def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                             coordinator_epoch: int, commit: bool) -> ErrorCode: ...


class LocalMarkerWriter:
    """Markers on this broker: data partitions through their log, ``__consumer_offsets``
    partitions through the group coordinator (when one is given)."""

    def __init__(self, log_for: Callable[[str, int], MarkerLog | None],
                 offsets: TxnOffsetsCompletion | None = None) -> None:
        self._log_for = log_for
        self._offsets = offsets

    def write_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                      commit: bool, partitions: Sequence[TopicPartition],
                      transaction_version: int = 0) -> dict[TopicPartition, ErrorCode]:
        out: dict[TopicPartition, ErrorCode] = {}
        for tp in partitions:
            topic, partition = tp
            if topic == OFFSETS_TOPIC and self._offsets is not None:
                out[tp] = self._offsets.complete_transaction(
                    partition, producer_id, producer_epoch, coordinator_epoch, commit)
                continue
            target = self._log_for(topic, partition)
            if target is None:
                out[tp] = ErrorCode.unknown_topic_or_partition
                continue
            try:
                target.append_control_marker(producer_id, producer_epoch, coordinator_epoch,
                                             commit, transaction_version)
            except Exception as e:
                out[tp] = append_error(e)
                log.warning("txn.marker_failed", topic=topic, partition=partition,
                            producer_id=producer_id, error=repr(e), mapped=out[tp].name)
            else:
                out[tp] = NO_ERROR
        return out
