"""What the pure cores return: version-independent results, records to write, replies.

An ``Outcome`` is carried out by the runtime in this order: replies to parked requests,
then each write (append, replay, then its continuation with the append's outcome). Its
``response`` is the answer to the request that produced it: a value now; ``PARKED`` when a
waiter will be answered later; ``AFTER_WRITE`` when the answer is the response of the
first write's continuation (it depends on whether the append succeeded).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import OFFSETS_TOPIC


class Pending(enum.Enum):
    """An outcome's response that is not there yet."""

    #: The response will come later, as a reply to the request's waiter.
    PARKED = "PARKED"
    #: The response is the one the first write's continuation gives.
    AFTER_WRITE = "AFTER_WRITE"

    def __repr__(self) -> str:
        return self.value


PARKED: Final = Pending.PARKED
AFTER_WRITE: Final = Pending.AFTER_WRITE

#: A parked request's waiter: called once with its response.
Waiter = Callable[..., object]


@dataclass(slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    #: (member id, group instance id, metadata): only the leader gets them.
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass(slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(slots=True)
class LeaveResult:
    error: ErrorCode
    #: (member id, group instance id, error) per member asked to leave.
    members: list[tuple[str, str | None, ErrorCode]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    error: ErrorCode
    state: str = ""
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupOverview:
    """A group of any type in one line, for the admin views and ``/metrics`` (a consumer,
    share or streams group's generation is its group epoch)."""

    group_id: str
    #: "classic", "consumer", "share" or "streams".
    group_type: str
    state: str
    generation: int
    protocol_type: str | None
    protocol: str | None
    members: int
    partition: int


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    #: ListGroups v5's group type: "classic", "consumer" or "share".
    group_type: str = "classic"


@dataclass(slots=True)
class Write:
    """Records to append to a partition of an internal topic; ``then`` runs with the
    append's outcome (``NO_ERROR`` or the error mapped as Kafka maps a failed
    coordinator write) and the time.

    ``records`` are (key, value) pairs of ``topic``'s codec: ``protocol.consumer_offsets``
    Key/Value for ``__consumer_offsets``, ``protocol.transaction_log`` TransactionLogKey/
    TransactionLogValue for ``__transaction_state``; a value None is a tombstone.

    With a ``producer_id`` the batch is transactional, as Kafka's coordinator writes a
    transactional offset commit (base sequence 0, appended with the coordinator's origin:
    the producer's epoch is checked, its sequence is not)."""

    partition: int
    #: The group (or transactional id) the records belong to, for logs and errors.
    group_id: str
    records: list[tuple[Any, Any]]
    then: Callable[[ErrorCode, int], Outcome] | None = None
    topic: str = OFFSETS_TOPIC
    #: A transactional write (TxnOffsetCommit): the records go in one transactional batch
    #: of this producer id and epoch, and stay pending until its transaction's marker.
    producer_id: int = -1
    producer_epoch: int = -1
    #: ``records`` already encoded (key, value) by the core, when it made them in one pass
    #: (an offset commit); the runtime encodes them otherwise.
    encoded: list[tuple[bytes, bytes | None]] | None = None


@dataclass(slots=True)
class Outcome:
    #: The answer to the request that produced the outcome, or how it will come.
    response: object = PARKED
    #: (waiter, response) pairs for parked requests to answer now.
    replies: list[tuple[Waiter, object]] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)

    def add(self, other: Outcome) -> Outcome:
        self.replies.extend(other.replies)
        self.writes.extend(other.writes)
        return self


# --- KIP-848 consumer groups ---------------------------------------------------------------


@dataclass(slots=True)
class ConsumerHeartbeatResult:
    """A ConsumerGroupHeartbeat answer; ``assignment`` None leaves the field out."""

    error: ErrorCode = NO_ERROR
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Mapping[uuid.UUID, frozenset[int]] | None = None


@dataclass(frozen=True, slots=True)
class DescribedTopicPartitions:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DescribedConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[DescribedTopicPartitions, ...]
    target_assignment: tuple[DescribedTopicPartitions, ...]
    #: ConsumerGroupDescribe v1: 0 a classic-protocol member, 1 a consumer-protocol one.
    member_type: int
    #: Not on the wire: the member's reconciliation state and the partitions it is
    #: revoking, for the admin views.
    state: str = ""
    revoking: tuple[DescribedTopicPartitions, ...] = ()


@dataclass(frozen=True, slots=True)
class DescribedConsumerGroup:
    group_id: str
    error: ErrorCode = NO_ERROR
    message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: tuple[DescribedConsumerMember, ...] = ()


def answered_with(out: Outcome, answer: ErrorCode) -> Outcome:
    """``out`` answering ``answer`` (a test-control scenario's answer) once its first write
    is in, or that write's error; at once when it writes nothing."""
    if not out.writes:
        out.response = answer
        return out
    first = out.writes[0]
    then = first.then

    def answered(err: ErrorCode, t: int) -> Outcome:
        done = then(err, t) if then is not None else Outcome(None)
        done.response = err if err is not NO_ERROR else answer
        return done

    first.then = answered
    out.response = AFTER_WRITE
    return out
