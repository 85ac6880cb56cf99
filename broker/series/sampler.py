"""Samples the broker's counters into series on the broker's clock.

The request path only bumps the counters ``BrokerMetrics`` already keeps; this task runs
every ``SAMPLE_MS`` of the broker's clock (the scheduler's, so a manual clock moves it)
and turns their differences into rates: per topic records and bytes in and out, per group
the lag of each partition and in total (rebalances marked), per node the request rate and
mean latency and its bytes sent (stops, starts and isolations marked).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .store import POINTS, SeriesStore

if TYPE_CHECKING:
    from ..admin_http.views import BrokerView
    from ..metrics import BrokerMetrics

#: Sampling interval on the broker's clock.
SAMPLE_MS = 2000
#: Partitions of a group charted one by one (the total counts them all).
MAX_GROUP_PARTITIONS = 32
#: The series name of the whole process in ``nodes``.
ALL_NODES = "all"


class Sampler:
    def __init__(self, metrics: BrokerMetrics, view: BrokerView,
                 interval_ms: int = SAMPLE_MS, points: int = POINTS) -> None:
        self.metrics = metrics
        self.view = view
        self.interval_ms = interval_ms
        self.topics = SeriesStore(points)
        self.groups = SeriesStore(points)
        self.nodes = SeriesStore(points)
        self._last_ms: int | None = None
        self._topic_counts: dict[str, tuple[int, int, int]] = {}
        self._committed: dict[tuple[str, str, int], int] = {}
        self._generations: dict[str, int] = {}
        self._requests = (0, 0.0)
        self._node_bytes: dict[int, int] = {}
        self._node_requests: dict[int, tuple[int, float]] = {}
        self._node_status: dict[int, str] = {}

    @property
    def window_ms(self) -> int:
        return self.interval_ms * self.topics.points

    def sample(self, now: int) -> None:
        """One sample at ``now`` (a scheduler task: runs again after ``interval_ms``)."""
        last, self._last_ms = self._last_ms, now
        # The first sample only sets the baseline; a clock that jumped (manual advance)
        # spreads the difference over the whole gap.
        dt_s = None if last is None or now <= last else (now - last) / 1000
        consumed = self._sample_groups(now, first=last is None)
        self._sample_topics(now, dt_s, consumed)
        self._sample_nodes(now, dt_s)
        for store in (self.topics, self.groups, self.nodes):
            store.prune(now, self.window_ms)

    def _sample_topics(self, now: int, dt_s: float | None,
                       consumed: dict[str, int]) -> None:
        m = self.metrics
        before = self._topic_counts
        counts: dict[str, tuple[int, int, int]] = {}
        for topic in m.messages_in.keys() | m.bytes_out.keys():
            c = counts[topic] = (m.messages_in.get(topic, 0), m.bytes_in.get(topic, 0),
                                 m.bytes_out.get(topic, 0))
            if dt_s is None:
                continue
            prev = before.get(topic, (0, 0, 0))
            d_rec, d_in, d_out = (c[0] - prev[0], c[1] - prev[1], c[2] - prev[2])
            d_con = consumed.get(topic, 0)
            self.topics.add(topic, now, {
                "records_in_per_s": d_rec / dt_s, "bytes_in_per_s": d_in / dt_s,
                "records_out_per_s": d_con / dt_s, "bytes_out_per_s": d_out / dt_s,
            }, active=bool(d_rec or d_in or d_out or d_con))
        self._topic_counts = counts

    def _sample_groups(self, now: int, first: bool) -> dict[str, int]:
        """Each group's lag; returns the records consumed per topic since the last sample
        (how far the groups' committed offsets moved). A generation that moved, or a group
        that appeared after the first sample with one, is marked as a rebalance."""
        view = self.view
        consumed: dict[str, int] = {}
        committed: dict[tuple[str, str, int], int] = {}
        generations: dict[str, int] = {}
        for o in view.groups_query(lambda g: g.overview()):
            gid = o.group_id
            generations[gid] = o.generation
            prev_gen = self._generations.get(gid)
            if (o.generation != prev_gen and o.generation > 0
                    and (prev_gen is not None or not first)):
                self.groups.mark(gid, now, {"kind": "rebalance", "generation": o.generation,
                                            "state": o.state})
            rows = view.lag(gid)
            if not rows:
                continue
            total = 0
            parts: dict[str, int] = {}
            for r in rows:
                key = (gid, r["topic"], r["partition"])
                if r["committed"] is not None:
                    committed[key] = r["committed"]
                    prev = self._committed.get(key)
                    if prev is not None and r["committed"] > prev:
                        consumed[r["topic"]] = (consumed.get(r["topic"], 0)
                                                + r["committed"] - prev)
                if r["lag"] is not None:
                    total += r["lag"]
                    if len(parts) < MAX_GROUP_PARTITIONS:
                        parts[f"{r['topic']}-{r['partition']}"] = r["lag"]
            self.groups.add(gid, now, {"lag": total, "partitions": parts,
                                       "generation": o.generation})
        self._committed = committed
        self._generations = generations
        return consumed

    def _sample_nodes(self, now: int, dt_s: float | None) -> None:
        m = self.metrics
        count = 0
        total_s = 0.0
        for a in m.apis.values():
            count += a.count
            total_s += a.sum_s
        prev_count, prev_s = self._requests
        self._requests = (count, total_s)
        if dt_s is not None:
            n = count - prev_count
            self.nodes.add(ALL_NODES, now, {
                "requests_per_s": n / dt_s,
                "latency_ms": (total_s - prev_s) * 1000 / n if n > 0 else 0.0,
            })
        node_requests: dict[int, tuple[int, float]] = {}
        for node, apis in m.node_apis.items():
            node_requests[node] = (sum(a.count for a in apis.values()),
                                   sum(a.sum_s for a in apis.values()))
        per_node: dict[int, int] = {}
        for (node, _topic), size in m.node_bytes_out.items():
            per_node[node] = per_node.get(node, 0) + size
        switch = self.view.nodes
        for member in self.view.cluster_info.members():
            node = member.node_id
            status = switch.node_status(node) if switch is not None else "running"
            prev_status = self._node_status.get(node)
            if prev_status is not None and status != prev_status:
                self.nodes.mark(str(node), now, {"kind": status, "was": prev_status})
            self._node_status[node] = status
            if dt_s is not None:
                sent = per_node.get(node, 0) - self._node_bytes.get(node, 0)
                c1, s1 = node_requests.get(node, (0, 0.0))
                c0, s0 = self._node_requests.get(node, (0, 0.0))
                n = c1 - c0
                self.nodes.add(str(node), now, {
                    "bytes_out_per_s": sent / dt_s, "status": status,
                    "requests_per_s": n / dt_s,
                    "latency_ms": (s1 - s0) * 1000 / n if n > 0 else 0.0})
        self._node_bytes = per_node
        self._node_requests = node_requests

    # --- reads ----------------------------------------------------------------------------

    def _read(self, store: SeriesStore, name: str) -> dict[str, Any]:
        s = store.get(name)
        out: dict[str, Any] = {"interval_ms": self.interval_ms, "window_ms": self.window_ms}
        out.update(s.to_json() if s is not None else {"points": [], "marks": []})
        return out

    def topic(self, name: str) -> dict[str, Any]:
        return {"topic": name, **self._read(self.topics, name)}

    def group(self, name: str) -> dict[str, Any]:
        return {"group_id": name, **self._read(self.groups, name)}

    def all_nodes(self) -> dict[str, Any]:
        return {"interval_ms": self.interval_ms, "window_ms": self.window_ms,
                "process": self._read(self.nodes, ALL_NODES),
                "nodes": {name: self._read(self.nodes, name)
                          for name in sorted(self.nodes.names()) if name != ALL_NODES}}
