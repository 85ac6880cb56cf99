"""One SparkSession (local[2]) shared by every pipeline test (Spark starts slowly), and a
group history log directory that several tests read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.pipeline.logwriter import PartitionWriter
from kafkalite.pipeline.synthetic import Member, OffsetsLogWriter
from kafkalite.protocol.records import COMPRESSION_SNAPPY, NewRecord

T0 = 1_700_000_000_000  # 2023-11-14 22:13:20 UTC
S = 1000


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from kafkalite.pipeline.spark import session

    s = session("local[2]", app_name="kafkalite-tests", shuffle_partitions=2,
                **{"spark.default.parallelism": "2"})
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Group g1: A joins; B joins; static s-1 joins; B dies; s-1 restarts; all leave.
    Group g2: one member, committing once. Topic 'orders' gets 5 records a second."""
    root = tmp_path_factory.mktemp("history")
    write_history(root)
    return root


def write_history(root: Path) -> None:
    writers = [PartitionWriter(root, "orders", p) for p in range(2)]
    for sec in range(60):
        for w in writers:
            w.append([NewRecord(None, b"x" * 10)] * 5, T0 + sec * S, COMPRESSION_SNAPPY)
    for w in writers:
        w.close()
    o = OffsetsLogWriter(root, partitions=3)
    a = Member("A-1", ["orders"], {"orders": [0, 1]}, client_id="app-a")
    b = Member("B-1", ["orders"], {"orders": [1]})
    s1 = Member("S-1", ["orders"], {"orders": [0]}, instance_id="s-1")
    s2 = Member("S-2", ["orders"], {"orders": [0]}, instance_id="s-1")
    o.group(T0, "g1", 1, [a])
    o.commit(T0 + 5 * S, "g1", "orders", 0, 20)
    o.commit(T0 + 5 * S, "g1", "orders", 1, 10)
    o.group(T0 + 10 * S, "g1", 2, [a, b])
    o.group(T0 + 20 * S, "g1", 3, [a, b, s1])
    o.commit(T0 + 25 * S, "g1", "orders", 0, 100)
    o.group(T0 + 30 * S, "g1", 4, [a, s1])
    o.group(T0 + 40 * S, "g1", 4, [a, s2])  # static restart: same generation
    o.commit(T0 + 45 * S, "g1", "orders", 0, 200)
    o.group(T0 + 50 * S, "g1", 5, [])
    o.group(T0 + 2 * S, "g2", 1, [Member("C-1", ["orders"], {"orders": [0, 1]})])
    o.commit(T0 + 3 * S, "g2", "orders", 1, 7)
    o.close()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A standalone master and two one-core workers, stopped by PID at the end."""
    from .cluster import Cluster

    c = Cluster(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores=1, memory="1g")
    yield c
    c.stop()
