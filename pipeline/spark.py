"""Starting a SparkSession that can run the kafkalite data source and jobs."""

from __future__ import annotations

import os
import sys
from typing import Any


def session(master: str = "local[*]", app_name: str = "kafkalite-pipeline",
            shuffle_partitions: int | None = None, **conf: str) -> Any:
    """A SparkSession whose Python workers run this interpreter, with the source registered."""
    # Workers must import kafkalite: the same interpreter, same sys.path.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import kafkalite

    root = os.path.dirname(os.path.dirname(os.path.abspath(kafkalite.__file__)))
    path = os.environ.get("PYTHONPATH", "")
    if root not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = root + (os.pathsep + path if path else "")
    from pyspark.sql import SparkSession

    from .source import register

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        # Stay on loopback: the host name may resolve to an external interface.
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
    )
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    register(spark)
    return spark
