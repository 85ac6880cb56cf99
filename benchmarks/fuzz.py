"""Long fuzz runs: every atheris target for ``--seconds``, then the live-server fuzz.

```
python -m benchmarks.fuzz [--seconds 600] [--targets frame,header,request,records,offsets]
    [--live-frames 1000000] [--live-seconds 1800] [--live-connections 4] [--skip-live] [--seed 1]
```

Each target runs in its own process (``tests/fuzz/run.py``; libFuzzer exits the process
when done), seeded from ``tests/fuzz/corpus``; new inputs go to a temporary directory and
crash reproducers to ``tests/fuzz/crashes/<target>/`` (where the suite replays them).
The live fuzz sends mutated real-client frames over TCP to a broker child process while a
witness producer and group consumer run (``tests/fuzz/live.py``), and prints frames sent
and answered, connections refused, the broker's RSS over time, the witness's figures and
any error line of the broker's log.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.support.common import ROOT, header, table


def run_target(target: str, seconds: int) -> tuple[str, str, str, list[Path]]:
    crashes = ROOT / "tests" / "fuzz" / "crashes" / target
    before = set(crashes.glob("*")) if crashes.exists() else set()
    out = tempfile.mkdtemp(prefix=f"fuzz-{target}-")
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.run", target, "--seconds", str(seconds),
         "--out", out, "--crashes", str(crashes)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=seconds + 300,
    )
    runs = re.search(r"Done (\d+) runs in (\d+) second", proc.stderr)
    cov = re.findall(r"cov: (\d+) ft: (\d+)", proc.stderr)
    new = sorted(set(crashes.glob("*")) - before) if crashes.exists() else []
    return (runs.group(1) if runs else "-", runs.group(2) if runs else "-",
            f"{cov[-1][0]}/{cov[-1][1]}" if cov else "-", new)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=int, default=600, help="per atheris target")
    p.add_argument("--targets", default="frame,header,request,records,offsets")
    p.add_argument("--live-frames", type=int, default=1_000_000)
    p.add_argument("--live-seconds", type=float, default=1800)
    p.add_argument("--live-connections", type=int, default=4,
                   help="fuzzing connections at once (each waits for its answers)")
    p.add_argument("--skip-live", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()

    header("fuzz: atheris targets")
    rows = []
    for t in [t for t in args.targets.split(",") if t]:
        runs, secs, cov, new = run_target(t, args.seconds)
        rows.append((t, runs, secs, cov, len(new)))
        for c in new:
            print(f"   crash reproducer: {c}", flush=True)
    print(table(["target", "inputs", "seconds", "coverage edges/features", "new crashes"],
                rows), flush=True)
    if args.skip_live:
        return

    from tests.fuzz import live

    header(f"fuzz: live server, up to {args.live_frames:,} frames or {args.live_seconds:.0f} s, "
           f"{args.live_connections} connections")
    with tempfile.TemporaryDirectory(prefix="fuzz-live-") as d:
        res, errors = live.run(Path(d) / "data", args.live_frames, args.live_seconds, args.seed,
                               args.live_connections)
    print(table(["figure", "value"], [
        ("frames sent", res.frames),
        ("frames answered", res.answered),
        ("connections closed by the broker (malformed input)", res.closed_by_broker),
        ("frames cut by a stall (parked request)", res.stalled),
        ("seconds", res.seconds),
        ("frames/s", res.frames / res.seconds if res.seconds else float("nan")),
        ("broker alive at the end", str(res.broker_alive) if res.broker_alive
         else f"False (exit status {res.broker_exit})"),
        ("broker RSS MB at start / max / end",
         f"{res.rss_start:.1f} / {res.rss_max:.1f} / {res.rss_mb[-1][1]:.1f}"),
        ("witness produced / acknowledged / consumed",
         f"{res.witness_produced} / {res.witness_acked} / {res.witness_consumed}"),
        ("witness group assignments (1 = no rebalance)", res.witness_assignments),
        ("witness slowest acknowledgement ms", res.witness_max_ack_ms),
        ("witness errors", len(res.witness_errors)),
        ("error lines in the broker log", len(errors)),
    ]), flush=True)
    step = max(1, len(res.rss_mb) // 10)
    print("   RSS over time (s, MB): " + ", ".join(
        f"{t:.0f}:{r:.1f}" for t, r in res.rss_mb[::step]), flush=True)
    for e in errors[:20]:
        print("   broker error:", e[:2000], flush=True)


if __name__ == "__main__":
    main()
