"""Medians per side of ``benchmarks/before_after.sh`` runs: one Markdown table, the
rounds of every directory given pooled; "within 5 %" marks an after figure no more than
5 % worse than before (lower for rates, higher for times and CPU).

``python benchmarks/before_after_table.py OUT [OUT2 ...]``
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

#: figure -> (value, higher is better)
Figures = dict[str, tuple[float, bool]]


def _num(s: str) -> float:
    return float(s.replace(",", ""))


def figures(d: Path, side: str, rnd: str) -> Figures:
    f: Figures = {}
    t = (d / f"offsets-{side}-{rnd}.txt").read_text()
    for m in re.finditer(r"^kafkalite\s+(\d+)\s+([\d,]+)\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+"
                         r"([\d,]+)\s+([\d.]+)", t, re.M):
        p = m.group(1)
        f[f"{p}-partition commits one at a time, /s"] = (_num(m.group(2)), True)
        f[f"{p}-partition commits, 64 in flight, /s"] = (_num(m.group(4)), True)
        f[f"{p}-partition commit, broker CPU µs per offset, one at a time"] = (
            _num(m.group(3)), False)
        f[f"{p}-partition commit, broker CPU µs per offset, 64 in flight"] = (
            _num(m.group(5)), False)
    last = [line for line in t.splitlines() if line.startswith("kafkalite")][-1].split()
    f["OffsetFetch one at a time, /s"] = (_num(last[1]), True)
    f["OffsetFetch, 64 in flight, /s"] = (_num(last[3]), True)
    f["ApiVersions one at a time (the floor), /s"] = (_num(last[4]), True)
    t = (d / f"groups-{side}-{rnd}.txt").read_text()
    for m in re.finditer(r"^N=(\d+)\s+kafkalite\s+([\d.]+)", t, re.M):
        f[f"{m.group(1)} consumers to stable, s"] = (_num(m.group(2)), False)
    hb = re.search(r"^kafkalite\s+([\d,]+)\s+([\d.]+)\s+[\d,]+\s+[\d.]+\s+[\d.]+\s+0:", t, re.M)
    if hb:
        f["pipelined heartbeats, /s"] = (_num(hb.group(1)), True)
        f["broker CPU per heartbeat, µs"] = (_num(hb.group(2)), False)
    t = (d / f"pc-{side}-{rnd}.txt").read_text()
    for m in re.finditer(r"^(produce|consume) (\d+) B\s+kafkalite\s+[\d,]+\s+([\d,]+)\s+[\d.]+"
                         r"\s+([\d.]+)", t, re.M):
        f[f"{m.group(1)} {m.group(2)} B, msgs/s"] = (_num(m.group(3)), True)
        f[f"{m.group(1)} {m.group(2)} B, broker CPU s/GB"] = (_num(m.group(4)), False)
    lat = re.search(r"^kafkalite\s+[\d,]+\s+([\d.]+)", t.split("end-to-end")[-1], re.M)
    if lat:
        f["end-to-end latency p50, ms"] = (_num(lat.group(1)), False)
    return f


def main() -> None:
    per: dict[str, dict[str, list[float]]] = {"base": {}, "main": {}}
    higher: dict[str, bool] = {}
    rounds = 0
    for arg in sys.argv[1:]:
        d = Path(arg)
        for rnd in sorted({p.stem.rsplit("-", 1)[1] for p in d.glob("offsets-base-*.txt")}):
            rounds += 1
            for side, into in per.items():
                for k, (v, hi) in figures(d, side, rnd).items():
                    into.setdefault(k, []).append(v)
                    higher[k] = hi
    print(f"| figure | before, median of {rounds} | after, median of {rounds} "
          "| after / before | within 5 % |")
    print("| --- | --- | --- | --- | --- |")
    for k, values in per["base"].items():
        b, a = statistics.median(values), statistics.median(per["main"][k])
        ratio = a / b
        worse = ratio < 0.95 if higher[k] else ratio > 1.05
        shown = f"{b:,.0f} | {a:,.0f}" if b >= 100 else f"{b:.3g} | {a:.3g}"
        print(f"| {k} | {shown} | {ratio:.3f} | {'**no**' if worse else 'yes'} |")


if __name__ == "__main__":
    main()
