"""The share coordinator's core (Kafka's ``ShareCoordinatorShard``): share-partition state
in ``__share_group_state``, served by the coordinator runtime like the group and
transaction cores.

It holds the replayed state (``state_store.ShareStateStore``) of the partitions of
``__share_group_state`` it owns and turns a share-partition's new state into the record
to append (a snapshot or an update); the runtime appends it, replays it here and only then
runs the continuation that answers the request depending on it. Nothing here reads a
clock or a file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafkalite.protocol import share_state_records as ss
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import SHARE_STATE_TOPIC

from ..results import AFTER_WRITE, Outcome, Write
from ..state_topics import RecordCodec, SkipRecord, TimerHandler, TxnRecord
from .partition import PersistedBatch, RecordState
from .state_store import ShareKey, ShareState, ShareStateStore, coordinator_key, state_partition


@dataclass(slots=True)
class StatePartition:
    partition: int
    loaded: bool = False


class ShareStateCore:
    def __init__(self, num_partitions: int, updates_per_snapshot: int = 500) -> None:
        self.num_partitions = num_partitions
        self.store = ShareStateStore(updates_per_snapshot)
        self._partitions: dict[int, StatePartition] = {}

    @property
    def partitions(self) -> Mapping[int, object]:
        return self._partitions

    def partition_for(self, key: ShareKey) -> int:
        group, topic_id, partition = key
        return state_partition(coordinator_key(group, topic_id, partition),
                               self.num_partitions)

    def status(self, key: ShareKey) -> ErrorCode:
        """NONE when the key's state partition is loaded (its state can be read)."""
        ps = self._partitions.get(self.partition_for(key))
        if ps is None:
            return ErrorCode.not_coordinator
        return NO_ERROR if ps.loaded else ErrorCode.coordinator_load_in_progress

    def read(self, key: ShareKey) -> ShareState | None:
        return self.store.read(key)

    # --- writes ------------------------------------------------------------------------

    def persist(self, key: ShareKey, start_offset: int, batches: Iterable[PersistedBatch],
                now: int, then: Callable[[ErrorCode, int], Outcome] | None = None
                ) -> Outcome:
        """Write a share-partition's state from ``start_offset`` (its batches from there);
        ``then`` answers once the record is in the log and replayed. A share-partition
        never written gets a snapshot; later writes are updates, a snapshot every
        ``updates_per_snapshot`` of them."""
        state = [ss.StateBatch(b.first_offset, b.last_offset, int(b.state), b.delivery_count)
                 for b in batches]
        records = self.store.write(key, 0, start_offset, state, now)
        return Outcome(AFTER_WRITE if then is not None else None, writes=[Write(
            self.partition_for(key), key[0], list(records), then, topic=SHARE_STATE_TOPIC)])

    def delete(self, key: ShareKey, then: Callable[[ErrorCode, int], Outcome] | None = None
               ) -> Outcome:
        return Outcome(AFTER_WRITE if then is not None else None, writes=[Write(
            self.partition_for(key), key[0], list(self.store.delete(key)), then,
            topic=SHARE_STATE_TOPIC)])

    # --- the runtime's side ------------------------------------------------------------

    def begin_load(self, partition: int) -> StatePartition:
        self.unload(partition)
        ps = self._partitions[partition] = StatePartition(partition)
        return ps

    def replay_all(self, partition: int,
                   records: Sequence[tuple[ss.ShareStateKey, ss.ShareStateValue | None]]
                   ) -> None:
        for key, value in records:
            self.store.replay(key, value)

    def replay_transactional(self, partition: int, producer_id: int, producer_epoch: int,
                             records: Sequence[TxnRecord]) -> None:
        """Kafka writes no transactional batches to ``__share_group_state``."""

    def finish_load(self, partition: int, now: int) -> Outcome | None:
        ps = self._partitions.get(partition)
        if ps is not None:
            ps.loaded = True
        return None

    def unload(self, partition: int) -> Outcome | None:
        if self._partitions.pop(partition, None) is None:
            return None
        for key in [k for k in self.store.states if self.partition_for(k) == partition]:
            del self.store.states[key]
        return None

    def timer_handlers(self) -> Mapping[str, TimerHandler]:
        return {}


def restored_batches(state: ShareState) -> list[PersistedBatch]:
    """A persisted state's batches as ``SharePartition.restore`` takes them."""
    return [PersistedBatch(b.first_offset, b.last_offset, RecordState(b.delivery_state),
                           b.delivery_count) for b in state.batches]


def _decode(key: bytes, value: bytes | None) -> tuple[ss.ShareStateKey, ss.ShareStateValue | None]:
    try:
        k = ss.decode_key(key)
    except Exception as e:
        raise SkipRecord(str(e)) from e
    return k, None if value is None else ss.decode_value(k, value)


def _encode_value(value: ss.ShareStateValue | None) -> bytes | None:
    return None if value is None else ss.encode_value(value)


SHARE_STATE_CODEC = RecordCodec(ss.encode_key, _encode_value, _decode)
