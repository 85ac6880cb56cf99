"""The series endpoints over real traffic: a confluent-kafka producer and a lagging
consumer group over TCP, read back from /api/v1/.../series."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable

import pytest
from confluent_kafka import Producer

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


def _post(broker: BrokerThread, path: str) -> None:
    req = urllib.request.Request(f"{broker.admin_url}/api/v1{path}", data=b"{}",
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200


def _marks(broker: BrokerThread, node: str) -> list[str]:
    return [m["kind"] for m in get(broker, "/nodes/series")["nodes"][node]["marks"]]


def _wait(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.3)


def test_node_series_mark_a_stop_an_isolation_and_the_starts(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker(admin=True, nodes=3)
    _wait(lambda: len(get(broker, "/nodes/series")["nodes"]) == 3, "series of three nodes")
    _post(broker, "/brokers/2/stop")
    _wait(lambda: _marks(broker, "2") == ["stopped"], "stop mark")
    _post(broker, "/brokers/2/start")
    _post(broker, "/brokers/3/isolate")
    _wait(lambda: _marks(broker, "2") == ["stopped", "running"]
          and _marks(broker, "3") == ["isolated"], "start and isolation marks")
    _post(broker, "/brokers/3/heal")
    _wait(lambda: _marks(broker, "3") == ["isolated", "running"], "heal mark")
    nodes = get(broker, "/nodes/series")["nodes"]
    assert _marks(broker, "1") == []
    assert {p["status"] for p in nodes["2"]["points"]} >= {"stopped", "running"}


def test_the_manual_clock_moves_the_series(make_broker: Callable[..., BrokerThread]) -> None:
    """No sample is taken while the manual clock stands still; each advance takes one, at
    the clock's time, and the rate is over the clock's interval."""
    broker = make_broker(admin=True, manual_clock=True)
    create_topic(broker, "series-manual", 1)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    start = broker.advance(SAMPLE_MS)  # the baseline sample
    for i in range(40):
        p.produce("series-manual", value=b"v%d" % i)
    assert p.flush(10) == 0
    time.sleep(1.0)  # wall time passes; the broker's clock does not
    assert get(broker, "/topics/series-manual/series")["points"] == []
    broker.advance(SAMPLE_MS)
    broker.advance(SAMPLE_MS)
    points = get(broker, "/topics/series-manual/series")["points"]
    assert [pt["t"] for pt in points] == [start + SAMPLE_MS, start + 2 * SAMPLE_MS]
    assert [pt["records_in_per_s"] for pt in points] == [40 / (SAMPLE_MS / 1000), 0.0]


def test_each_node_has_its_request_rate_and_latency(
        make_broker: Callable[..., BrokerThread]) -> None:
    """Per broker of --nodes N: the requests each node served, over the same samples as the
    process's, which they add up to."""
    broker = make_broker(admin=True, nodes=3)
    create_topic(broker, "series-nodes", 3)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(60):
        p.produce("series-nodes", value=b"v%d" % i, partition=i % 3)
        p.poll(0)
        time.sleep(0.05)
    assert p.flush(10) == 0

    def busy_everywhere() -> bool:
        nodes = get(broker, "/nodes/series")["nodes"]
        return len(nodes) == 3 and all(
            any(pt["requests_per_s"] > 0 for pt in n["points"]) for n in nodes.values())

    _wait(busy_everywhere, "requests on every node")
    s = get(broker, "/nodes/series")
    by_t = {pt["t"]: pt["requests_per_s"] for pt in s["process"]["points"]}
    for n in s["nodes"].values():
        assert all(pt["latency_ms"] >= 0 for pt in n["points"])
    shared = set(by_t)
    for n in s["nodes"].values():
        shared &= {pt["t"] for pt in n["points"]}
    assert shared
    for t in shared:
        total = sum(next(pt["requests_per_s"] for pt in n["points"] if pt["t"] == t)
                    for n in s["nodes"].values())
        assert total == pytest.approx(by_t[t])
