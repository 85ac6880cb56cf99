"""Prometheus metrics, with the names Kafka's JMX exporter gives Kafka's own metrics.

The request path only bumps plain ints and floats (a counter, a sum and a histogram
bucket per API key; messages and bytes per topic): prometheus-client's labelled metrics
take a lock and a label lookup per call, which the heartbeat path cannot afford. When
``/metrics`` is scraped a collector turns the numbers into metric families, and reads
group state from the coordinator at that moment. prometheus-client itself is imported
only then, so a broker nobody scrapes never loads it.

Names follow the JMX exporter's rendering of Kafka's MBeans (lower case, type and name
joined): ``kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=T`` becomes
``kafka_server_brokertopicmetrics_messagesin_total{topic="T"}``. Metrics Kafka has no
equivalent for start with ``kafkalite_``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple

from kafkalite.coordinator.classic.states import GroupState

from .control.faults import FaultRule, api_display_name

if TYPE_CHECKING:
    from prometheus_client.core import Metric

#: Upper bounds (ms) of the request time histogram buckets.
BUCKETS_MS: tuple[float, ...] = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500,
                                 1000, 2500, 5000, 10000, 30000)
#: The same in seconds, what the request path measures in (floats throughout: comparing
#: a float with an int costs more).
BUCKETS_S: tuple[float, ...] = tuple(b / 1000 for b in BUCKETS_MS)
FIRST_BUCKET_S = BUCKETS_S[0]

#: Group states in the order Kafka's GroupMetadataManager gauges name them.
GROUP_STATES: tuple[str, ...] = tuple(s.value for s in GroupState)


class GroupRow(NamedTuple):
    group_id: str
    state: str
    members: int
    generation: int


class ApiStats:
    """One API's requests: the time histogram's buckets and the total time. The count is
    the buckets' sum, so the request path does two updates per request."""

    __slots__ = ("api_key", "buckets", "sum_s")

    def __init__(self, api_key: int) -> None:
        self.api_key = api_key
        self.sum_s = 0.0
        self.buckets = [0] * (len(BUCKETS_S) + 1)

    def observe(self, seconds: float) -> None:
        self.sum_s += seconds
        # Most requests (heartbeats) answer within the first bucket: skip the search.
        self.buckets[0 if seconds <= FIRST_BUCKET_S else bisect_left(BUCKETS_S, seconds)] += 1

    @property
    def count(self) -> int:
        return sum(self.buckets)


class NodeApiStats(ApiStats):
    """One API's requests to one node of a process of several: its own buckets, and the
    process-wide ``ApiStats`` of the API bumped too (``/metrics`` reads those)."""

    __slots__ = ("total",)

    def __init__(self, api_key: int, total: ApiStats) -> None:
        super().__init__(api_key)
        self.total = total

    def observe(self, seconds: float) -> None:
        super().observe(seconds)
        self.total.observe(seconds)


