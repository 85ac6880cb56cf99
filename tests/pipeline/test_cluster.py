"""Every job through ``spark-submit`` (as the README shows for clusters) of ``kafkalite
pipeline all --master spark://...`` on a standalone cluster (separate master, worker and
executor JVMs): the same rows as on local[2]."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafkalite.pipeline import jobs

from .cluster import SPARK_HOME, Cluster
from .conftest import write_history
from .test_source import write_mixed_log

pytestmark = pytest.mark.timeout(1800)


def rows(df: Any) -> list[str]:
    return sorted(repr(r.asDict(recursive=True)) for r in df.collect())


def test_every_job_on_a_standalone_cluster_matches_local(
    spark: Any, spark_cluster: Cluster, tmp_path: Path
) -> None:
    root = tmp_path / "logs"
    write_history(root)
    write_mixed_log(root)  # more topics, every codec: listed and skipped by the jobs
    out = tmp_path / "out"
    spec = importlib.util.find_spec("kafkalite.__main__")
    assert spec is not None and spec.origin is not None
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run(
        [str(SPARK_HOME / "bin" / "spark-submit"), "--master", spark_cluster.url,
         "--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2",
         spec.origin, "pipeline", "all", "--log-dir", root.as_uri(), "--out", str(out),
         "--master", spark_cluster.url, "--bucket-seconds", "10", "--shuffle-partitions", "2"],
        capture_output=True, text=True, timeout=1500, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    # The tasks ran in executors on both workers, not in the driver.
    for i in range(2):
        apps = list((spark_cluster.workdir / f"work-{i}").glob("app-*/*/stderr"))
        assert apps, f"no executor ran on worker {i}"

    for name in jobs.JOBS:
        kw = {"bucket_seconds": 10.0} if name == "lag" else {}
        local = rows(jobs.run(spark, name, str(root), **kw))
        cluster = rows(spark.read.parquet(str(out / name)))
        assert local, name
        assert cluster == local, name
    assert (out / "report.html").stat().st_size > 10_000
