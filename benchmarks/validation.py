"""What append-time validation costs a produced batch (storage/validation.py).

    python -m benchmarks.validation [--batches 2000] [--records 100] [--size 100]

Appends the same client batch (RECORDS records of SIZE bytes, keyed) to a partition log
on disk under each topic setting and prints microseconds per batch and per record: the
default topic (header checks only), a compacted topic (every record's key is looked at),
a finite timestamp bound, and a topic compression.type that differs from the producer's
(the batch is decoded and re-compressed). No broker and no network: the append itself.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.support.common import header, table
from kafkalite.protocol.records import (
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    NewRecord,
    build_batch,
)
from kafkalite.storage.log import PartitionLog
from kafkalite.storage.log_config import LogConfig
from kafkalite.storage.validation import RecordRules


def measure(rules: RecordRules, batch: bytes, batches: int, time_limit: float) -> tuple[int, float]:
    with tempfile.TemporaryDirectory(prefix="kafkalite-validation-") as d:
        plog = PartitionLog(Path(d) / "t-0", "t", 0, LogConfig(rules=rules))
        done = 0
        start = time.perf_counter()
        while done < batches and time.perf_counter() - start < time_limit:
            plog.append(batch, from_client=True)
            done += 1
        elapsed = time.perf_counter() - start
        plog.close()
    return done, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--records", type=int, default=100)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--time-limit", type=float, default=20.0)
    args = parser.parse_args()
    now = int(time.time() * 1000)
    recs = [NewRecord(b"key-%06d" % i, bytes([65 + i % 26]) * args.size, now)
            for i in range(args.records)]
    plain = build_batch(recs, timestamp=now)
    zstd = build_batch(recs, timestamp=now, compression=COMPRESSION_ZSTD)
    cases = [
        ("default topic", RecordRules(), plain),
        ("compacted topic", RecordRules(compact=True), plain),
        ("compacted, zstd batch", RecordRules(compact=True), zstd),
        ("timestamp.before.max.ms=1h", RecordRules(timestamp_before_ms=3_600_000), plain),
        ("compression.type=zstd, plain batch", RecordRules(compression=COMPRESSION_ZSTD), plain),
        ("compression.type=lz4, zstd batch", RecordRules(compression=COMPRESSION_LZ4), zstd),
        ("compression.type=uncompressed, zstd batch",
         RecordRules(compression=COMPRESSION_NONE), zstd),
    ]
    header(f"Append with validation: {args.records} records x {args.size} B per batch")
    rows = []
    for label, rules, batch in cases:
        n, secs = measure(rules, batch, args.batches, args.time_limit)
        note = "" if n == args.batches else "time limit"
        rows.append([label, n, secs / n * 1e6, secs / (n * args.records) * 1e6, note])
    print(table(["topic", "batches", "µs/batch", "µs/record", ""], rows))


if __name__ == "__main__":
    main()
