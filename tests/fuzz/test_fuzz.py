"""Fuzzing in the suite: crash reproducers replayed, each atheris target for a few seconds,
and a short live-server fuzz over TCP. Longer runs: ``python -m benchmarks.fuzz``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz import live
from tests.fuzz.targets import SEEDS, TARGETS

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
REPRODUCERS = sorted((HERE / "crashes").glob("*/*.bin"))


@pytest.mark.parametrize("path", REPRODUCERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_crash_reproducer_is_refused_cleanly(path: Path) -> None:
    """Every input that once crashed a decoder now decodes or raises ProtocolError."""
    TARGETS[path.parent.name](path.read_bytes())


def test_reproducers_and_corpus_are_kept() -> None:
    assert REPRODUCERS
    for target, dirs in SEEDS.items():
        for d in dirs:
            assert list((HERE / "corpus" / d).glob("*.bin")), f"no seed corpus for {target}"


def test_corpus_requests_are_real_client_frames() -> None:
    """The request seeds decode as they are (they were recorded from real clients)."""
    from kafkalite.protocol import apis as codecs
    from kafkalite.protocol.headers import parse_request_header, peek_api

    clients = set()
    for p in (HERE / "corpus" / "request").glob("*.bin"):
        data = p.read_bytes()
        key, version, _ = peek_api(data)
        c = codecs.codec(key, version)
        c.decode_request(data, parse_request_header(data, c.request_flexible).body_offset)
        clients.add(p.name.split("-")[0])
    assert {"kafka", "aiokafka", "confluent"} <= clients


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_fuzz_target_for_a_few_seconds(target: str, tmp_path: Path) -> None:
    crashes = tmp_path / "crashes"
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.run", target, "--seconds", "3",
         "--out", str(tmp_path / "corpus"), "--crashes", str(crashes)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120,
    )
    found = sorted(crashes.glob("*"))
    assert proc.returncode == 0 and not found, (
        f"fuzz target {target} crashed; reproducer {found}:\n{proc.stderr[-3000:]}")
    assert "Done" in proc.stderr


def test_live_fuzz_over_tcp_keeps_serving_others(tmp_path: Path) -> None:
    """Mutated real-client frames over TCP: the broker stays up, logs no unhandled
    exception, keeps its memory bounded, and the witness producer and group consumer are
    served throughout (every acknowledged message consumed, no rebalance)."""
    result, errors = live.run(tmp_path / "data", frames=3000, seconds=20, seed=7, connections=2)
    assert result.broker_alive
    assert errors == []
    assert result.frames >= 500
    assert result.answered > 0 and result.closed_by_broker > 0
    assert result.rss_max < result.rss_start + 100, result.rss_mb
    assert result.witness_acked > 0 and not result.witness_errors
    assert result.witness_consumed == result.witness_acked
    assert result.witness_assignments == 1
