"""A share-partition's in-flight records as batches (Kafka's ``InFlightBatch`` and
``InFlightState``): a run of offsets acquired together shares one state, delivery count,
member and lock until some of its offsets are treated apart from the others (acknowledged
with different types, handed out in part, released in part). Only then does the batch
keep one state per offset; it goes back to one state when its offsets agree again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum


class RecordState(IntEnum):
    """Kafka's ``RecordState`` ids (the persisted ones are 0, 2 and 4)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int = 0
    member: str | None = None
    deadline: int | None = None

    def copy(self) -> InFlight:
        return InFlight(self.state, self.delivery_count, self.member, self.deadline)

    def same(self, other: InFlight) -> bool:
        return (self.state is other.state and self.delivery_count == other.delivery_count
                and self.member == other.member and self.deadline == other.deadline)


@dataclass(slots=True)
class InFlightBatch:
    """Offsets ``first_offset``..``last_offset``: every one in ``whole``'s state while
    ``offsets`` is None, else offset ``o`` in ``offsets[o - first_offset]``."""

    first_offset: int
    last_offset: int
    whole: InFlight
    offsets: list[InFlight] | None = None

    @property
    def size(self) -> int:
        return self.last_offset - self.first_offset + 1

    def split(self) -> list[InFlight]:
        """One state per offset from now on (Kafka's ``maybeInitializeOffsetStateUpdate``)."""
        if self.offsets is None:
            w = self.whole
            self.offsets = [w.copy() for _ in range(self.size)]
        return self.offsets

    def try_join(self) -> None:
        """Back to one state when every offset has the same."""
        offsets = self.offsets
        if offsets is None:
            return
        first = offsets[0]
        if all(first.same(r) for r in offsets):
            self.whole, self.offsets = first, None

    def at(self, offset: int) -> InFlight:
        return self.whole if self.offsets is None else self.offsets[offset - self.first_offset]

    def runs(self) -> Iterator[tuple[int, int, InFlight]]:
        """(first, last, state) of each run of offsets in one state."""
        if self.offsets is None:
            yield self.first_offset, self.last_offset, self.whole
            return
        first = self.first_offset
        current = self.offsets[0]
        for i, r in enumerate(self.offsets[1:], 1):
            if not r.same(current):
                yield first, self.first_offset + i - 1, current
                first, current = self.first_offset + i, r
        yield first, self.last_offset, current

    def drop_before(self, offset: int) -> None:
        """Forget the offsets below ``offset`` (inside the batch)."""
        if offset <= self.first_offset:
            return
        if self.offsets is not None:
            del self.offsets[:offset - self.first_offset]
        self.first_offset = offset
