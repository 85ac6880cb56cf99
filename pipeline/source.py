"""The ``kafkalite`` Spark data source (Python Data Source API, Spark 4).

``spark.read.format("kafkalite").option("path", log_dir)`` reads every record of the
chosen topics with the columns of Spark's own Kafka source; one Spark input partition per
segment file, rows produced as Arrow record batches. ``option("mode", "batches")`` reads
only the batch headers (one row per record batch), which is all that log-end-offset
timelines need. ``spark.readStream.format("kafkalite")`` follows a live directory, its
offsets being each partition's next log offset.

Options: ``path`` (required: a local path or a ``file://``, ``s3://`` or ``hdfs://`` URI,
see :mod:`.fs`), ``topics`` (comma-separated) or ``topicPattern`` (regex,
full match), ``mode`` (``records`` or ``batches``), ``startingOffsets`` for streams
(``earliest`` or ``latest``), ``rowsPerBatch``, ``verifyCrc`` and ``isolationLevel``
(``read_uncommitted``, the default, or ``read_committed``; Spark's Kafka source spelling
``kafka.isolation.level`` works too). Under read_committed, records mode leaves out the
records of aborted transactions and stops each partition at its last stable offset (a
stream's offsets follow it), as a read_committed consumer does; see :mod:`.transactions`.
Transaction markers are never rows in records mode; batches mode lists every batch.

Spark prunes no columns of a Python data source: every column the reader returns crosses
from the Python worker to the JVM and becomes part of each row there, which costs more
than decoding it. A schema given to the reader (``spark.read.format("kafkalite")
.schema("offset long, value binary")``) names the columns to decode and return, any
subset of the source's in any order, each with the source's type.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)

from . import segments as sg
from .fs import LogFs, fs_options, open_log_fs
from .transactions import Aborted, TxnView, aborted_filter, transaction_view


class SegmentPartition(InputPartition):  # type: ignore[misc]
    """One segment file and the offset range to read from it (with, under read_committed,
    the aborted transactions that have batches in it)."""

    def __init__(self, seg: sg.SegmentFile, start: int = 0, end: int | None = None,
                 aborted: tuple[Aborted, ...] = ()) -> None:
        super().__init__((seg.path, start, end))
        self.seg = seg
        self.start = start
        self.end = end
        self.aborted = aborted


ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


def _parse_options(given: dict[str, str]) -> dict[str, Any]:
    # Spark hands options over case-insensitively (often lower-cased).
    options = {k.lower(): v for k, v in given.items()}
    path = options.get("path")
    if not path:
        raise ValueError("the kafkalite source needs option path=<log directory>")
    topics = options.get("topics") or options.get("subscribe")
    pattern = options.get("topicpattern") or options.get("subscribepattern")
    mode = options.get("mode", "records")
    if mode not in ("records", "batches"):
        raise ValueError(f"mode must be 'records' or 'batches', not {mode!r}")
    isolation = (options.get("isolationlevel") or options.get("kafka.isolation.level")
                 or "read_uncommitted").lower()
    if isolation not in ISOLATION_LEVELS:
        raise ValueError(f"isolationLevel must be 'read_uncommitted' or 'read_committed', "
                         f"not {isolation!r}")
    return {
        "path": path,
        "topics": [t.strip() for t in topics.split(",") if t.strip()] if topics else None,
        "pattern": pattern,
        "mode": mode,
        "rows": int(options.get("rowsperbatch", sg.DEFAULT_ROWS_PER_BATCH)),
        "crc": options.get("verifycrc", "true").lower() != "false",
        "starting": options.get("startingoffsets", "earliest"),
        "committed": isolation == "read_committed" and mode == "records",
        "fs": {k: v for k, v in options.items() if k.startswith("s3.")},
    }


def _columns(schema: Any, full: pa.Schema) -> list[str] | None:
    """The columns a schema given to the reader asks for (None: all of them, in order)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    wanted = to_arrow_schema(schema, timezone="UTC")
    if wanted.names == full.names:
        return None
    for f in wanted:
        if f.name not in full.names:
            raise ValueError(f"the kafkalite source has no column {f.name!r} "
                             f"(its columns: {', '.join(full.names)})")
        if not f.type.equals(full.field(f.name).type):
            raise ValueError(f"column {f.name!r} of the kafkalite source is "
                             f"{full.field(f.name).type}, not {f.type}")
    return list(wanted.names)


def _read(opts: dict[str, Any], part: SegmentPartition) -> Iterator[pa.RecordBatch]:
    columns = opts.get("columns")
    if opts["mode"] == "batches":
        batch = sg.read_batch_headers(part.seg, part.start, part.end)
        if batch.num_rows:
            yield batch if columns is None else batch.select(columns)
        return
    yield from sg.read_segment(part.seg, part.start, part.end, opts["rows"], opts["crc"],
                               aborted_filter(part.aborted) if part.aborted else None,
                               columns)


