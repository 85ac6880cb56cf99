"""The generated bounds check is built once per request class, also when brokers on
several threads of one process (the test fixtures) meet the class at the same moment."""

from __future__ import annotations

import sys
import threading
from typing import Any

from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.produce.v9.request import ProduceRequest

from kafkalite.protocol import guard

THREADS, ROUNDS = 8, 5


def _race(classes: list[type[object]]) -> tuple[list[Any], list[BaseException]]:
    for cls in classes:  # as if never seen
        guard._compiled.pop(cls, None)
        guard._gen.names.pop(cls, None)
    start = threading.Barrier(THREADS)
    results: list[Any] = []
    errors: list[BaseException] = []

    def first_use() -> None:
        start.wait()
        try:
            results.append(tuple(guard.request_guard(c) for c in classes))
        except BaseException as e:  # what the race raised
            errors.append(e)

    threads = [threading.Thread(target=first_use) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results, errors


def test_concurrent_first_use_builds_one_guard() -> None:
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        for _ in range(ROUNDS):
            results, errors = _race([ProduceRequest, MetadataRequest])
            assert errors == []
            assert len(results) == THREADS and len(set(results)) == 1
            assert None not in results[0]
    finally:
        sys.setswitchinterval(switch)
