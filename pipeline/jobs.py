"""Consumer-group analytics over a log directory: rebalances, lag and members.

Every job is a function from a SparkSession and a log directory to a DataFrame; the CLI
writes them as Parquet. They only read files (``__consumer_offsets`` and the topics'
batch headers), so they run the same on a copy of an Apache Kafka broker's log dir.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from . import consumer_offsets
from .source import reader

JOBS = ("rebalances", "lag", "members")


def _member_key() -> Any:
    # Static members keep their instance id across restarts (the member id changes).
    return lambda m: F.coalesce(m["group_instance_id"], m["member_id"])


def group_records(spark: Any, log_dir: str) -> Any:
    """GroupMetadata records (not tombstones) with an event time ``t``."""
    off = consumer_offsets.read(spark, log_dir)
    return off.filter((F.col("record_type") == "group_metadata") & ~F.col("tombstone")).select(
        "group", "generation", "protocol_type", "protocol", "leader", "members",
        "log_partition", "log_offset", "log_timestamp",
        F.coalesce("state_timestamp", "log_timestamp").alias("t"),
    )


def rebalances(spark: Any, log_dir: str) -> Any:
    """One row per generation per group."""
    offsets = consumer_offsets.read(spark, log_dir).cache()
    gm = offsets.filter(
        (F.col("record_type") == "group_metadata") & ~F.col("tombstone")
    ).withColumn("t", F.coalesce("state_timestamp", "log_timestamp"))
    last_seen = offsets.filter(F.col("group").isNotNull()).groupBy("group").agg(
        F.max("log_timestamp").alias("group_last_seen")
    )
    by_gen = Window.partitionBy("group", "generation").orderBy(F.desc("log_offset"))
    per_gen = (
        gm.withColumn("_rn", F.row_number().over(by_gen))
        .withColumn("start", F.min("t").over(Window.partitionBy("group", "generation")))
        .withColumn("records", F.count("*").over(Window.partitionBy("group", "generation")))
        .filter(F.col("_rn") == 1)
    )
    by_group = Window.partitionBy("group").orderBy("generation")
    out = (
        per_gen.withColumn("member_keys", F.array_sort(F.transform("members", _member_key())))
        .withColumn("member_ids", F.array_sort(F.transform("members", lambda m: m["member_id"])))
        .withColumn("_prev", F.lag("member_keys").over(by_group))
        .withColumn("_next_start", F.lead("start").over(by_group))
        .join(last_seen, "group", "left")
        .select(
            "group",
            "generation",
            "start",
            F.coalesce("_next_start", "group_last_seen").alias("end"),
            F.col("_next_start").isNull().alias("is_current"),
            "protocol_type",
            "protocol",
            "leader",
            F.size("members").alias("member_count"),
            "member_ids",
            F.col("member_keys").alias("members"),
            F.when(F.col("_prev").isNull(), F.col("member_keys"))
            .otherwise(F.array_except("member_keys", "_prev")).alias("members_added"),
            F.when(F.col("_prev").isNull(), F.array().cast("array<string>"))
            .otherwise(F.array_except("_prev", "member_keys")).alias("members_removed"),
            "records",
        )
        .withColumn(
            "duration_s",
            (F.unix_micros("end") - F.unix_micros("start")) / F.lit(1_000_000.0),
        )
        .orderBy("group", "generation")
    )
    return out


def members(spark: Any, log_dir: str) -> Any:
    """Per member id: first and last seen, generations joined, instance id, when it left."""
    gm = group_records(spark, log_dir).cache()
    exploded = gm.select(
        "group", "generation", "log_offset", "log_timestamp", F.explode("members").alias("m")
    )
    per_member = exploded.groupBy("group", F.col("m.member_id").alias("member_id")).agg(
        F.max("m.group_instance_id").alias("group_instance_id"),
        F.max("m.client_id").alias("client_id"),
        F.max("m.client_host").alias("client_host"),
        F.max("m.session_timeout_ms").alias("session_timeout_ms"),
        F.min("log_timestamp").alias("first_seen"),
        F.max("log_timestamp").alias("last_seen"),
        F.max("log_offset").alias("_last_offset"),
        F.array_sort(F.collect_set("generation")).alias("generations"),
    )
    later = gm.select(
        F.col("group").alias("_g"), F.col("log_offset").alias("_o"),
        F.col("log_timestamp").alias("_t"),
    )
    left_at = (
        per_member.join(
            later,
            (per_member["group"] == later["_g"]) & (later["_o"] > per_member["_last_offset"]),
        )
        .groupBy("group", "member_id")
        .agg(F.min("_t").alias("left_at"))
    )
    return (
        per_member.join(left_at, ["group", "member_id"], "left")
        .withColumn("generation_count", F.size("generations"))
        .drop("_last_offset")
        .orderBy("group", "first_seen", "member_id")
    )


def lag(spark: Any, log_dir: str, bucket_seconds: float = 60.0) -> Any:
    """Per group, topic, partition and time bucket: committed offset, log end offset, lag.

    The committed offset is the last commit at or before the bucket's end; the log end
    offset is one past the last batch whose max timestamp is at or before it.
    """
    bucket_us = max(int(bucket_seconds * 1_000_000), 1)
    offsets = consumer_offsets.read(spark, log_dir)
    commits = offsets.filter(
        (F.col("record_type") == "offset_commit") & ~F.col("tombstone")
    ).select(
        "group", "topic", "partition", "committed_offset", "log_offset",
        F.coalesce("commit_timestamp", "log_timestamp").alias("t"),
    ).withColumn("bucket", F.floor(F.unix_micros("t") / bucket_us)).cache()
    topics = sorted(r["topic"] for r in commits.select("topic").distinct().collect())
    if topics:
        batches = (
            reader(spark, log_dir)
            .option("topics", ",".join(topics)).option("mode", "batches").load()
            .filter(~F.col("isControl"))
        )
    else:
        batches = spark.createDataFrame(
            [], "topic string, partition int, lastOffset long, maxTimestamp timestamp"
        )
    leo_events = batches.select(
        "topic", "partition", (F.col("lastOffset") + 1).alias("leo"),
        F.floor(F.unix_micros("maxTimestamp") / bucket_us).alias("bucket"),
    ).groupBy("topic", "partition", "bucket").agg(F.max("leo").alias("leo"))
    commit_b = commits.groupBy("group", "topic", "partition", "bucket").agg(
        F.max_by("committed_offset", F.struct("t", "log_offset")).alias("committed")
    )
    # The bucket range of each partition covers both its batches and the commits to it.
    tp_range = (
        leo_events.select("topic", "partition", "bucket")
        .unionByName(commits.select("topic", "partition", "bucket"))
        .groupBy("topic", "partition")
        .agg(F.min("bucket").alias("lo"), F.max("bucket").alias("hi"))
    )
    tp_grid = tp_range.select(
        "topic", "partition", F.explode(F.sequence("lo", "hi")).alias("bucket")
    )
    w_tp = Window.partitionBy("topic", "partition").orderBy("bucket").rowsBetween(
        Window.unboundedPreceding, Window.currentRow
    )
    leo_line = (
        tp_grid.join(leo_events, ["topic", "partition", "bucket"], "left")
        .withColumn("log_end_offset", F.coalesce(F.max("leo").over(w_tp), F.lit(0)))
        .drop("leo")
    )
    first_commit = commits.groupBy("group", "topic", "partition").agg(
        F.min("bucket").alias("first_bucket")
    )
    w_g = Window.partitionBy("group", "topic", "partition").orderBy("bucket").rowsBetween(
        Window.unboundedPreceding, Window.currentRow
    )
    return (
        first_commit.join(leo_line, ["topic", "partition"])
        .filter(F.col("bucket") >= F.col("first_bucket"))
        .join(commit_b, ["group", "topic", "partition", "bucket"], "left")
        .withColumn("committed_offset", F.last("committed", ignorenulls=True).over(w_g))
        .select(
            "group", "topic", "partition",
            F.timestamp_micros(F.col("bucket") * bucket_us).alias("bucket_start"),
            F.timestamp_micros((F.col("bucket") + 1) * bucket_us).alias("bucket_end"),
            "committed_offset",
            "log_end_offset",
            F.greatest(F.col("log_end_offset") - F.col("committed_offset"), F.lit(0))
            .alias("lag"),
        )
        .orderBy("group", "topic", "partition", "bucket_start")
    )


def run(spark: Any, job: str, log_dir: str, **kw: Any) -> Any:
    if job == "rebalances":
        return rebalances(spark, log_dir)
    if job == "members":
        return members(spark, log_dir)
    if job == "lag":
        return lag(spark, log_dir, **kw)
    raise ValueError(f"unknown job {job!r}; one of {', '.join(JOBS)}")