def _committed_parts(segs: list[sg.SegmentFile], view: TxnView, lo: int = 0,
                     hi: int | None = None) -> list[SegmentPartition]:
    """Input partitions for one partition's segments under read_committed: up to the
    last stable offset (and ``hi``), each with the aborted transactions it holds data of."""
    stop = view.last_stable_offset if hi is None else min(hi, view.last_stable_offset)
    parts = []
    for i, seg in enumerate(segs):
        seg_end = segs[i + 1].base_offset if i + 1 < len(segs) else None
        if seg.base_offset >= stop or (seg_end is not None and seg_end <= lo) or not seg.size:
            continue
        end = stop if seg_end is None or seg_end > stop else None
        parts.append(SegmentPartition(seg, lo, end, view.aborted_in(seg.base_offset, end
                                                                    or seg_end)))
    return parts


class KafkaLiteDataSource(DataSource):  # type: ignore[misc]
    @classmethod
    def name(cls) -> str:
        return "kafkalite"

    def schema(self) -> str:
        mode = self.options.get("mode", "records")
        return sg.BATCH_DDL if mode == "batches" else sg.RECORD_DDL

    def _options(self, schema: Any) -> dict[str, Any]:
        opts = _parse_options(dict(self.options))
        full = sg.BATCH_SCHEMA if opts["mode"] == "batches" else sg.RECORD_SCHEMA
        opts["columns"] = _columns(schema, full)
        return opts

    def reader(self, schema: Any) -> DataSourceReader:
        return _BatchReader(self._options(schema))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return _StreamReader(self._options(schema))


class _BatchReader(DataSourceReader):  # type: ignore[misc]
    def __init__(self, opts: dict[str, Any]) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        # Only the listing happens here, on the driver; executors read the segments.
        lfs = open_log_fs(self.opts["path"], self.opts["fs"])
        parts: list[InputPartition]
        if self.opts["committed"]:
            parts = []
            for pdir in sg.list_partitions(lfs, self.opts["topics"], self.opts["pattern"]):
                view = transaction_view(pdir)
                parts += _committed_parts(sg.list_segments(pdir), view)
            return parts or [InputPartition(None)]
        segs = sg.list_all_segments(lfs, self.opts["topics"], self.opts["pattern"])
        parts = [SegmentPartition(s) for s in segs if s.size]
        # Spark needs at least one partition; an empty one reads nothing.
        return parts or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, SegmentPartition):
            yield from _read(self.opts, partition)


def _key(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


class _StreamReader(DataSourceStreamReader):  # type: ignore[misc]
    """Offsets are ``{"<topic>-<n>": next offset}``; a micro-batch reads [start, end)."""

    def __init__(self, opts: dict[str, Any]) -> None:
        self.opts = opts
        self.lfs: LogFs = open_log_fs(opts["path"], opts["fs"])

    def _partition_dirs(self) -> list[sg.PartitionDir]:
        return sg.list_partitions(self.lfs, self.opts["topics"], self.opts["pattern"])

    def _latest(self) -> dict[str, int]:
        if self.opts["committed"]:
            return {_key(p.topic, p.partition): transaction_view(p).last_stable_offset
                    for p in self._partition_dirs()}
        return {_key(p.topic, p.partition): sg.next_offset(p) for p in self._partition_dirs()}

    def initialOffset(self) -> dict[str, int]:
        if self.opts["starting"] == "latest":
            return self._latest()
        return {_key(p.topic, p.partition): 0 for p in self._partition_dirs()}

    def latestOffset(
        self, start: dict[str, int] | None = None, limit: Any = None
    ) -> dict[str, int]:
        latest = self._latest()
        if start:
            # A partition never goes backwards (a deleted-and-recreated topic keeps its place).
            for k, v in start.items():
                latest[k] = max(latest.get(k, 0), v)
        return latest

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        parts: list[InputPartition] = []
        for pdir in self._partition_dirs():
            k = _key(pdir.topic, pdir.partition)
            lo, hi = start.get(k, 0), end.get(k, 0)
            if hi <= lo:
                continue
            segs = sg.list_segments(pdir)
            if self.opts["committed"]:
                parts += _committed_parts(segs, transaction_view(pdir), lo, hi)
                continue
            for i, seg in enumerate(segs):
                seg_end = segs[i + 1].base_offset if i + 1 < len(segs) else None
                if seg_end is not None and seg_end <= lo:
                    continue
                if seg.base_offset >= hi:
                    break
                parts.append(SegmentPartition(seg, lo, hi))
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, SegmentPartition):
            yield from _read(self.opts, partition)

    def commit(self, end: dict[str, int]) -> None:
        pass


def reader(spark: Any, path: str, stream: bool = False) -> Any:
    """``spark.read`` (or ``readStream``) of the kafkalite source at ``path``, with the S3
    settings of this process's environment passed on as options: Spark's Python workers
    run with the environment the JVM started with, not this process's current one."""
    r = (spark.readStream if stream else spark.read).format("kafkalite").option("path", path)
    for k, v in fs_options(path).items():
        r = r.option(k, v)
    return r


def register(spark: Any) -> None:
    spark.dataSource.register(KafkaLiteDataSource)
