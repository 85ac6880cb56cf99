"""The kafkalite data source against an independent decoder (aiokafka's record batches)."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka import KafkaProducer
from pyspark.sql import functions as F

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.pipeline.logwriter import PartitionWriter
from kafkalite.protocol.records import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    NewRecord,
    build_batch,
)

# Spark starts slowly on a busy two-core machine: the shared session's start-up counts
# against the first test.
pytestmark = pytest.mark.timeout(600)

CODECS = [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4,
          COMPRESSION_ZSTD]
T0 = 1_700_000_000_000


def _records(rng: random.Random, n: int) -> list[NewRecord]:
    out = []
    for _ in range(n):
        key = None if rng.random() < 0.2 else rng.randbytes(rng.randint(0, 20))
        value = None if rng.random() < 0.05 else rng.randbytes(rng.randint(0, 300))
        headers = [(f"h{j}", None if rng.random() < 0.2 else rng.randbytes(5))
                   for j in range(rng.choice([0, 0, 1, 3]))]
        out.append(NewRecord(key, value, T0 + rng.randint(0, 100_000), headers))
    return out


def _aiokafka_batch(rng: random.Random, n: int, codec: int) -> bytes:
    """A batch written by aiokafka's own builder (raw snappy, its own lz4/zstd framing)."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    for i in range(n):
        key = rng.randbytes(8) if i % 3 else None
        b.append(i, timestamp=T0 + i, key=key, value=rng.randbytes(rng.randint(1, 200)),
                 headers=[("src", b"aiokafka")] if i % 2 else [])
    return bytes(b.build())


def _control_batch() -> bytes:
    # A transaction marker (COMMIT): consumers and Spark's Kafka source never show it.
    key = struct.pack(">hh", 0, 1)
    value = struct.pack(">hi", 0, 0)
    return build_batch([NewRecord(key, value)], timestamp=T0, producer_id=7, producer_epoch=0,
                       attributes=ATTR_CONTROL | ATTR_TRANSACTIONAL)


def write_mixed_log(root: Path) -> None:
    rng = random.Random(42)
    for topic, parts in (("alpha", 2), ("beta", 1)):
        for p in range(parts):
            w = PartitionWriter(root, topic, p, segment_bytes=20_000)
            for i in range(40):
                codec = CODECS[i % len(CODECS)]
                if i % 7 == 3:
                    w.append_batch(_aiokafka_batch(rng, rng.randint(1, 30), codec))
                elif i % 11 == 5:
                    w.append_batch(_control_batch())
                else:
                    w.append(_records(rng, rng.randint(1, 40)), T0, codec)
            w.close()
    # A topic that the topic filters leave out.
    w = PartitionWriter(root, "other", 0)
    w.append(_records(rng, 5), T0)
    w.close()


def independent_read(root: Path, topics: set[str]) -> list[tuple[Any, ...]]:
    rows = []
    for pdir in sorted(root.iterdir()):
        topic, _, part = pdir.name.rpartition("-")
        if topic not in topics:
            continue
        for seg in sorted(pdir.glob("*.log")):
            data = seg.read_bytes()
            pos = 0
            while pos < len(data):
                (length,) = struct.unpack_from(">i", data, pos + 8)
                batch = DefaultRecordBatch(data[pos : pos + 12 + length])
                assert batch.validate_crc()
                pos += 12 + length
                if batch.is_control_batch:
                    continue
                for r in batch:
                    headers = [(k, v) for k, v in r.headers]
                    rows.append((topic, int(part), r.offset, r.timestamp, r.timestamp_type,
                                 r.key, r.value, headers))
    return sorted(rows, key=lambda r: (r[0], r[1], r[2]))


def spark_read(df: Any) -> list[tuple[Any, ...]]:
    rows = df.select(
        "topic", "partition", "offset", F.unix_millis("timestamp").alias("ts"),
        "timestampType", "key", "value", "headers",
    ).orderBy("topic", "partition", "offset").collect()
    return [
        (r.topic, r.partition, r.offset, r.ts, r.timestampType,
         None if r.key is None else bytes(r.key), None if r.value is None else bytes(r.value),
         [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers])
        for r in rows
    ]


@pytest.fixture(scope="module")
def mixed_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mixed")
    write_mixed_log(root)
    return root


def test_reads_every_codec_like_an_independent_decoder(spark: Any, mixed_log: Path) -> None:
    df = spark.read.format("kafkalite").option("path", str(mixed_log)) \
        .option("topics", "alpha,beta").load()
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                          "timestampType", "headers"]
    # One input partition per segment: the small segment size rolled several per partition.
    n_segments = sum(1 for p in mixed_log.iterdir() if not p.name.startswith("other")
                     for _ in p.glob("*.log"))
    assert n_segments > 3
    assert df.rdd.getNumPartitions() == n_segments
    got = spark_read(df)
    want = independent_read(mixed_log, {"alpha", "beta"})
    assert len(want) > 500
    assert got == want


