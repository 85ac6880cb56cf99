"""The internal topics a coordinator core keeps its state in, and how the runtime reads and
writes their records: ``__consumer_offsets`` for groups and offsets, and
``__transaction_state`` for transactions.

A ``StateTopic`` names the topic, its partition count, the core that owns it (anything
with the ``StateCore`` shape) and the codec of its records. The runtime appends encoded
records to the topic's partition logs and hands the typed records back to the core's
``replay_all``; at start-up it decodes the log with the same codec and replays it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kafkalite.protocol import consumer_offsets as co

from .results import Outcome

#: (key, deadline, now) -> what to carry out: a core's handler of one timer kind.
TimerHandler = Callable[[tuple[Hashable, ...], int, int], Outcome]


class StateCore(Protocol):
    """A pure coordinator core over the partitions of one internal topic."""

    @property
    def partitions(self) -> Mapping[int, object]:
        """The partitions this core holds (loaded or loading)."""
        ...

    def begin_load(self, partition: int) -> object: ...

    def replay_all(self, partition: int, records: Sequence[tuple[Any, Any]]) -> None: ...

    def replay_transactional(self, partition: int, producer_id: int, producer_epoch: int,
                             records: Sequence[TxnRecord]) -> None:
        """Records of a transactional batch: pending until the producer's marker (a live
        write, or a transaction still open when the partition was loaded)."""
        ...

    def finish_load(self, partition: int, now: int) -> Outcome | None: ...

    def unload(self, partition: int) -> Outcome | None:
        """Give up a partition; the outcome answers what was parked on it."""
        ...

    def timer_handlers(self) -> Mapping[str, TimerHandler]:
        """The handler of each timer kind this core schedules (a key's first element)."""
        ...


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """A record of a transaction not decided yet, as ``replay_transactional`` gets it."""

    key: Any
    value: Any
    #: Its offset in the partition's log.
    offset: int
    #: A record of the same key was committed after it (see ``state_load``): its
    #: transaction's COMMIT marker leaves the committed one in place.
    superseded: bool = False


class SkipRecord(Exception):
    """A record of a type this broker does not read (a newer group type): skipped on load."""


@dataclass(frozen=True, slots=True)
class RecordCodec:
    encode_key: Callable[[Any], bytes]
    encode_value: Callable[[Any], bytes | None]
    #: (key bytes, value bytes) -> (key, value); raises ``SkipRecord`` or ProtocolError.
    decode: Callable[[bytes, bytes | None], tuple[Any, Any]]


@dataclass(slots=True)
class StateTopic:
    name: str
    num_partitions: int
    core: StateCore
    codec: RecordCodec
    #: Creates the topic in the catalogue before its first write (and FindCoordinator).
    ensure: Callable[[], None]
    #: Set once ``ensure`` has run: internal topics are never deleted, so every later
    #: write skips the catalogue lookup.
    ensured: bool = False


def _decode_offsets(key: bytes, value: bytes | None) -> tuple[Any, Any]:
    try:
        k = co.decode_key(key, consumer_groups=True)
    except co.UnknownRecordType as e:
        raise SkipRecord(str(e)) from e
    return k, co.decode_value(k, value)


OFFSETS_CODEC = RecordCodec(co.encode_key, co.encode_value, _decode_offsets)
