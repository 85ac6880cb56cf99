"""Pipeline benchmark: the kafkalite Spark data source against a single-process Python read,
and the run time of each analytics job, over a generated log directory.

    python benchmarks/pipeline_bench.py [--records 10000000] [--master local[2]] [--dir DIR]

The log (100-byte values, uncompressed batches of ``--batch`` records, ``--partitions``
partitions, 256 MiB segments) is written directly as batches, plus a topic of a fifth as
many 50-150-byte values and a ``__consumer_offsets`` log with groups rebalancing and
committing over the same hour. Prints one line per figure: records/s and MB/s of each
decoder beside the rate of reading the same files from the page cache, which bounds them.
The Spark source is timed twice each (the first run includes the JVM's warm-up), with
every column and with a schema that asks for the value alone.
"""

from __future__ import annotations

import argparse
import mmap
import os
import random
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kafkalite.pipeline import jobs, segments
from kafkalite.pipeline.logwriter import PartitionWriter
from kafkalite.pipeline.synthetic import Member, OffsetsLogWriter
from kafkalite.protocol.records import (
    BASE_TIMESTAMP_POS,
    NewRecord,
    build_batch,
    iter_records,
    set_crc,
)

T0 = 1_700_000_000_000
SPAN_MS = 3_600_000  # the records' timestamps cover one hour


def write_topic(root: Path, records: int, partitions: int, batch: int,
                topic: str = "bench", sizes: tuple[int, int] = (100, 100)) -> None:
    rng = random.Random(7)
    values = [os.urandom(rng.randint(*sizes)) for _ in range(batch)]
    template = bytearray(build_batch([NewRecord(None, v) for v in values], timestamp=T0))
    per_part = records // partitions
    writers = [PartitionWriter(root, topic, p, segment_bytes=256 << 20)
               for p in range(partitions)]
    n_batches = per_part // batch
    for i in range(n_batches):
        ts = T0 + SPAN_MS * i // max(n_batches, 1)
        struct.pack_into(">qq", template, BASE_TIMESTAMP_POS, ts, ts)  # and maxTimestamp
        set_crc(template)
        for w in writers:
            w.append_batch(bytes(template))
    for w in writers:
        w.close()


