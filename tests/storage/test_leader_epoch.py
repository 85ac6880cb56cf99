"""Leader epochs of a partition log: Kafka's ``leader-epoch-checkpoint`` file, the cache's
rules (LeaderEpochFileCache), the epoch stamped on appended batches, and what truncation,
DeleteRecords, retention and a restart do to them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.protocol.records import NewRecord, build_batch, decode_batch
from kafkalite.storage.leader_epoch import FILENAME, LeaderEpochCache
from kafkalite.storage.log import PartitionLog
from kafkalite.storage.log_config import LogConfig


def batch(n: int = 1) -> bytes:
    return build_batch([NewRecord(None, b"v" * 20, 1_700_000_000_000) for _ in range(n)])


def open_log(tmp_path: Path, **cfg: object) -> PartitionLog:
    return PartitionLog(tmp_path / "t-0", "t", 0, LogConfig(**cfg))  # type: ignore[arg-type]


def checkpoint(tmp_path: Path) -> str:
    return (tmp_path / "t-0" / FILENAME).read_text()


def test_cache_follows_kafkas_rules(tmp_path: Path) -> None:
    c = LeaderEpochCache(tmp_path)
    assert c.end_offset_for(0, 10) == (-1, -1)  # nothing known
    assert c.assign(1, 5) and c.assign(3, 20) and c.assign(6, 40)
    assert not c.assign(6, 45)  # the same epoch later on changes nothing
    assert c.entries() == [(1, 5), (3, 20), (6, 40)]
    # The latest epoch ends at the log end; an older one where the next one began,
    # answered with the largest epoch not above the one asked for.
    assert c.end_offset_for(6, 57) == (6, 57)
    assert c.end_offset_for(3, 57) == (3, 40)
    assert c.end_offset_for(4, 57) == (3, 40)
    assert c.end_offset_for(0, 57) == (0, 5)  # older than anything kept
    assert c.end_offset_for(7, 57) == (-1, -1)  # newer than the leader's
    assert c.end_offset_for(-1, 57) == (-1, -1)
    assert [c.epoch_for_offset(o) for o in (0, 5, 19, 20, 100)] == [-1, 1, 1, 3, 6]
    # A new entry drops every entry not below it in both epoch and start offset.
    assert c.assign(4, 30)
    assert c.entries() == [(1, 5), (3, 20), (4, 30)]
    assert c.truncate_from_end(25) and c.entries() == [(1, 5), (3, 20)]
    assert not c.truncate_from_end(25)
    assert c.truncate_from_start(22) and c.entries() == [(3, 22)]
    assert not c.truncate_from_start(10)
    with pytest.raises(ValueError):
        c.assign(-1, 0)


def test_checkpoint_round_trip_and_bad_files(tmp_path: Path) -> None:
    c = LeaderEpochCache(tmp_path)
    c.assign(0, 0)
    c.assign(2, 17)
    c.save()
    assert (tmp_path / FILENAME).read_text() == "0\n2\n0 0\n2 17\n"
    again = LeaderEpochCache(tmp_path)
    assert again.load() and again.entries() == [(0, 0), (2, 17)]
    for bad in ("", "1\n1\n0 0\n", "0\n3\n0 0\n", "0\n1\nx y\n", "0\n1\n0 0 0\n"):
        (tmp_path / FILENAME).write_text(bad)
        c = LeaderEpochCache(tmp_path)
        assert not c.load() and c.entries() == []
    (tmp_path / FILENAME).unlink()
    assert not LeaderEpochCache(tmp_path).load()


def test_new_partition_starts_in_epoch_zero_and_stamps_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    assert log.leader_epoch == 0
    assert checkpoint(tmp_path) == "0\n1\n0 0\n"
    log.append(batch(3))
    assert decode_batch(log.read(0, 1 << 20))[0].partition_leader_epoch == 0
    # A leadership change: later batches carry the new epoch, which begins at the log end.
    assert log.become_leader(2)
    assert checkpoint(tmp_path) == "0\n2\n0 0\n2 3\n"
    log.append(batch(2))
    assert decode_batch(log.read(3, 1 << 20))[0].partition_leader_epoch == 2
    assert log.epochs.end_offset_for(0, log.log_end_offset) == (0, 3)
    with pytest.raises(ValueError):
        log.become_leader(1)
    log.close()
    # A restart takes the next epoch, from the log end (leadership came back, as after
    # a Kafka broker's restart).
    again = open_log(tmp_path)
    assert again.leader_epoch == 3
    assert again.epochs.entries() == [(0, 0), (2, 3), (3, 5)]
    assert checkpoint(tmp_path) == "0\n3\n0 0\n2 3\n3 5\n"


def test_epochs_rebuilt_from_batches_without_a_checkpoint(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=300)
    for epoch in (0, 0, 3, 3, 5):
        if epoch > log.leader_epoch:
            log.become_leader(epoch)
        log.append(batch(2))
    assert len(log.segments) > 2
    expected = log.epochs.entries()
    assert expected == [(0, 0), (3, 4), (5, 8)]
    log.close()
    (tmp_path / "t-0" / FILENAME).unlink()
    again = open_log(tmp_path, segment_bytes=300)
    # The first batch and the recovered active segment give what the batches hold.
    assert again.epochs.entries()[0] == (0, 0)
    assert again.epochs.entries()[-2:] == [(5, 8), (6, 10)]
    assert again.leader_epoch == 6
    assert checkpoint(tmp_path).startswith("0\n")


def test_log_start_and_truncation_move_the_epochs(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(batch(4))
    log.become_leader(1)
    log.append(batch(4))
    log.become_leader(2)
    log.append(batch(4))
    assert log.epochs.entries() == [(0, 0), (1, 4), (2, 8)]
    # DeleteRecords: the epoch holding the new log start begins there.
    log.deletion.delete_records(6)
    assert log.epochs.entries() == [(1, 6), (2, 8)]
    assert checkpoint(tmp_path) == "0\n2\n1 6\n2 8\n"
    # Truncation below the current epoch's start (the whole batch holding offset 7 goes):
    # the leader's epoch begins again at the new end.
    log.truncate_to(7)
    assert log.log_end_offset == 4
    assert log.epochs.entries() == [(2, 4)]
    assert log.leader_epoch == 2


def test_a_loaded_log_start_beyond_old_epochs_trims_them(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append(batch(4))
    log.become_leader(1)
    log.append(batch(4))
    log.close()
    again = PartitionLog(tmp_path / "t-0", "t", 0, LogConfig(), log_start_offset=5)
    assert again.epochs.entries() == [(1, 5), (2, 8)]
    assert checkpoint(tmp_path) == "0\n2\n1 5\n2 8\n"
