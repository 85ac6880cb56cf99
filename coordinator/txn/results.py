"""What the transaction coordinator core answers: version-independent results that the API
handlers turn into InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
DescribeTransactions and ListTransactions responses of any version."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalite.protocol.errors import ErrorCode

from .state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition


@dataclass(slots=True)
class InitProducerIdResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class TxnPartitionsRequest:
    """One transaction of an AddPartitionsToTxn request (v4+ carries several)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[TopicPartition, ...]
    #: v4+: only check that the partitions are in the transaction (KIP-890 verification).
    verify_only: bool = False


@dataclass(slots=True)
class AddPartitionsResult:
    """The outcome for one transaction: an error per partition (v0-3 answer with the one
    transaction's map; v4+ with one per transaction)."""

    transactional_id: str
    errors: dict[TopicPartition, ErrorCode] = field(default_factory=dict)


@dataclass(slots=True)
class EndTxnResult:
    error: ErrorCode
    #: EndTxn v5 (KIP-890): the producer id and epoch to use next; -1 before v5.
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(slots=True)
class DescribedTransaction:
    """One entry of DescribeTransactions; on an error, Kafka leaves the rest at the
    schema's defaults (empty state, zeros)."""

    error: ErrorCode
    transactional_id: str
    state: str = ""
    timeout_ms: int = 0
    start_time_ms: int = 0
    producer_id: int = 0
    producer_epoch: int = 0
    #: (topic, partitions), sorted; during PrepareCommit/PrepareAbort only the partitions
    #: still waiting for their marker, as Kafka reports them.
    topics: list[tuple[str, list[int]]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(slots=True)
class ListTransactionsResult:
    error: ErrorCode
    unknown_state_filters: list[str] = field(default_factory=list)
    transactions: list[ListedTransaction] = field(default_factory=list)
