"""The live lag stream against a running broker: a real consumer commits, and the query's
Parquet output shows the new lag within two trigger intervals; a restart from the
checkpoint writes only what changed while it was stopped."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from kafkalite.broker.testing.fixtures import BrokerThread
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


def wait_for(fetch: Callable[[], list[Any]], pred: Callable[[Any], bool], what: str,
             timeout: float = 120) -> Any:
    """The first row ``fetch`` returns that ``pred`` accepts, polled until ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        hit = [r for r in fetch() if pred(r)]
        if hit:
            return hit[0]
        time.sleep(0.5)
    raise AssertionError(f"{what}: rows are {fetch()}")


def wait_row(spark: Any, out: Path, pred: Callable[[Any], bool], what: str) -> Any:
    return wait_for(lambda: rows(spark, out), pred, what)


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


def admin_rows(admin_url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{admin_url}/api/v1/lag?group={GROUP}", timeout=10) as resp:
        rows: list[dict[str, Any]] = json.loads(resp.read())["rows"]
    return rows


def test_the_stream_writes_lag_to_the_brokers_admin_api(
    spark: Any, make_broker: Callable[..., BrokerThread], tmp_path: Path
) -> None:
    broker = make_broker(admin=True)
    boot, admin = broker.bootstrap, broker.admin_url
    assert admin is not None
    broker.call(lambda: broker.broker.create_topic(TOPIC, 2))  # type: ignore[union-attr]
    produce(boot, 0, 30)
    consumer = KafkaConsumer(bootstrap_servers=boot, group_id=GROUP, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)])
        commit(consumer, 0, 10)
        q = watch.start(spark, bootstrap=boot, admin=admin, checkpoint=str(tmp_path / "chk"),
                        trigger_seconds=TRIGGER)
        try:
            first = wait_for(lambda: admin_rows(admin), lambda r: r["partition"] == 0,
                             "the first batch")
            assert (first["topic"], first["committed_offset"], first["log_end_offset"],
                    first["lag"]) == (TOPIC, 10, 30, 20)
            committed_at = commit(consumer, 0, 25)
            new = wait_for(lambda: admin_rows(admin), lambda r: r["committed_offset"] == 25,
                           "the new commit")
            assert new["lag"] == 5
            seen_after = datetime.fromisoformat(new["as_of"]).timestamp() - committed_at
            assert seen_after <= 2 * TRIGGER, f"seen {seen_after:.1f}s after the commit"
        finally:
            q.stop()
        assert q.exception() is None
        # The stream's rows agree with the lag the broker computes for its own groups.
        with urllib.request.urlopen(f"{admin}/api/v1/groups/{GROUP}", timeout=10) as resp:
            group = json.loads(resp.read())
        mine = next(r for r in group["lag"] if r["topic"] == TOPIC and r["partition"] == 0)
        assert (mine["committed"], mine["log_end_offset"], mine["lag"]) == (25, 30, 5)
    finally:
        consumer.close()


def test_the_admin_sink_names_the_url_when_it_cannot_write(
    make_broker: Callable[..., BrokerThread]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    row = {"group": GROUP, "topic": TOPIC, "partition": 0, "committed_offset": 1,
           "log_end_offset": 2, "lag": 1, "as_of": "2026-11-26T00:00:00+00:00"}
    with pytest.raises(watch.AdminSinkError, match=f"{closed}/api/v1/lag"):
        watch.post_rows(closed, [row], timeout=2, pause=0)
    admin = make_broker(admin=True).admin_url
    assert admin is not None
    with pytest.raises(watch.AdminSinkError, match=r"HTTP 400.*rows\[0\]\.lag must be"):
        watch.post_rows(admin, [dict(row, lag=None)])
    watch.post_rows(admin, [row] * (watch.POST_ROWS + 1))  # two posts
    assert admin_rows(admin) == [row]


def test_watch_writes_to_one_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kafkalite.broker.cli.main import main as cli_main

    rc = cli_main(["pipeline", "watch", "--bootstrap", "127.0.0.1:9", "--checkpoint",
                   str(tmp_path / "chk"), "--out", str(tmp_path / "out"),
                   "--admin", "http://127.0.0.1:9"])
    assert rc == 2
    assert "--out or --admin, not both" in capsys.readouterr().err
