"""Segment descriptors opened on use and closed when idle (``storage/handles.py``): a log
whose files were closed reopens them and serves appends and reads as one never closed;
one written with its files closed between writes and killed (SIGKILL) with partially
written segments recovers as an eagerly opened log does."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from kafkalite.storage import handles
from kafkalite.storage.manager import CLEAN_SHUTDOWN

from .test_lazy_open import TOPICS, batch, manager, state


def test_created_and_loaded_logs_hold_no_descriptor_until_used(tmp_path: Path) -> None:
    handles.release_all()
    mgr = manager(tmp_path / "data")
    mgr.load(TOPICS)
    try:
        for topic, n in TOPICS.items():
            for p in range(n):
                mgr.get_or_create(topic, p)
        assert handles.count() == 0
        mgr.get_or_create("t", 0).append(batch(0, pid=1))
        assert handles.count() == 1
    finally:
        mgr.close()
    assert handles.count() == 0
    # Reloaded after the stop: opening (with recovery of the active segment) keeps none.
    again = manager(tmp_path / "data")
    again.load(TOPICS, lazy=False)
    try:
        assert handles.count() == 0
        plog = again.get("t", 0)
        assert plog is not None and plog.log_end_offset == 3
        assert handles.count() == 0  # nothing read yet
        assert plog.read(0, 1 << 20)
        assert handles.count() == 1
    finally:
        again.close()


def test_closed_files_reopen_and_serve_appends_and_reads(tmp_path: Path) -> None:
    handles.release_all()
    kept, swept = manager(tmp_path / "kept"), manager(tmp_path / "swept")
    kept.load(TOPICS)
    swept.load(TOPICS)
    try:
        a, b = kept.get_or_create("t", 0), swept.get_or_create("t", 0)
        for i in range(200):  # rolls through many 4 KB segments
            assert a.append(batch(i, pid=1)) == b.append(batch(i, pid=1))
            if i % 7 == 0:
                for seg in b.segments:
                    seg.release()
            if i % 50 == 0:
                b.flush()  # an fsync through a reopened descriptor
        assert len(b.segments) > 3
        assert handles.sweep(force=True) == 0  # every open one was used since
        assert handles.sweep(force=True) > 0  # then closed, not used in between
        assert handles.count() == 0
        # Reads of closed and active segments, by offset and whole, reopen what they need.
        assert b.read(0, 1 << 30) == a.read(0, 1 << 30)
        for offset in (0, 100, 301, 597):
            assert b.read(offset, 1000) == a.read(offset, 1000)
        assert list(b.iter_batches(150)) == list(a.iter_batches(150))
        handles.release_all()
        assert b.append(batch(200, pid=1)) == a.append(batch(200, pid=1))
        b.flush()
        assert state(b) == state(a)
    finally:
        kept.close()
        swept.close()
    # Both reload to the same log.
    kept, swept = manager(tmp_path / "kept"), manager(tmp_path / "swept")
    kept.load(TOPICS, lazy=False)
    swept.load(TOPICS, lazy=False)
    try:
        a2, b2 = kept.get("t", 0), swept.get("t", 0)
        assert a2 is not None and b2 is not None
        assert state(b2) == state(a2)
    finally:
        kept.close()
        swept.close()


#: As test_lazy_open's writer, with every descriptor closed every few batches.
WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from kafkalite.storage import handles
    from tests.storage.test_lazy_open import TOPICS, batch, manager
    mgr = manager(Path(sys.argv[1]))
    mgr.load(TOPICS)
    for i in range(20_000):
        for topic, n in TOPICS.items():
            for p in range(n):
                mgr.get_or_create(topic, p).append(batch(i, pid=1 + p))
        if i % 5 == 0:
            handles.release_all()
        if i == 300:
            print("ready", flush=True)
""")


def test_log_written_with_files_closed_recovers_as_eagerly_opened_after_sigkill(
        tmp_path: Path) -> None:
    data = tmp_path / "crashed"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(data)], cwd=root,
                            stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(root)})
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip() == b"ready":
                break
        else:
            raise AssertionError("the writer stopped early")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert not (data / CLEAN_SHUTDOWN).exists()
    for name in ("t-1", "u-0"):  # a torn tail: half a batch after the last whole one
        active = max((data / name).glob("*.log"))
        with open(active, "ab") as f:
            f.write(batch(999_999, pid=9)[:40])
    eager_dir, lazy_dir = tmp_path / "eager", tmp_path / "lazy"
    shutil.copytree(data, eager_dir)
    shutil.copytree(data, lazy_dir)
    eager = manager(eager_dir)
    eager.load(TOPICS, lazy=False)
    lazy = manager(lazy_dir)
    lazy.load(TOPICS)
    try:
        for topic, n in TOPICS.items():
            for p in range(n):
                want, got = eager.get(topic, p), lazy.get(topic, p)
                assert want is not None and got is not None
                handles.release_all()
                assert want.log_end_offset > 300 * 3
                assert state(got) == state(want)
                if f"{topic}-{p}" in ("t-1", "u-0"):
                    active = got.segments[-1].log_path.name
                    torn = (data / f"{topic}-{p}" / active).stat().st_size
                    assert got.segments[-1].size < torn
                # And both go on alike from there.
                handles.release_all()
                nxt = got.txn.producers.producers[1 + p].last_seq // 3 + 1
                assert got.append(batch(nxt, pid=1 + p)) == want.append(batch(nxt, pid=1 + p))
                assert state(got) == state(want)
    finally:
        eager.close()
        lazy.close()
