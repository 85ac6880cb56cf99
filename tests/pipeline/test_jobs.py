"""The analytics jobs over a __consumer_offsets log written in Kafka's record schemas, and
the HTML report rendered in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from kafkalite.pipeline import consumer_offsets, jobs
from kafkalite.pipeline.cli import write_report

from .conftest import T0, S

# Spark starts slowly on a busy two-core machine: the shared session's start-up counts
# against the first test.
pytestmark = pytest.mark.timeout(600)


def test_decoder_columns(spark: Any, history: Path) -> None:
    rows = consumer_offsets.read(spark, str(history)).orderBy("log_timestamp").collect()
    assert len(rows) == 12
    gm = [r for r in rows if r.record_type == "group_metadata" and r.group == "g1"]
    assert [r.generation for r in gm] == [1, 2, 3, 4, 4, 5]
    m = gm[2].members[2]
    assert (m.member_id, m.group_instance_id, m.session_timeout_ms, m.rebalance_timeout_ms) == (
        "S-1", "s-1", 10_000, 30_000)
    assert m.subscribed_topics == ["orders"]
    assert [(x.topic, x.partitions) for x in m.assigned_partitions] == [("orders", [0])]
    commit = next(r for r in rows if r.record_type == "offset_commit" and r.group == "g2")
    assert (commit.topic, commit.partition, commit.committed_offset) == ("orders", 1, 7)
    assert int(commit.commit_timestamp.timestamp() * 1000) == T0 + 3 * S


def test_jobs_and_report(spark: Any, history: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    frames = {}
    for name in jobs.JOBS:
        kw = {"bucket_seconds": 10} if name == "lag" else {}
        jobs.run(spark, name, str(history), **kw).write.parquet(str(out / name))
        frames[name] = spark.read.parquet(str(out / name))

    reb = frames["rebalances"].orderBy("group", "generation").collect()
    g1 = [r for r in reb if r.group == "g1"]
    assert [r.generation for r in g1] == [1, 2, 3, 4, 5]
    assert [r.member_count for r in g1] == [1, 2, 3, 2, 0]
    assert [r.member_ids for r in g1] == [["A-1"], ["A-1", "B-1"], ["A-1", "B-1", "S-1"],
                                          ["A-1", "S-2"], []]
    assert [r.members_added for r in g1] == [["A-1"], ["B-1"], ["s-1"], [], []]
    assert [r.members_removed for r in g1] == [[], [], [], ["B-1"], ["A-1", "s-1"]]
    assert [r.duration_s for r in g1] == [10.0, 10.0, 10.0, 20.0, 0.0]
    assert [r.is_current for r in g1] == [False] * 4 + [True]
    assert g1[0].leader == "A-1" and g1[0].protocol == "range"
    assert [(r.generation, r.member_ids) for r in reb if r.group == "g2"] == [(1, ["C-1"])]

    mem = {(r.group, r.member_id): r for r in frames["members"].collect()}
    assert set(mem) == {("g1", "A-1"), ("g1", "B-1"), ("g1", "S-1"), ("g1", "S-2"),
                        ("g2", "C-1")}
    assert mem["g1", "A-1"].generations == [1, 2, 3, 4]
    assert mem["g1", "A-1"].client_id == "app-a"
    assert mem["g1", "B-1"].generations == [2, 3]
    assert mem["g1", "S-2"].group_instance_id == "s-1"
    assert int(mem["g1", "B-1"].left_at.timestamp()) * 1000 == T0 + 30 * S
    assert mem["g2", "C-1"].left_at is None

    lag = frames["lag"].orderBy("group", "topic", "partition", "bucket_start").collect()
    p0 = [(r.committed_offset, r.log_end_offset, r.lag) for r in lag
          if r.group == "g1" and r.partition == 0]
    # 5 records a second: the log end offset at the end of bucket k is 50 * (k + 1).
    assert p0 == [(20, 50, 30), (20, 100, 80), (100, 150, 50), (100, 200, 100),
                  (200, 250, 50), (200, 300, 100)]
    g2 = [(r.partition, r.committed_offset, r.lag) for r in lag if r.group == "g2"]
    assert g2[0] == (1, 7, 43) and len(g2) == 6

    report = out / "report.html"
    write_report(frames, report)
    text = report.read_text()
    assert "<svg" in text and "Rebalance timeline: g1" in text and "http" not in text.split(
        "<svg")[0]
    _screenshot_is_not_blank(report, tmp_path)


def _screenshot_is_not_blank(page: Path, tmp: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is needed (apt-get install chromium)"
    png = tmp / "report.png"
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp / 'chromium'}", f"--screenshot={png}",
         "--window-size=1200,900", page.as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    img = Image.open(png).convert("RGB")
    assert img.size == (1200, 900)
    colours = img.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50
    # Not one flat background: a good share of the pixels is drawn.
    background = max(colours)[0]
    assert background < 0.97 * img.size[0] * img.size[1]