def test_a_schema_given_to_the_reader_picks_the_columns(spark: Any, mixed_log: Path) -> None:
    def read(schema: str | None = None, mode: str = "records") -> Any:
        r = spark.read.format("kafkalite")
        if schema:
            r = r.schema(schema)
        return r.option("path", str(mixed_log)).option("topics", "alpha,beta") \
            .option("mode", mode).load()

    def rows(df: Any) -> list[str]:
        return sorted(repr(tuple(r)) for r in df.collect())

    part = read("value binary, offset long, topic string, headers "
                "array<struct<key:string,value:binary>>")
    assert part.columns == ["value", "offset", "topic", "headers"]
    assert rows(part) == rows(read().select("value", "offset", "topic", "headers"))
    batches = read("baseOffset long, recordCount int", "batches")
    assert rows(batches) == rows(read(mode="batches").select("baseOffset", "recordCount"))
    with pytest.raises(Exception, match="column 'offset' of the kafkalite source is int64"):
        read("offset int").collect()
    with pytest.raises(Exception, match="the kafkalite source has no column 'nope'"):
        read("nope string").collect()


def test_topic_pattern_and_batches_mode(spark: Any, mixed_log: Path) -> None:
    df = spark.read.format("kafkalite").option("path", str(mixed_log)) \
        .option("topicPattern", "alp.*").load()
    assert {r.topic for r in df.select("topic").distinct().collect()} == {"alpha"}
    batches = spark.read.format("kafkalite").option("path", str(mixed_log)) \
        .option("topics", "beta").option("mode", "batches").load()
    assert batches.count() == 40
    assert batches.filter("isControl").count() == sum(1 for i in range(40) if i % 11 == 5
                                                      and i % 7 != 3)
    data_records = batches.filter("not isControl").agg(F.sum("recordCount")).first()[0]
    assert data_records == df.sparkSession.read.format("kafkalite") \
        .option("path", str(mixed_log)).option("topics", "beta").load().count()


def test_stream_picks_up_appended_records(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "logs"
    w = PartitionWriter(root, "live", 0, segment_bytes=4_000)
    for i in range(10):
        w.append([NewRecord(b"k", b"first-%d" % i)], T0 + i, COMPRESSION_GZIP)
    w.flush()
    out, chk = tmp_path / "out", tmp_path / "chk"

    def run_available_now() -> None:
        q = (
            spark.readStream.format("kafkalite").option("path", str(root))
            .option("topicPattern", "live").load()
            .selectExpr("partition", "offset", "cast(value as string) as v")
            .writeStream.format("parquet").option("path", str(out))
            .option("checkpointLocation", str(chk)).trigger(availableNow=True).start()
        )
        q.awaitTermination(120)
        assert q.exception() is None

    run_available_now()
    first = spark.read.parquet(str(out)).collect()
    assert sorted(r.offset for r in first) == list(range(10))

    # Appended after the first batch: more records, a rolled segment, a new partition.
    for i in range(10, 200):
        w.append([NewRecord(b"k", b"second-%d" % i)], T0 + i, COMPRESSION_ZSTD)
    w.close()
    w2 = PartitionWriter(root, "live", 1)
    w2.append([NewRecord(None, b"p1-%d" % i) for i in range(7)], T0, COMPRESSION_LZ4)
    w2.close()
    assert len(list((root / "live-0").glob("*.log"))) > 1

    run_available_now()
    rows = spark.read.parquet(str(out)).collect()
    p0 = sorted(r.offset for r in rows if r.partition == 0)
    assert p0 == list(range(200))  # each record once: the checkpoint resumed at offset 10
    assert sorted(r.v for r in rows if r.partition == 1) == sorted(f"p1-{i}" for i in range(7))


def test_reads_a_directory_written_by_the_broker(
    spark: Any, make_broker: Callable[..., BrokerThread]
) -> None:
    broker = make_broker()
    broker.call(lambda: broker.broker.create_topic("produced", 2))  # type: ignore[union-attr]
    sent = 0
    for codec in ("gzip", "snappy", "lz4", "zstd", None):
        p = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=codec,
                          linger_ms=20)
        for i in range(60):
            p.send("produced", key=b"k%d" % (i % 7), value=b"%s-%d" % (str(codec).encode(), i),
                   headers=[("codec", str(codec).encode())], partition=i % 2)
            sent += 1
        p.flush(30)
        p.close()
    log_dir = broker.data_dir
    broker.stop()
    df = spark.read.format("kafkalite").option("path", str(log_dir)) \
        .option("topics", "produced").load()
    got = spark_read(df)
    assert len(got) == sent
    assert got == independent_read(log_dir, {"produced"})
    assert {h[1] for r in got for h in r[7]} == {b"gzip", b"snappy", b"lz4", b"zstd", b"None"}
