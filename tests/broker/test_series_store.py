"""The console's series: the store's bounds and the sampler on the manual clock."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from kafkalite.broker.metrics import BrokerMetrics
from kafkalite.broker.series.sampler import ALL_NODES, SAMPLE_MS, Sampler
from kafkalite.broker.series.store import MAX_SERIES, POINTS, SeriesStore
from kafkalite.timekeeping.clock import ManualClock
from kafkalite.timekeeping.scheduler import Scheduler

HOUR_MS = 3_600_000


class _View:
    """What the sampler reads of ``BrokerView``: groups with their lag, and the nodes."""

    def __init__(self) -> None:
        self.lags: dict[str, list[dict[str, Any]]] = {}
        self.generations: dict[str, int] = {}
        self.nodes = None
        self.cluster_info = SimpleNamespace(members=lambda: [SimpleNamespace(node_id=1)])

    def groups_query(self, read: Callable[[Any], Any]) -> list[Any]:
        return [SimpleNamespace(group_id=g, generation=gen, state="Stable")
                for g, gen in self.generations.items()]

    def lag(self, group_id: str) -> list[dict[str, Any]]:
        return self.lags.get(group_id, [])


def _sampled(view: _View, metrics: BrokerMetrics) -> tuple[Sampler, Scheduler]:
    scheduler = Scheduler(ManualClock(1_000_000))
    sampler = Sampler(metrics, view)  # type: ignore[arg-type]
    scheduler.every("series-sample", sampler.interval_ms, lambda now: sampler.sample(now))
    return sampler, scheduler


def test_store_keeps_a_fixed_number_of_points_and_series() -> None:
    store = SeriesStore(points=10, max_series=3)
    for t in range(100):
        for name in ("a", "b", "c", "d"):
            store.add(name, t, {"v": t})
    assert store.names() == ["a", "b", "c"] and store.refused == 100
    for name in store.names():
        s = store.get(name)
        assert s is not None and len(s.points) == 10
        assert [p["t"] for p in s.points] == list(range(90, 100))


def test_store_inactive_points_extend_only_and_idle_series_are_pruned() -> None:
    store = SeriesStore(points=10, max_series=3)
    store.add("idle", 0, {"v": 0}, active=False)
    assert "idle" not in store
    store.add("busy", 0, {"v": 1})
    store.add("busy", 1, {"v": 0}, active=False)
    s = store.get("busy")
    assert s is not None and len(s.points) == 2
    store.prune(now_ms=5, window_ms=10)
    assert "busy" in store
    store.prune(now_ms=100, window_ms=10)
    assert len(store) == 0


def test_an_hour_with_a_thousand_topics_stays_bounded() -> None:
    metrics = BrokerMetrics()
    view = _View()
    for g in range(300):
        view.generations[f"g{g}"] = 1
        view.lags[f"g{g}"] = [{"topic": f"t{g}", "partition": p, "committed": 0,
                               "lag": 5, "log_end_offset": 5} for p in range(40 if g == 1 else 2)]
    sampler, scheduler = _sampled(view, metrics)
    steps = HOUR_MS // SAMPLE_MS
    for step in range(steps):
        for i in range(step % 50, 1000, 50):  # each topic busy once in 50 samples
            metrics.produced(f"t{i}", 50, 5000)
            metrics.fetched(f"t{i}", 100)
        metrics.api(0).observe(0.001)
        if step % 100 == 0:
            view.generations = {g: gen + 1 for g, gen in view.generations.items()}
        scheduler.advance(SAMPLE_MS)
    for store in (sampler.topics, sampler.groups, sampler.nodes):
        assert len(store) <= MAX_SERIES
        for name in store.names():
            s = store.get(name)
            assert s is not None and len(s.points) <= POINTS and len(s.marks) <= store.marks
    assert len(sampler.topics) == MAX_SERIES and sampler.topics.refused > 0
    assert len(sampler.groups) == MAX_SERIES and sampler.groups.refused > 0
    # A series kept has the whole window; a group's per-partition lag is capped per point.
    for name in sampler.groups.names():
        g = sampler.groups.get(name)
        assert g is not None and len(g.points) == POINTS
        assert all(len(p["partitions"]) <= 32 for p in g.points)
        assert 0 < len(g.marks) <= sampler.groups.marks  # a rebalance every 100 samples
    g1 = sampler.groups.get("g1")
    assert g1 is not None and len(g1.points[-1]["partitions"]) == 32
    assert g1.points[-1]["lag"] == 40 * 5
    assert sampler.topics.point_count() <= MAX_SERIES * (POINTS + sampler.topics.marks)
    kept = sampler.topics.get(sampler.topics.names()[0])
    assert kept is not None and len(kept.points) == POINTS
    assert max(p["records_in_per_s"] for p in kept.points) == 50 / (SAMPLE_MS / 1000)


def test_rates_lag_and_rebalances_follow_the_manual_clock() -> None:
    metrics = BrokerMetrics()
    view = _View()
    view.generations["g"] = 1
    view.lags["g"] = [{"topic": "t", "partition": 0, "committed": 0, "lag": 0}]
    sampler, scheduler = _sampled(view, metrics)
    scheduler.advance(SAMPLE_MS)  # the baseline
    assert sampler.topic("t")["points"] == []
    metrics.produced("t", 10, 1000)
    metrics.fetched("t", 500)
    view.lags["g"] = [{"topic": "t", "partition": 0, "committed": 4, "lag": 6}]
    scheduler.advance(SAMPLE_MS)
    view.generations["g"] = 2
    view.generations["late"] = 1  # a group seen after the first sample: its join marked
    scheduler.advance(SAMPLE_MS)
    points = sampler.topic("t")["points"]
    assert points[0] == {"t": 1_000_000 + 2 * SAMPLE_MS, "records_in_per_s": 5.0,
                         "bytes_in_per_s": 500.0, "records_out_per_s": 2.0,
                         "bytes_out_per_s": 250.0}
    assert points[1]["records_in_per_s"] == 0.0  # idle after: the series goes on at 0
    group = sampler.group("g")
    assert [p["lag"] for p in group["points"]] == [0, 6, 6]
    assert group["points"][1]["partitions"] == {"t-0": 6}
    assert group["marks"] == [{"t": 1_000_000 + 3 * SAMPLE_MS, "kind": "rebalance",
                               "generation": 2, "state": "Stable"}]
    assert [m["generation"] for m in sampler.group("late")["marks"]] == [1]
    nodes = sampler.all_nodes()
    assert [p["t"] for p in nodes["process"]["points"]] == [
        1_000_000 + k * SAMPLE_MS for k in (2, 3)]
    assert ALL_NODES not in nodes["nodes"] and "1" in nodes["nodes"]