def write_groups(root: Path, records: int, partitions: int, groups: int = 3) -> None:
    """Each group rebalances every 5 minutes (members come and go) and commits every 10 s."""
    o = OffsetsLogWriter(root, partitions=4)
    per_part = records // partitions
    for g in range(groups):
        name = f"bench-group-{g}"
        gen = 0
        for sec in range(0, SPAN_MS // 1000, 10):
            ts = T0 + sec * 1000
            if sec % 300 == 0:
                gen += 1
                n = 1 + gen % 3
                ms = [Member(f"m{g}-{gen}-{i}", ["bench"],
                             {"bench": list(range(i, partitions, n))}) for i in range(n)]
                o.group(ts, name, gen, ms)
            done = per_part * sec * 1000 // SPAN_MS
            for p in range(partitions):
                o.commit(ts, name, "bench", p, max(done - 20_000 * (g + 1), 0))
    o.close()


def segment_bytes(root: Path, topic: str = "bench") -> int:
    return sum(f.stat().st_size for f in root.glob(f"{topic}-*/*.log"))


def raw_read(root: Path, topic: str = "bench") -> int:
    """The same segment files read in 16 MiB blocks and thrown away: the decoder's limit."""
    n = 0
    for f in sorted(root.glob(f"{topic}-*/*.log")):
        with open(f, "rb", buffering=0) as fh:
            while block := fh.read(16 << 20):
                n += len(block)
    return n


def python_read(root: Path) -> int:
    """The existing pure-Python decoder (protocol.records), one process, record by record."""
    n = 0
    for pdir in segments.list_partitions(root, ["bench"]):
        for seg in segments.list_segments(pdir):
            with open(seg.path, "rb") as f, mmap.mmap(f.fileno(), 0,
                                                      access=mmap.ACCESS_READ) as mm:
                for _h, _r in iter_records(mm):
                    n += 1
    return n


def arrow_read(root: Path, topic: str = "bench") -> int:
    """The data source's own Arrow decoder (pipeline.decode), one process, no Spark."""
    n = 0
    for pdir in segments.list_partitions(root, [topic]):
        for seg in segments.list_segments(pdir):
            for b in segments.read_segment(seg):
                n += b.num_rows
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--dir", help="log directory to (re)use; default a temporary one")
    ap.add_argument("--skip-python", action="store_true", help="skip the pure-Python read")
    ap.add_argument("--skip-jobs", action="store_true", help="skip the analytics jobs")
    a = ap.parse_args()

    tmp = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="kafkalite-bench-"))
    root = tmp / "logs"
    try:
        if not (root / "bench-0").exists():
            t = time.monotonic()
            write_topic(root, a.records, a.partitions, a.batch)
            write_groups(root, a.records, a.partitions)
            size = sum(f.stat().st_size for f in root.rglob("*.log"))
            print(f"generate: {a.records} records, {size / 1e6:.0f} MB in "
                  f"{time.monotonic() - t:.1f}s")
        if not (root / "varied-0").exists():
            write_topic(root, a.records // 5, a.partitions, a.batch, "varied", (50, 150))
        total = a.records // a.partitions // a.batch * a.batch * a.partitions
        size = segment_bytes(root)

        raw_read(root)  # warm the page cache: every figure reads cached bytes
        t = time.monotonic()
        nbytes = raw_read(root)
        dt = time.monotonic() - t
        print(f"raw file read, 16 MiB blocks (the limit): {nbytes / dt / 1e6:,.0f} MB/s "
              f"({nbytes / 1e6:.0f} MB in {dt:.2f}s)")

        t = time.monotonic()
        n = arrow_read(root)
        dt = time.monotonic() - t
        assert n == total, (n, total)
        print(f"single-process Arrow decoder (pipeline.decode), 100 B records: "
              f"{n / dt:,.0f} records/s, {size / dt / 1e6:,.0f} MB/s ({dt:.1f}s)")
        t = time.monotonic()
        n = arrow_read(root, "varied")
        dt = time.monotonic() - t
        print(f"single-process Arrow decoder, 50-150 B records (sizes vary): "
              f"{n / dt:,.0f} records/s, {segment_bytes(root, 'varied') / dt / 1e6:,.0f} MB/s "
              f"({dt:.1f}s)")
        if not a.skip_python:
            # The record-by-record decoder of protocol.records, for comparison.
            t = time.monotonic()
            n = python_read(root)
            dt = time.monotonic() - t
            assert n == total, (n, total)
            print(f"single-process Python read (protocol.records.iter_records): "
                  f"{n / dt:,.0f} records/s ({dt:.1f}s)")

        from pyspark.sql import functions as F

        from kafkalite.pipeline.spark import session

        t = time.monotonic()
        spark = session(a.master, shuffle_partitions=4)
        spark.sparkContext.setLogLevel("ERROR")
        print(f"spark start ({a.master}): {time.monotonic() - t:.1f}s")
        for label, schema in (("every column", None), ("schema 'value binary'", "value binary")):
            r = spark.read.format("kafkalite")
            if schema:
                r = r.schema(schema)
            df = r.option("path", str(root)).option("topics", "bench").load()
            if schema is None:
                print(f"input partitions (segments): {df.rdd.getNumPartitions()}")
            for attempt in ("first", "second"):
                t = time.monotonic()
                row = df.agg(F.count("*").alias("n"),
                             F.sum(F.length("value")).alias("bytes")).first()
                dt = time.monotonic() - t
                assert row is not None and row["n"] == total, (row, total)
                print(f"spark data source ({a.master}, {label}, {attempt} run): "
                      f"{row['n'] / dt:,.0f} records/s, {size / dt / 1e6:,.0f} MB/s "
                      f"({dt:.1f}s)", flush=True)

        for name in [] if a.skip_jobs else jobs.JOBS:
            t = time.monotonic()
            kw = {"bucket_seconds": 60.0} if name == "lag" else {}
            out = tmp / "out" / name
            jobs.run(spark, name, str(root), **kw).write.mode("overwrite").parquet(str(out))
            rows = spark.read.parquet(str(out)).count()
            print(f"job {name}: {time.monotonic() - t:.1f}s ({rows} rows)")
        spark.stop()
    finally:
        if not a.dir:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