class BrokerMetrics:
    """The numbers the broker bumps; ``render()`` gives the exposition text."""

    def __init__(self, groups: Callable[[], Iterable[GroupRow]] | None = None) -> None:
        self.apis: dict[int, ApiStats] = {}
        #: With several nodes in the process: node id -> api key -> that node's requests.
        self.node_apis: dict[int, dict[int, NodeApiStats]] = {}
        self.messages_in: dict[str, int] = {}
        self.bytes_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}
        #: With several nodes in the process: (node id, topic) -> bytes each node sent.
        self.node_bytes_out: dict[tuple[int, str], int] = {}
        self.faults_fired: dict[tuple[str, str], int] = {}
        #: Reads group state at scrape time.
        self.groups = groups
        #: Completed rebalances: generations seen advance between scrapes (see _Collector).
        self.rebalances = 0
        self._generations: dict[str, int] = {}
        #: The Schema Registry's operation counts (set when it is on).
        self.schema_registry: Callable[[], Mapping[str, int]] | None = None
        #: The share-partitions' counters (``broker.share.stats.ShareCounters.totals``).
        self.share: Callable[[], Mapping[str, int]] | None = None
        #: The connected clients and their pushed metrics (``telemetry.clients``).
        self.clients: Callable[[], Iterable[Metric]] | None = None
        #: The quotas' rates and throttle times (``quotas.metrics``).
        self.quotas: Callable[[], Iterable[Metric]] | None = None

    # --- the request path -----------------------------------------------------------------

    def api(self, api_key: int) -> ApiStats:
        """The stats object dispatch bumps for ``api_key`` (one per key, made once)."""
        stats = self.apis.get(api_key)
        if stats is None:
            stats = self.apis[api_key] = ApiStats(api_key)
        return stats

    def node_api(self, api_key: int, node: int) -> NodeApiStats:
        """The stats object of ``api_key`` on node ``node`` (several nodes only)."""
        per = self.node_apis.setdefault(node, {})
        stats = per.get(api_key)
        if stats is None:
            stats = per[api_key] = NodeApiStats(api_key, self.api(api_key))
        return stats

    def produced(self, topic: str, messages: int, size: int) -> None:
        """An append of ``messages`` records in ``size`` bytes of batches to ``topic``."""
        self.messages_in[topic] = self.messages_in.get(topic, 0) + messages
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + size

    def fetched(self, topic: str, size: int) -> None:
        """``size`` bytes of record batches of ``topic`` in a Fetch response."""
        self.bytes_out[topic] = self.bytes_out.get(topic, 0) + size

    def node_fetched(self, node: int, topic: str, size: int) -> None:
        """``size`` bytes of ``topic`` sent by node ``node`` (several nodes only)."""
        key = (node, topic)
        self.node_bytes_out[key] = self.node_bytes_out.get(key, 0) + size

    def fault_fired(self, rule: FaultRule) -> None:
        key = (api_display_name(rule.api_key), rule.action.value)
        self.faults_fired[key] = self.faults_fired.get(key, 0) + 1

    # --- scraping -------------------------------------------------------------------------

    def group_rows(self) -> list[GroupRow]:
        rows = list(self.groups()) if self.groups is not None else []
        # A generation moves by one per completed rebalance; counting the steps seen
        # keeps the counter monotonic when a group is deleted and made again.
        seen = self._generations
        for row in rows:
            before = seen.get(row.group_id, 0)
            if row.generation > before:
                self.rebalances += row.generation - before
            seen[row.group_id] = row.generation
        return rows

    def render(self) -> bytes:
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.registry import Collector

        metrics = self

        class _Collector(Collector):
            def collect(self) -> Iterator[Metric]:
                return _collect(metrics)

        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector())
        out: bytes = generate_latest(registry)
        return out


