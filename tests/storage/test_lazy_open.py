"""Logs opened on first use: after a SIGKILL with partially written segments a lazily
opened log recovers exactly as an eagerly opened one, a clean stop's epochs are announced
without opening, and a topic deleted before its logs were opened leaves nothing behind.
Each with the partitions at the data directory's root (one node) and placed under the
nodes' directories (``--nodes N``)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kafkalite.protocol.records import NewRecord, build_batch
from kafkalite.storage.log import PartitionLog
from kafkalite.storage.manager import CLEAN_SHUTDOWN, LogManager
from kafkalite.storage.topic_config import TOPIC_CONFIGS

DEFAULTS = {
    **{name: d.default for name, d in TOPIC_CONFIGS.items()},
    # Small segments, so each partition has closed segments and an active one.
    "segment.bytes": "4096", "segment.ms": "604800000", "retention.ms": "-1",
    "retention.bytes": "-1", "index.interval.bytes": "512", "max.message.bytes": "1048588",
    "message.timestamp.type": "CreateTime", "flush.messages": "9223372036854775807",
    "flush.ms": "9223372036854775807",
}
TOPICS = {"t": 3, "u": 2}


def where(data: Path, topic: str, partition: int) -> Path:
    """A partition's directory when placed, as ``--nodes 3`` places its leader's."""
    return data / "nodes" / str(partition % 3 + 1) / f"{topic}-{partition}"


def manager(data: Path, placed: bool = False) -> LogManager:
    mgr = LogManager(data, lambda _t, name: DEFAULTS[name])
    if placed:
        mgr.place = lambda t, p: where(data, t, p)
    return mgr


def partition_dir(data: Path, name: str, placed: bool) -> Path:
    topic, p = name.rsplit("-", 1)
    return where(data, topic, int(p)) if placed else data / name


@pytest.fixture(params=[False, True], ids=["root", "placed"])
def placed(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


#: Appends idempotent batches to every partition until killed (bounded: 20,000 batches).
WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from tests.storage.test_lazy_open import DEFAULTS, TOPICS, batch, manager
    mgr = manager(Path(sys.argv[1]), placed=sys.argv[2] == "placed")
    mgr.load(TOPICS)
    for i in range(20_000):
        for topic, n in TOPICS.items():
            for p in range(n):
                mgr.get_or_create(topic, p).append(batch(i, pid=1 + p))
        if i == 300:
            print("ready", flush=True)
""")


def batch(i: int, pid: int) -> bytes:
    recs = [NewRecord(f"k{i}-{j}".encode(), b"v" * 30, 1_700_000_000_000 + i) for j in range(3)]
    return build_batch(recs, producer_id=pid, producer_epoch=0, base_sequence=3 * i)


def state(plog: PartitionLog) -> dict[str, Any]:
    """Everything recovery decides: offsets, segments, epochs, producers, the bytes."""
    producers = {pid: (e.epoch, e.last_seq) for pid, e in plog.txn.producers.producers.items()}
    return {
        "start": plog.log_start_offset, "end": plog.log_end_offset,
        "segments": [(s.base_offset, s.size, s.next_offset) for s in plog.segments],
        "epochs": plog.epochs.entries(), "leader_epoch": plog.leader_epoch,
        "producers": producers, "bytes": plog.read(0, 1 << 30),
    }


def crashed_data_dir(tmp_path: Path, placed: bool = False) -> Path:
    data = tmp_path / "crashed"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(data),
                             "placed" if placed else "root"], cwd=root,
                            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(root)})
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # after the log lines
            if line.strip() == b"ready":
                break
        else:
            raise AssertionError("the writer stopped early")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert not (data / CLEAN_SHUTDOWN).exists()
    # The torn tail of a write the crash cut short: half a batch after the last whole one.
    for name in ("t-1", "u-0"):
        active = max(partition_dir(data, name, placed).glob("*.log"))
        with open(active, "ab") as f:
            f.write(batch(999_999, pid=9)[:40])
    return data


def test_lazily_opened_log_recovers_as_an_eagerly_opened_one_after_sigkill(
        tmp_path: Path, placed: bool) -> None:
    data = crashed_data_dir(tmp_path, placed)
    eager_dir, lazy_dir = tmp_path / "eager", tmp_path / "lazy"
    shutil.copytree(data, eager_dir)
    shutil.copytree(data, lazy_dir)

    eager = manager(eager_dir, placed)
    eager.load(TOPICS, lazy=False)
    lazy = manager(lazy_dir, placed)
    lazy.load(TOPICS)
    assert len(lazy.logs) == 0 and lazy.unopened == 5  # nothing opened at start
    try:
        for topic, n in TOPICS.items():
            for p in range(n):
                # Announced before opening, and the epoch the log leads in once opened.
                announced = lazy.leader_epoch(topic, p)
                want = eager.get(topic, p)
                got = lazy.get(topic, p)
                assert want is not None and got is not None
                assert announced == got.leader_epoch
                assert want.log_end_offset > 300 * 3
                assert state(got) == state(want)
                # Recovery cut the torn tail off both alike.
                active = got.segments[-1].log_path.name
                assert got.segments[-1].size == (got.dir / active).stat().st_size
                if f"{topic}-{p}" in ("t-1", "u-0"):
                    torn = (partition_dir(data, f"{topic}-{p}", placed) / active).stat().st_size
                    assert got.segments[-1].size < torn
        assert lazy.unopened == 0
    finally:
        eager.close()
        lazy.close()


def test_clean_stop_announces_epochs_without_opening(tmp_path: Path, placed: bool) -> None:
    data = tmp_path / "data"
    first = manager(data, placed)
    first.load(TOPICS)
    for i in range(5):
        first.get_or_create("t", 0).append(batch(i, pid=1))
    epochs = {(t, p): first.get_or_create(t, p).leader_epoch
              for t, n in TOPICS.items() for p in range(n)}
    first.close()
    assert (data / CLEAN_SHUTDOWN).exists()

    second = manager(data, placed)
    second.load(TOPICS)
    assert not (data / CLEAN_SHUTDOWN).exists()  # a crash from here on reads checkpoints
    assert len(second.logs) == 0
    # A restart leads each partition in its next epoch, as an eager open does.
    assert {k: second.leader_epoch(*k) for k in epochs} == {k: e + 1 for k, e in epochs.items()}
    # Only "u" opened; the others' epochs must survive the next clean stop unopened.
    opened = second.get("u", 1)
    assert opened is not None and opened.leader_epoch == epochs[("u", 1)] + 1
    second.close()

    third = manager(data, placed)
    third.load(TOPICS)
    assert third.leader_epoch("t", 0) == epochs[("t", 0)] + 2
    plog = third.get("t", 0)
    assert plog is not None and plog.log_end_offset == 15
    assert plog.leader_epoch == epochs[("t", 0)] + 2
    third.close()


def test_topic_deleted_before_its_logs_were_opened(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = manager(data)
    first.load(TOPICS)
    first.get_or_create("u", 0).append(batch(0, pid=1))
    first.close()

    second = manager(data)
    second.load(TOPICS)
    second.delete_topic("u")
    assert not (data / "u-0").exists() and not (data / "u-1").exists()
    assert second.get("u", 0) is None
    second.close()
    assert "u " not in (data / CLEAN_SHUTDOWN).read_text()
