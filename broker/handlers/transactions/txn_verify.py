"""KIP-890 on the write path: before a transactional write opens a transaction on a
partition (a Produce batch, or TxnOffsetCommit's records in ``__consumer_offsets``), the
broker asks the transaction coordinator whether that partition is in the producer's
ongoing transaction (part 1, ``transaction.partition.verification.enable``), or, for a
client of transaction version 2 (Produce v12+, TxnOffsetCommit v5), adds it to the
transaction itself (part 2). Kafka sends AddPartitionsToTxn to the coordinator for that;
here the core answers in place, through the runtime, before the append.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkalite.coordinator.results import PARKED
from kafkalite.protocol.errors import ErrorCode

from ...config.properties import Config

if TYPE_CHECKING:
    from kafkalite.coordinator.txn.state import TopicPartition
    from kafkalite.coordinator.txn.transactions import AddPartitionsResult, Transactions


class TxnVerification:
    def __init__(self, txn: Transactions, config: Config) -> None:
        self.txn = txn
        self.config = config

    @property
    def enabled(self) -> bool:
        """``transaction.partition.verification.enable`` (dynamic in Kafka: read each time)."""
        return self.config.bool("transaction.partition.verification.enable")

    def check(self, transactional_id: str, producer_id: int, producer_epoch: int,
              tp: TopicPartition, add: bool) -> ErrorCode:
        """NONE when ``tp`` is (``add``: now) in the producer's ongoing transaction, else
        the coordinator's error for it."""
        if not add:
            res = self.txn.query(lambda t: t.verify_partitions(
                transactional_id, producer_id, producer_epoch, [tp]))
            return res.errors.get(tp, ErrorCode.unknown_server_error)
        # The transaction coordinator's modules load with its first use.
        from kafkalite.coordinator.txn.transactions import TxnPartitionsRequest

        from .transactions import Answer

        waiter = Answer()
        out = self.txn.write(lambda t, now: t.add_partitions_batch(
            now, waiter,
            [TxnPartitionsRequest(transactional_id, producer_id, producer_epoch, (tp,))],
            version=5))
        results: list[AddPartitionsResult] | None = (
            out if out is not PARKED else waiter.value if waiter.done else None)
        if not results:
            return ErrorCode.coordinator_not_available
        return results[0].errors.get(tp, ErrorCode.unknown_server_error)


def produce_error(err: ErrorCode, produce_version: int) -> ErrorCode:
    """A verification error as Produce answers it (``AddPartitionsToTxnManager`` and
    ``ReplicaManager``): a fenced producer's INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE
    for clients that know it (Produce v11+), INVALID_TXN_STATE before; coordinator
    troubles as NOT_ENOUGH_REPLICAS, which every client retries."""
    if err is ErrorCode.producer_fenced:
        return ErrorCode.invalid_producer_epoch
    if err is ErrorCode.transaction_abortable and produce_version <= 10:
        return ErrorCode.invalid_txn_state
    if err in (ErrorCode.concurrent_transactions, ErrorCode.network_exception,
               ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available,
               ErrorCode.not_coordinator):
        return ErrorCode.not_enough_replicas
    return err


def offset_commit_error(err: ErrorCode, version: int) -> ErrorCode:
    """A verification error as TxnOffsetCommit answers it (``CoordinatorPartitionWriter``
    and the group coordinator's ``handleOperationException``)."""
    if err is ErrorCode.producer_fenced:
        return ErrorCode.invalid_producer_epoch
    if err is ErrorCode.transaction_abortable and version < 4:
        return ErrorCode.invalid_txn_state
    if err is ErrorCode.network_exception:
        return ErrorCode.coordinator_load_in_progress
    if err in (ErrorCode.unknown_topic_or_partition, ErrorCode.not_enough_replicas,
               ErrorCode.request_timed_out):
        return ErrorCode.coordinator_not_available
    if err in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    return err
