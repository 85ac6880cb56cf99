"""Share-partition state in __share_group_state (coordinator/share/state_store.py):
snapshots and updates written and replayed through the record codecs, merged as Kafka
merges them, a fresh snapshot after the configured number of updates, and a restart that
replays the topic: an acknowledged record is never delivered again, an acquired one is."""

from __future__ import annotations

import uuid

from kafkalite.coordinator.share.partition import (
    AckBatch,
    AckType,
    AcquiredRange,
    LogBatch,
    PersistedBatch,
    RecordState,
    SharePartition,
    SharePartitionConfig,
)
from kafkalite.coordinator.share.state_store import ShareStateStore, merge_batches
from kafkalite.protocol import share_state_records as ss

T = uuid.UUID(int=9)
KEY = ("g", T, 0)
AV, ACK, ARC = ss.AVAILABLE, ss.ACKNOWLEDGED, ss.ARCHIVED


class Log:
    """The topic: records appended as bytes, replayed into a store (live or on restart)."""

    def __init__(self) -> None:
        self.entries: list[tuple[bytes, bytes | None]] = []

    def append(self, store: ShareStateStore,
               records: list[tuple[ss.ShareStateKey, ss.ShareStateValue | None]]) -> None:
        for key, value in records:
            raw = (ss.encode_key(key), None if value is None else ss.encode_value(value))
            self.entries.append(raw)
            self.replay_one(store, raw)

    @staticmethod
    def replay_one(store: ShareStateStore, raw: tuple[bytes, bytes | None]) -> None:
        key = ss.decode_key(raw[0])
        store.replay(key, None if raw[1] is None else ss.decode_value(key, raw[1]))

    def restart(self, updates_per_snapshot: int) -> ShareStateStore:
        store = ShareStateStore(updates_per_snapshot)
        for raw in self.entries:
            self.replay_one(store, raw)
        return store


def b(first: int, last: int, state: int, count: int) -> ss.StateBatch:
    return ss.StateBatch(first, last, state, count)


def test_merge_newer_wins_and_start_offset_drops() -> None:
    assert merge_batches([b(0, 9, AV, 1)], [b(3, 4, ACK, 1), b(5, 5, AV, 1)], 2) == (
        b(2, 2, AV, 1), b(3, 4, ACK, 1), b(5, 9, AV, 1))
    assert merge_batches([b(0, 3, ARC, 5)], [], 4) == ()


def test_updates_then_a_snapshot() -> None:
    log = Log()
    store = ShareStateStore(updates_per_snapshot=2)
    log.append(store, store.initialize(KEY, 1, 0, now=10))
    log.append(store, store.write(KEY, 0, -1, [b(0, 4, AV, 1)], now=20))
    log.append(store, store.write(KEY, 0, 2, [b(2, 2, ACK, 1)], now=30))
    kinds = [ss.decode_key(k).record_type for k, _ in log.entries]
    assert kinds == [ss.SHARE_SNAPSHOT, ss.SHARE_UPDATE, ss.SHARE_UPDATE]
    st = store.read(KEY)
    assert st is not None
    assert (st.snapshot_epoch, st.start_offset, st.batches, st.updates) == (
        0, 2, (b(2, 2, ACK, 1), b(3, 4, AV, 1)), 2)
    # The third write is a snapshot of the merged state, at the next snapshot epoch.
    log.append(store, store.write(KEY, 0, -1, [b(3, 3, ARC, 2)], now=40))
    last = ss.decode_key(log.entries[-1][0])
    assert last.record_type == ss.SHARE_SNAPSHOT
    st = store.read(KEY)
    assert st is not None
    assert (st.snapshot_epoch, st.state_epoch, st.create_timestamp, st.write_timestamp,
            st.batches, st.updates) == (
        1, 1, 10, 40, (b(2, 2, ACK, 1), b(3, 3, ARC, 2), b(4, 4, AV, 1)), 0)
    # A restart replaying the topic finds the same state.
    assert log.restart(2).states == store.states
    # Deleting leaves nothing.
    log.append(store, store.delete(KEY))
    assert store.read(KEY) is None and log.restart(2).read(KEY) is None


def test_restart_redelivers_acquired_records_never_acknowledged_ones() -> None:
    cfg = SharePartitionConfig(lock_duration_ms=1000, delivery_count_limit=5,
                               max_record_locks=100)
    log = Log()
    store = ShareStateStore(updates_per_snapshot=3)
    sp = SharePartition(cfg, 0)
    log.append(store, store.initialize(KEY, 1, sp.start_offset, now=0))

    def persist(now: int) -> None:
        batches = [ss.StateBatch(p.first_offset, p.last_offset, int(p.state), p.delivery_count)
                   for p in sp.persisted_batches()]
        log.append(store, store.write(KEY, 0, sp.start_offset, batches, now))

    sp.acquire("m", 0, [LogBatch(0, 4), LogBatch(5, 9)], 100)
    persist(1)
    sp.acknowledge("m", 2, [AckBatch(0, 2, (AckType.ACCEPT,)), AckBatch(6, 6, (AckType.ACCEPT,)),
                            AckBatch(7, 7, (AckType.REJECT,))])
    persist(3)
    # The broker stops here: 3-5 and 8-9 acquired, not acknowledged.
    st = log.restart(3).read(KEY)
    assert st is not None and st.start_offset == 3
    back = SharePartition.restore(cfg, st.start_offset, [
        PersistedBatch(x.first_offset, x.last_offset, RecordState(x.delivery_state),
                       x.delivery_count) for x in st.batches])
    got = back.acquire("m2", 10, [LogBatch(0, 4), LogBatch(5, 9)], 100)
    assert got == [AcquiredRange(3, 5, 2), AcquiredRange(8, 9, 2)]


def test_coordinator_key_and_state_partition() -> None:
    from kafkalite.coordinator.share.state_store import coordinator_key, state_partition

    key = coordinator_key("g", uuid.UUID(int=1), 3)
    assert key == "g:AAAAAAAAAAAAAAAAAAAAAQ:3"
    # Kafka 4.4's SharePartitionKey gives this key, hashCode -92966820, partition 20 of 50.
    assert state_partition(key, 50) == 20