def _collect(m: BrokerMetrics) -> Iterator[Metric]:
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
    )

    for name, doc, values in (
        ("messagesin", "Records appended per topic (Kafka: BrokerTopicMetrics "
         "MessagesInPerSec)", m.messages_in),
        ("bytesin", "Bytes of record batches appended per topic (Kafka: "
         "BrokerTopicMetrics BytesInPerSec)", m.bytes_in),
        ("bytesout", "Bytes of record batches sent in Fetch responses per topic "
         "(Kafka: BrokerTopicMetrics BytesOutPerSec)", m.bytes_out),
    ):
        family = CounterMetricFamily(f"kafka_server_brokertopicmetrics_{name}", doc,
                                     labels=["topic"])
        for topic, n in sorted(values.items()):
            family.add_metric([topic], n)
        yield family
    if m.node_bytes_out:
        # Each Kafka broker exposes its own BytesOut; the nodes of one process share
        # this endpoint, so the node is a label.
        per_node = CounterMetricFamily(
            "kafkalite_node_bytesout",
            "Bytes of record batches each node sent in Fetch responses, per topic (Kafka: "
            "each broker's BrokerTopicMetrics BytesOutPerSec)", labels=["node", "topic"])
        for (node, topic), n in sorted(m.node_bytes_out.items()):
            per_node.add_metric([str(node), topic], n)
        yield per_node
    reqs = CounterMetricFamily(
        "kafka_network_requestmetrics_requests",
        "Requests answered per API (Kafka: RequestMetrics RequestsPerSec)",
        labels=["request"])
    hist = HistogramMetricFamily(
        "kafka_network_requestmetrics_totaltimems",
        "Time from dispatch of a request to its response being ready, ms (Kafka: "
        "RequestMetrics TotalTimeMs); request=\"Heartbeat\" is the heartbeat latency",
        labels=["request"])
    for key, a in sorted(m.apis.items()):
        count = a.count
        if not count:
            continue
        name = api_display_name(key)
        reqs.add_metric([name], count)
        cumulative = 0
        buckets: list[tuple[str, float]] = []
        for bound, n in zip((*BUCKETS_MS, float("inf")), a.buckets, strict=True):
            cumulative += n
            buckets.append(("+Inf" if bound == float("inf") else repr(float(bound)),
                            cumulative))
        hist.add_metric([name], buckets, a.sum_s * 1000)
    yield reqs
    yield hist
    fired = CounterMetricFamily(
        "kafkalite_fault_rules_fired", "Requests a fault rule fired on",
        labels=["request", "action"])
    for (api, action), n in sorted(m.faults_fired.items()):
        fired.add_metric([api, action], n)
    yield fired
    if m.schema_registry is not None:
        ops = CounterMetricFamily(
            "kafkalite_schema_registry_operations",
            "Schema Registry operations: registrations (new and existing), lookups, reads "
            "by id and version, deletes, compatibility checks, records refused by "
            "broker-side validation", labels=["operation"])
        for op, n in sorted(m.schema_registry().items()):
            ops.add_metric([op], n)
        yield ops

    if m.share is not None:
        yield from _share_families(m.share())
    if m.clients is not None:
        yield from m.clients()
    if m.quotas is not None:
        yield from m.quotas()

    rows = m.group_rows()
    by_state = dict.fromkeys(GROUP_STATES, 0)
    members = GaugeMetricFamily(
        "kafkalite_group_members", "Members of each group", labels=["group"])
    for row in rows:
        by_state[row.state] = by_state.get(row.state, 0) + 1
        members.add_metric([row.group_id], row.members)
    prefix = "kafka_coordinator_group_groupmetadatamanager_numgroups"
    yield GaugeMetricFamily(prefix, "Groups (Kafka: GroupMetadataManager NumGroups)",
                            value=len(rows))
    for state in GROUP_STATES:
        yield GaugeMetricFamily(
            prefix + state.lower(),
            f"Groups in state {state} (Kafka: GroupMetadataManager NumGroups{state})",
            value=by_state[state])
    yield members
    yield CounterMetricFamily(
        "kafka_server_group_coordinator_metrics_group_completed_rebalance",
        "Completed rebalances of classic groups (Kafka: group-coordinator-metrics "
        "group-completed-rebalance-count)", value=m.rebalances)


def _share_families(totals: Mapping[str, int]) -> Iterator[Metric]:
    """Share groups' record counters (KIP-932). Acknowledgements are Kafka's
    ShareGroupMetrics RecordAcknowledgementsPerSec by ack type; the rest are kafkalite's."""
    from prometheus_client.core import CounterMetricFamily

    acks = CounterMetricFamily(
        "kafka_server_sharegroupmetrics_recordacknowledgements",
        "Records acknowledged by share consumers, per acknowledgement type (Kafka: "
        "ShareGroupMetrics RecordAcknowledgementsPerSec)", labels=["ackType"])
    for name, n in sorted(totals.items()):
        if name.startswith("ack:"):
            acks.add_metric([name[4:].capitalize()], n)
    yield acks
    for name, doc in (
        ("acquired", "Records acquired by share consumers (each delivery counts)"),
        ("redelivered", "Acquisitions of records delivered before"),
        ("lock_expiries", "Acquisition locks that expired, the record made available again "
         "or archived"),
        ("archived_at_limit", "Records archived on reaching share.delivery.count.limit"),
    ):
        yield CounterMetricFamily(f"kafkalite_share_records_{name}", doc,
                                  value=totals.get(name, 0))
