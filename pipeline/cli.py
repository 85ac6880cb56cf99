"""``kafkalite pipeline <job> --log-dir DIR --out DIR [--master URL]``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

JOB_CHOICES = ("rebalances", "lag", "members", "report", "all")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "pipeline", help="consumer-group analytics on Spark over a log directory"
    )
    p.add_argument("job", choices=JOB_CHOICES,
                   help="a job writing Parquet, or 'report' / 'all' (every job and the report)")
    p.add_argument("--log-dir", required=True, help="the broker's log directory (log.dirs)")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--master", default="local[*]", help="Spark master URL")
    p.add_argument("--bucket-seconds", type=float, default=60.0,
                   help="time bucket of the lag job (default 60)")
    p.add_argument("--shuffle-partitions", type=int, default=8)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from . import jobs
    from .spark import session

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log_dir = str(Path(args.log_dir).resolve())
    if not Path(log_dir).is_dir():
        print(f"no such log directory: {log_dir}", file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    # Inside a program that already runs Spark, use its session and leave it running.
    owned = SparkSession.getActiveSession() is None
    spark = session(args.master, shuffle_partitions=args.shuffle_partitions)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        names = list(jobs.JOBS) if args.job in ("report", "all") else [args.job]
        frames = {}
        for name in names:
            t0 = time.monotonic()
            kw = {"bucket_seconds": args.bucket_seconds} if name == "lag" else {}
            df = jobs.run(spark, name, log_dir, **kw)
            df.write.mode("overwrite").parquet(str(out / name))
            frames[name] = spark.read.parquet(str(out / name))
            print(f"{name}: {frames[name].count()} rows in {time.monotonic() - t0:.1f}s "
                  f"-> {out / name}")
        if args.job in ("report", "all"):
            write_report(frames, out / "report.html")
            print(f"report -> {out / 'report.html'}")
    finally:
        if owned:
            spark.stop()
    return 0


def write_report(frames: dict[str, Any], path: Path) -> None:
    from .report import render

    html = render(frames["rebalances"].toPandas(), frames["lag"].toPandas(),
                  frames["members"].toPandas())
    path.write_text(html, encoding="utf-8")
