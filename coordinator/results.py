"""What the pure core returns: version-independent results, records to write, replies."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkalite.protocol.consumer_offsets import Key, Value
from kafkalite.protocol.errors import ErrorCode


class _Parked:
    def __repr__(self) -> str:
        return "PARKED"


#: The response will come later, as a reply to the request's waiter.
PARKED: Any = _Parked()


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


@dataclass(slots=True)
class Write:
    """Records to append to a group's partition; ``then`` runs with the append's outcome
    (``ErrorCode.none`` or the error mapped as Kafka maps a failed group store)."""

    partition: int
    group_id: str
    records: list[tuple[Key, Value | None]]
    then: Callable[[ErrorCode, int], Outcome] | None = None


@dataclass(slots=True)
class Outcome:
    response: Any = PARKED
    #: (waiter, response) pairs for parked requests to answer now.
    replies: list[tuple[Any, Any]] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)

    def add(self, other: Outcome) -> Outcome:
        self.replies.extend(other.replies)
        self.writes.extend(other.writes)
        return self

