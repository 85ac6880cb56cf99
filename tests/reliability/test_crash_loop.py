"""The crash loop in short form (the full 100 kills: ``python -m benchmarks.crash_loop``)."""

from __future__ import annotations

from pathlib import Path

from tests.reliability import crash_loop


def test_ten_sigkills_lose_no_acknowledged_record_and_no_commit(tmp_path: Path) -> None:
    report = crash_loop.run(tmp_path / "data", kills=10, seed=11, run_min=1.0, run_max=2.0,
                            rebalance_every=3)
    print("\n".join(report.lines()))
    assert report.kills == 10
    assert report.ok(), report.problems
    assert report.acknowledged > 0 and report.verified == report.acknowledged
    assert report.commits_acknowledged > 0
    # Rebalances completed between kills: later generations were written and reloaded.
    assert report.max_generation >= 2
    # Every restart after the group's first generation found it again.
    assert report.group_restarts > 0 and report.groups_reloaded == report.group_restarts
    assert len(report.recovery_s) == 10


def test_damaged_files_recover_to_the_last_whole_batch(tmp_path: Path) -> None:
    report = crash_loop.run(tmp_path / "data", kills=6, seed=5, corrupt=True,
                            run_min=0.2, run_max=0.8)
    print("\n".join(report.lines()))
    assert len(report.corruptions) == 6  # each kill waits for data to damage
    assert report.ok(), (report.problems, report.corruptions)
    assert report.verified == report.acknowledged > 0
    # Each damage that broke a batch was logged as a truncation at that batch's start.
    assert report.truncations_expected > 0
    assert report.truncations_matched == report.truncations_expected
