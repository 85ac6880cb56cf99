"""The live lag stream: ``kafkalite pipeline watch``, a Structured Streaming query.

The ``kafkalite-lag`` streaming source's offset is a lag :class:`~.lag.Snapshot` (every
committed offset and log end offset, taken on the driver at each trigger); a micro-batch
runs only when it changed, and writes one row per (group, topic, partition) whose commit
or log end offset moved: so a new commit shows up at the next trigger. The checkpoint
keeps the last snapshot, and a restarted query writes only what changed meanwhile.

Options: ``bootstrap`` (HOST:PORT of a broker) or ``path`` (a log directory or URI).
The rows go to the console, to Parquet, or to a kafkalite broker's admin API
(``POST /api/v1/lag``, shown at ``GET /api/v1/lag``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from kafkalite.client import admin as admin_api

from .fs import fs_options
from .lag import BrokerLag, LogDirLag, Snapshot

SCHEMA = ("`group` string, topic string, partition int, committed_offset long, "
          "log_end_offset long, lag long, as_of timestamp")


class _Change(InputPartition):  # type: ignore[misc]
    def __init__(self, start: dict[str, Any], end: dict[str, Any]) -> None:
        super().__init__(None)
        self.start = start
        self.end = end


class LagDataSource(DataSource):  # type: ignore[misc]
    @classmethod
    def name(cls) -> str:
        return "kafkalite-lag"

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        options = {k.lower(): v for k, v in self.options.items()}
        if options.get("bootstrap"):
            return _LagStream(BrokerLag(options["bootstrap"]))
        if options.get("path"):
            fs = {k: v for k, v in options.items() if k.startswith("s3.")}
            return _LagStream(LogDirLag(options["path"], fs))
        raise ValueError("the kafkalite-lag source needs option bootstrap=HOST:PORT or path=DIR")


class _LagStream(DataSourceStreamReader):  # type: ignore[misc]
    def __init__(self, source: BrokerLag | LogDirLag) -> None:
        self.source = source

    def initialOffset(self) -> dict[str, Any]:
        return Snapshot().to_offset()  # the first micro-batch writes every partition's lag

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None
                     ) -> dict[str, Any]:
        now = self.source.snapshot()
        if start and now.same_as(Snapshot.from_offset(start)):
            return start  # nothing changed: no micro-batch
        return now.to_offset()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return [_Change(start, end)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, _Change)
        end = Snapshot.from_offset(partition.end)
        for g, t, p, committed, leo, lag, at in end.rows(Snapshot.from_offset(partition.start)):
            yield g, t, p, committed, leo, lag, datetime.fromtimestamp(at / 1000, UTC)

    def commit(self, end: dict[str, Any]) -> None:
        pass


LAG_PATH = "/api/v1/lag"
#: Rows per POST: well under the admin API's 1 MiB body limit.
POST_ROWS = 2_000
#: Attempts per POST before the query fails (a broker restarting is back within them).
POST_ATTEMPTS = 5


class AdminSinkError(RuntimeError):
    pass


def post_rows(admin_url: str, rows: Sequence[dict[str, Any]], timeout: float = 10.0,
              pause: float = 1.0) -> None:
    """POST ``rows`` to a broker's ``/api/v1/lag``, in chunks; retried while the broker
    does not answer, then an ``AdminSinkError`` naming the URL and the broker's answer."""
    url = admin_url.rstrip("/") + LAG_PATH
    for i in range(0, len(rows), POST_ROWS):
        body = {"rows": list(rows[i:i + POST_ROWS])}
        for attempt in range(POST_ATTEMPTS):
            try:
                admin_api.request(admin_url, "POST", LAG_PATH, body, timeout=timeout)
                break
            except admin_api.AdminUnreachable as e:
                if attempt == POST_ATTEMPTS - 1:
                    raise AdminSinkError(f"{url}: {e}") from None
                time.sleep(pause)
            except admin_api.CtlError as e:
                # The broker refused the rows: retrying the same body cannot help.
                raise AdminSinkError(f"{url}: HTTP {e}") from None


def _admin_sink(admin_url: str) -> Any:
    def write(batch: Any, _batch_id: int) -> None:
        rows = [{"group": r["group"], "topic": r["topic"], "partition": r["partition"],
                 "committed_offset": r["committed_offset"],
                 "log_end_offset": r["log_end_offset"], "lag": r["lag"],
                 # Spark hands timestamps over as naive local times.
                 "as_of": datetime.fromtimestamp(r["as_of"].timestamp(), UTC).isoformat()}
                for r in batch.collect()]
        if rows:
            post_rows(admin_url, rows)

    return write


def start(spark: Any, *, bootstrap: str | None = None, log_dir: str | None = None,
          out: str | None = None, checkpoint: str, trigger_seconds: float = 5.0,
          admin: str | None = None) -> Any:
    """Start the lag query: Parquet under ``out``, to the admin API at ``admin``
    (``http://HOST:PORT``), or the console when neither is given."""
    spark.dataSource.register(LagDataSource)
    reader = spark.readStream.format("kafkalite-lag")
    if bootstrap:
        reader = reader.option("bootstrap", bootstrap)
    else:
        assert log_dir is not None
        reader = reader.option("path", log_dir)
        for k, v in fs_options(log_dir).items():
            reader = reader.option(k, v)
    writer = reader.load().writeStream.option("checkpointLocation", checkpoint) \
        .trigger(processingTime=f"{trigger_seconds} seconds").queryName("kafkalite_lag")
    if out and admin:
        raise ValueError("the lag goes to one place: --out or --admin, not both")
    if admin:
        return writer.foreachBatch(_admin_sink(admin)).outputMode("append").start()
    if out:
        return writer.format("parquet").option("path", out).outputMode("append").start()
    return writer.format("console").option("truncate", "false").outputMode("append").start()
