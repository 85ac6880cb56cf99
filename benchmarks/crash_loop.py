"""The crash loop in full: ``python -m benchmarks.crash_loop [--kills 100] [--corrupt]``.

A ``--durable`` broker under an idempotent producer (acks=-1), a committing group
consumer and group churn is SIGKILLed ``--kills`` times at random moments and restarted;
after every restart each acknowledged record must be at its acknowledged offset, no value
twice, committed offsets and group generations never lower (see
``tests/reliability/crash_loop.py``). ``--corrupt`` damages a segment, index, time index
or producer snapshot file at a random byte before each restart, and checks that recovery
logged each truncation at the batch the damage broke. Prints kills, records acknowledged
and verified, recovery times (a restart slower than 30 s fails the run); exits 1 on any
loss or regression.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.support.common import header
from tests.reliability import crash_loop


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--kills", type=int, default=100)
    p.add_argument("--corrupt", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--run-min", type=float, default=1.0, help="seconds of work before a kill")
    p.add_argument("--run-max", type=float, default=2.5)
    p.add_argument("--rebalance-every", type=int, default=5,
                   help="every Nth kill waits for a completed rebalance first (0: never)")
    args = p.parse_args()
    header(f"crash loop: {args.kills} SIGKILLs{' with damaged files' if args.corrupt else ''}")
    t0 = time.monotonic()

    def progress(n: int, r: crash_loop.Report) -> None:
        if n % 10 == 0:
            print(f"   {n} kills, {time.monotonic() - t0:.0f} s, problems so far: "
                  f"{len(r.problems)}", flush=True)

    with tempfile.TemporaryDirectory(prefix="crash-loop-") as d:
        report = crash_loop.run(Path(d) / "data", args.kills, args.seed, args.corrupt,
                                args.run_min, args.run_max, progress, args.rebalance_every)
    for line in report.lines():
        print("   " + line, flush=True)
    print(f"   wall time {time.monotonic() - t0:.0f} s", flush=True)
    sys.exit(0 if report.ok() else 1)


if __name__ == "__main__":
    main()
