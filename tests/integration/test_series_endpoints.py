"""The series endpoints over real traffic: a confluent-kafka producer and a lagging
consumer group over TCP, read back from /api/v1/.../series."""

from __future__ import annotations

import urllib.error
from collections.abc import Callable

import pytest

from kafkalite.broker.series.sampler import SAMPLE_MS
from kafkalite.broker.testing.fixtures import BrokerThread

from .group_helpers import create_topic
from .series_traffic import get, lagging_traffic

TOPIC, GROUP = "series-orders", "series-group"


def test_topic_group_and_node_series_follow_real_clients(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker(admin=True)
    create_topic(broker, TOPIC, 3)
    produced, consumed = lagging_traffic(broker, TOPIC, GROUP, seconds=10)
    assert 0 < consumed < produced

    topic = get(broker, f"/topics/{TOPIC}/series")
    assert topic["interval_ms"] == SAMPLE_MS and topic["window_ms"] == SAMPLE_MS * 300
    points = topic["points"]
    assert len(points) >= 3
    assert [p["t"] for p in points] == sorted(p["t"] for p in points)
    assert sum(p["records_in_per_s"] > 0 for p in points) >= 2
    # The rates integrate back to about what was produced (the last interval may be
    # sampled after the traffic ended, the first before it began).
    seconds = SAMPLE_MS / 1000
    total_in = sum(p["records_in_per_s"] for p in points) * seconds
    assert 0.5 * produced <= total_in <= produced
    assert any(p["bytes_in_per_s"] > 100 * p["records_in_per_s"] > 0 for p in points)
    assert any(p["bytes_out_per_s"] > 0 for p in points)
    assert sum(p["records_out_per_s"] for p in points) * seconds <= consumed

    group = get(broker, f"/groups/{GROUP}/series")
    lags = [p["lag"] for p in group["points"]]
    assert len(lags) >= 3 and lags[-1] > 0 and max(lags) > min(lags)
    last = group["points"][-1]
    assert sum(last["partitions"].values()) == last["lag"]
    assert set(last["partitions"]) <= {f"{TOPIC}-{p}" for p in range(3)}
    # Joining the group was a rebalance (generation 1) unless it happened before the
    # first sample; any mark names a generation.
    assert all(m["kind"] == "rebalance" and m["generation"] >= 1 for m in group["marks"])

    nodes = get(broker, "/nodes/series")
    process = nodes["process"]["points"]
    assert len(process) >= 3 and max(p["requests_per_s"] for p in process) > 0
    assert all(p["latency_ms"] >= 0 for p in process)
    assert list(nodes["nodes"]) == ["1"]

    for path in ("/topics/no-such-topic/series", "/groups/no-such-group/series"):
        with pytest.raises(urllib.error.HTTPError) as e:
            get(broker, path)
        assert e.value.code == 404
