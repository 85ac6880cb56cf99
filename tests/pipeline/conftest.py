"""One SparkSession (local[2]) shared by every pipeline test: Spark starts slowly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from kafkalite.pipeline.spark import session

    s = session("local[2]", app_name="kafkalite-tests", shuffle_partitions=2,
                **{"spark.default.parallelism": "2"})
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()
