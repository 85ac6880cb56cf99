"""The live lag stream against a running broker: a real consumer commits, and the query's
Parquet output shows the new lag within two trigger intervals; a restart from the
checkpoint writes only what changed while it was stopped."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafkalite.broker.testing import BrokerThread
from kafkalite.pipeline import watch
from kafkalite.pipeline.lag import LogDirLag

pytestmark = pytest.mark.timeout(1200)

TOPIC, GROUP, TRIGGER = "watched", "watchers", 3.0


def produce(bootstrap: str, partition: int, n: int) -> None:
    p = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(n):
        p.send(TOPIC, value=b"v%d" % i, partition=partition)
    p.flush(30)
    p.close()


def commit(consumer: KafkaConsumer, partition: int, offset: int) -> float:
    consumer.commit({TopicPartition(TOPIC, partition): OffsetAndMetadata(offset, "", -1)})
    return time.time()


def rows(spark: Any, out: Path) -> list[Any]:
    if not (out / "_spark_metadata").exists():
        return []
    return spark.read.schema(watch.SCHEMA).parquet(str(out)) \
        .filter(f"`group` = '{GROUP}'").collect()


def wait_row(spark: Any, out: Path, pred: Callable[[Any], bool], what: str,
             timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        hit = [r for r in rows(spark, out) if pred(r)]
        if hit:
            return hit[0]
        time.sleep(0.5)
    raise AssertionError(f"{what}: rows are {rows(spark, out)}")


def test_commits_show_up_as_lag_within_two_triggers(
    spark: Any, make_broker: Callable[..., BrokerThread], tmp_path: Path
) -> None:
    broker = make_broker()
    boot = broker.bootstrap
    broker.call(lambda: broker.broker.create_topic(TOPIC, 2))  # type: ignore[union-attr]
    produce(boot, 0, 30)
    produce(boot, 1, 30)
    consumer = KafkaConsumer(bootstrap_servers=boot, group_id=GROUP, enable_auto_commit=False)
    out, chk = tmp_path / "out", tmp_path / "chk"
    try:
        consumer.assign([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)])
        commit(consumer, 0, 10)
        commit(consumer, 1, 5)

        # Over the log directory (no Spark): the same committed offsets and log end offsets.
        snap = LogDirLag(str(broker.data_dir)).snapshot()
        assert {k: v for k, v in snap.commits.items() if k[0] == GROUP} == {
            (GROUP, TOPIC, 0): 10, (GROUP, TOPIC, 1): 5}
        assert (snap.ends[TOPIC, 0], snap.ends[TOPIC, 1]) == (30, 30)

        q = watch.start(spark, bootstrap=boot, out=str(out), checkpoint=str(chk),
                        trigger_seconds=TRIGGER)
        try:
            first = wait_row(spark, out, lambda r: r.partition == 1, "first batch")
            assert (first.committed_offset, first.log_end_offset, first.lag) == (5, 30, 25)
            p0 = wait_row(spark, out, lambda r: r.partition == 0, "partition 0")
            assert (p0.committed_offset, p0.log_end_offset, p0.lag) == (10, 30, 20)

            committed_at = commit(consumer, 0, 25)
            new = wait_row(spark, out, lambda r: r.partition == 0 and r.committed_offset == 25,
                           "the new commit")
            assert new.lag == 5
            seen_after = new.as_of.timestamp() - committed_at
            assert seen_after <= 2 * TRIGGER, f"seen {seen_after:.1f}s after the commit"

            produce(boot, 1, 10)  # the log end offset moves: lag grows without a commit
            grown = wait_row(spark, out, lambda r: r.partition == 1 and r.log_end_offset == 40,
                             "the new log end offset")
            assert (grown.committed_offset, grown.lag) == (5, 35)
        finally:
            q.stop()
        assert q.exception() is None

        before = len(rows(spark, out))
        commit(consumer, 1, 40)
        q = watch.start(spark, bootstrap=boot, out=str(out), checkpoint=str(chk),
                        trigger_seconds=TRIGGER)
        try:
            wait_row(spark, out, lambda r: r.partition == 1 and r.committed_offset == 40,
                     "the commit made while stopped")
            time.sleep(TRIGGER)
        finally:
            q.stop()
        after = rows(spark, out)
        # Only the partition that changed: the checkpoint kept the rest.
        assert len(after) == before + 1, after
        assert all(isinstance(r.as_of, datetime) for r in after)
    finally:
        consumer.close()
