"""``kafkalite pipeline <job> --log-dir DIR --out DIR [--master URL]`` and
``kafkalite pipeline watch (--bootstrap HOST:PORT | --log-dir DIR) --checkpoint DIR``."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

JOB_CHOICES = ("rebalances", "lag", "members", "report", "all", "watch")

#: The last line of an executor's Python traceback naming one of the source's errors.
_SOURCE_ERROR = re.compile(r"(?:LogDirError|ProtocolError|FileNotFoundError): (.+)")


def source_error(e: BaseException) -> str | None:
    """The message of the log-directory or segment error that failed a Spark job: the
    executor raised it (it names the path) and Spark wrapped it in its own exception and
    stack traces. None when the failure was something else."""
    found = _SOURCE_ERROR.findall(str(e))
    return found[-1].strip() if found else None


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "pipeline", help="consumer-group analytics on Spark over a log directory"
    )
    p.add_argument("job", choices=JOB_CHOICES,
                   help="a job writing Parquet, 'report' / 'all' (every job and the report), "
                        "or 'watch' (live lag, a streaming query)")
    p.add_argument("--log-dir",
                   help="the broker's log directory (log.dirs): a path or a file://, s3:// or "
                        "hdfs:// URI")
    p.add_argument("--out",
                   help="output directory (on a cluster, a path every executor can write); "
                        "watch without --out prints to the console")
    p.add_argument("--bootstrap", help="watch: a broker's HOST:PORT")
    p.add_argument("--checkpoint", help="watch: the streaming checkpoint directory")
    p.add_argument("--admin", metavar="URL",
                   help="watch: write the lag to a kafkalite broker's admin API "
                        "(http://HOST:PORT, shown at /api/v1/lag) instead of the console")
    p.add_argument("--trigger-seconds", type=float, default=5.0,
                   help="watch: seconds between micro-batches (default 5)")
    p.add_argument("--duration", type=float,
                   help="watch: stop after this many seconds (default: run until interrupted)")
    p.add_argument("--master", default="local[*]",
                   help="Spark master URL: local[N], spark://HOST:PORT, yarn, k8s://...")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting, as spark-submit's --conf (repeatable)")
    p.add_argument("--bucket-seconds", type=float, default=60.0,
                   help="time bucket of the lag job (default 60)")
    p.add_argument("--shuffle-partitions", type=int, default=8)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "job", None) == "watch":
        return watch(args)
    if not args.log_dir or not args.out:
        print("--log-dir and --out are needed", file=sys.stderr)
        return 2
    from . import jobs
    from .fs import LogDirError, open_log_fs
    from .segments import list_partitions
    from .spark import session

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log_dir = args.log_dir if "://" in args.log_dir else str(Path(args.log_dir).resolve())
    conf = dict(c.split("=", 1) for c in args.conf if "=" in c)
    try:
        list_partitions(open_log_fs(log_dir))  # a clear error now, not a Spark trace later
    except LogDirError as e:
        print(e, file=sys.stderr)
        return 2
    from pyspark.sql import SparkSession

    # Inside a program that already runs Spark, use its session and leave it running.
    owned = SparkSession.getActiveSession() is None
    spark = session(args.master, shuffle_partitions=args.shuffle_partitions, **conf)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        names = list(jobs.JOBS) if args.job in ("report", "all") else [args.job]
        frames = {}
        for name in names:
            t0 = time.monotonic()
            kw = {"bucket_seconds": args.bucket_seconds} if name == "lag" else {}
            try:
                df = jobs.run(spark, name, log_dir, **kw)
                df.write.mode("overwrite").parquet(str(out / name))
            except Exception as e:
                message = source_error(e)
                if message is None:
                    raise
                print(f"{name}: {message}", file=sys.stderr)
                return 1
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


def watch(args: argparse.Namespace) -> int:
    if bool(args.bootstrap) == bool(args.log_dir) or not args.checkpoint:
        print("watch needs --checkpoint and one of --bootstrap or --log-dir", file=sys.stderr)
        return 2
    if args.admin and args.out:
        print("watch writes to one place: --out or --admin, not both", file=sys.stderr)
        return 2
    from . import watch as w
    from .spark import session

    log_dir = None
    if args.log_dir:
        from .fs import LogDirError, open_log_fs
        from .segments import list_partitions

        log_dir = args.log_dir if "://" in args.log_dir else str(Path(args.log_dir).resolve())
        try:
            list_partitions(open_log_fs(log_dir))
        except LogDirError as e:
            print(e, file=sys.stderr)
            return 2
    conf = dict(c.split("=", 1) for c in args.conf if "=" in c)
    spark = session(args.master, shuffle_partitions=args.shuffle_partitions, **conf)
    spark.sparkContext.setLogLevel("ERROR")
    query = w.start(spark, bootstrap=args.bootstrap, log_dir=log_dir, out=args.out,
                    checkpoint=args.checkpoint, trigger_seconds=args.trigger_seconds,
                    admin=args.admin)
    try:
        query.awaitTermination(args.duration)
    except KeyboardInterrupt:
        pass
    finally:
        query.stop()
        spark.stop()
    return 0


def write_report(frames: dict[str, Any], path: Path) -> None:
    from .report import render

    html = render(frames["rebalances"].toPandas(), frames["lag"].toPandas(),
                  frames["members"].toPandas())
    path.write_text(html, encoding="utf-8")
