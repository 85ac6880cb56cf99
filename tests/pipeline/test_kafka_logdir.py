"""A log directory in Apache Kafka's layout, written by aiokafka's batch builder and an
independent encoding of the ``__consumer_offsets`` schemas: every record reads as the
independent decoder reads it, and every key and value version decodes to what was written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from kafkalite.pipeline import consumer_offsets, jobs
from kafkalite.pipeline.consumer_offsets import CONSUMER_GROUP_RECORDS

from .kafka_logdir import GROUP, NEW_GROUP, write_kafka_log_dir
from .test_source import independent_read, spark_read

pytestmark = pytest.mark.timeout(1200)


def test_reads_an_apache_kafka_log_dir(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "kafka-logs"
    exp = write_kafka_log_dir(root)

    df = spark.read.format("kafkalite").option("path", str(root)).option("topics", "orders") \
        .load()
    got = spark_read(df)
    assert len(got) > 40
    assert got == independent_read(root, {"orders"})
    topics = {r.topic for r in spark.read.format("kafkalite").option("path", str(root))
              .option("mode", "batches").load().select("topic").distinct().collect()}
    assert topics == {"__cluster_metadata", "__consumer_offsets", "orders"}

    off = consumer_offsets.read(spark, str(root)).orderBy("log_offset")
    rows = off.select(
        "*", F.unix_millis("commit_timestamp").alias("commit_ms"),
        F.unix_millis("expire_timestamp").alias("expire_ms"),
        F.unix_millis("state_timestamp").alias("state_ms"),
    ).collect()
    commits = [r for r in rows if r.record_type == "offset_commit" and not r.tombstone]
    assert [(r.group, r.topic, r.partition, r.committed_offset, r.leader_epoch, r.metadata,
             r.commit_ms, -1 if r.expire_ms is None else r.expire_ms) for r in commits] == \
        [c[1:] for c in exp.commits]
    groups = [r for r in rows if r.record_type == "group_metadata"]
    assert len(groups) == len(exp.groups)
    for r, (_v, gen, protocol, leader, ts, members) in zip(groups, exp.groups, strict=True):
        assert (r.group, r.generation, r.protocol_type, r.protocol, r.leader) == (
            GROUP, gen, "consumer", protocol, leader)
        assert (-1 if r.state_ms is None else r.state_ms) == ts
        assert [(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                 m.rebalance_timeout_ms, m.session_timeout_ms, m.subscribed_topics,
                 {a.topic: a.partitions for a in m.assigned_partitions})
                for m in r.members] == [
            (m.member_id, m.instance_id, m.client_id, m.host, m.rebalance_ms, m.session_ms,
             m.topics, m.parts) for m in members]
    new = [(r.group, r.record_type) for r in rows if r.record_type.startswith("consumer_group")]
    assert new == [(NEW_GROUP, CONSUMER_GROUP_RECORDS[k]) for k in exp.new_group_kinds]
    assert sum(1 for r in rows if r.tombstone) == exp.tombstones
    assert not [r for r in rows if r.record_type == "unknown"]

    reb = jobs.rebalances(spark, str(root)).filter(F.col("group") == GROUP).collect()
    assert [r.generation for r in reb] == [1, 2, 3, 4, 5]
    assert [r.member_count for r in reb] == [1, 2, 2, 2, 1]
