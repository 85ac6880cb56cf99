"""Prometheus metrics, with the names Kafka's JMX exporter gives Kafka's own metrics.

The dispatch path only bumps plain ints (a counter and a histogram bucket per API key):
prometheus-client's labelled metrics take a lock and a label lookup per call, which the
heartbeat path cannot afford. A collector turns the ints into metric families when
``/metrics`` is scraped, and reads group state from the coordinator at that moment.

Names follow the JMX exporter's rendering of Kafka's MBeans (lower case, type and name
joined): ``kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=T`` becomes
``kafka_server_brokertopicmetrics_messagesin_total{topic="T"}``. Metrics Kafka has no
equivalent for start with ``kafkalite_``.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from .faults import FaultRule, api_display_name

#: Upper bounds (ms) of the request time histogram buckets.
BUCKETS_MS: tuple[float, ...] = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500,
                                 1000, 2500, 5000, 10000, 30000)

_RECORD_COUNT = struct.Struct(">i")
#: Offset of the record count in a v2 batch header; batch length is at 8.
_COUNT_AT = 57
_LENGTH = struct.Struct(">i")


class _Api:
    __slots__ = ("buckets", "count", "errors", "sum_ms")

    def __init__(self) -> None:
        self.count = 0
        self.errors = 0
        self.sum_ms = 0.0
        self.buckets = [0] * (len(BUCKETS_MS) + 1)


class BrokerMetrics:
    """Counters the broker bumps; ``render()`` gives the exposition text."""

    def __init__(self) -> None:
        self.apis: dict[int, _Api] = {}
        self.messages_in: dict[str, int] = {}
        self.bytes_in: dict[str, int] = {}
        self.bytes_out = 0
        self.faults_fired: dict[tuple[str, str], int] = {}
        #: Reads group state at scrape time: () -> iterable of (group, state, members).
        self.groups: Callable[[], Any] | None = None
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(_Collector(self))

    # --- the dispatch path ----------------------------------------------------------------

    def request_done(self, api_key: int, elapsed_ms: float, response_bytes: int) -> None:
        a = self.apis.get(api_key)
        if a is None:
            a = self.apis[api_key] = _Api()
        a.count += 1
        a.sum_ms += elapsed_ms
        a.buckets[bisect.bisect_left(BUCKETS_MS, elapsed_ms)] += 1
        self.bytes_out += response_bytes

    def produced(self, request: Any) -> None:
        """Messages and bytes in per topic, from a Produce request's batch headers."""
        for topic in request.topic_data:
            name = topic.name
            msgs = size = 0
            for part in topic.partition_data:
                records = part.records
                if not records:
                    continue
                size += len(records)
                pos = 0
                end = len(records)
                while pos + _COUNT_AT + 4 <= end:
                    msgs += _RECORD_COUNT.unpack_from(records, pos + _COUNT_AT)[0]
                    pos += 12 + _LENGTH.unpack_from(records, pos + 8)[0]
            self.messages_in[name] = self.messages_in.get(name, 0) + msgs
            self.bytes_in[name] = self.bytes_in.get(name, 0) + size

    def fault_fired(self, rule: FaultRule) -> None:
        key = (api_display_name(rule.api_key), rule.action.value)
        self.faults_fired[key] = self.faults_fired.get(key, 0) + 1

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _Collector(Collector):
    def __init__(self, m: BrokerMetrics) -> None:
        self.m = m

    def collect(self) -> Iterator[Metric]:
        m = self.m
        msgs = CounterMetricFamily(
            "kafka_server_brokertopicmetrics_messagesin",
            "Messages appended per topic (Kafka: BrokerTopicMetrics MessagesInPerSec)",
            labels=["topic"])
        for topic, n in sorted(m.messages_in.items()):
            msgs.add_metric([topic], n)
        yield msgs
        bin_ = CounterMetricFamily(
            "kafka_server_brokertopicmetrics_bytesin",
            "Bytes produced per topic (Kafka: BrokerTopicMetrics BytesInPerSec)",
            labels=["topic"])
        for topic, n in sorted(m.bytes_in.items()):
            bin_.add_metric([topic], n)
        yield bin_
        yield CounterMetricFamily(
            "kafka_server_brokertopicmetrics_bytesout",
            "Bytes sent to clients, all topics (Kafka: BrokerTopicMetrics BytesOutPerSec)",
            value=m.bytes_out)
        reqs = CounterMetricFamily(
            "kafka_network_requestmetrics_requests",
            "Requests answered per API (Kafka: RequestMetrics RequestsPerSec)",
            labels=["request"])
        hist = HistogramMetricFamily(
            "kafka_network_requestmetrics_totaltimems",
            "Time from a request's arrival to its response, ms (Kafka: RequestMetrics "
            "TotalTimeMs)", labels=["request"])
        for key, a in sorted(m.apis.items()):
            name = api_display_name(key)
            reqs.add_metric([name], a.count)
            cumulative = 0
            buckets: list[tuple[str, float]] = []
            for bound, n in zip((*BUCKETS_MS, float("inf")), a.buckets, strict=True):
                cumulative += n
                buckets.append(("+Inf" if bound == float("inf") else repr(float(bound)),
                                cumulative))
            hist.add_metric([name], buckets, a.sum_ms)
        yield reqs
        yield hist
        fired = CounterMetricFamily(
            "kafkalite_fault_rules_fired", "Requests a fault rule fired on",
            labels=["request", "action"])
        for (api, action), n in sorted(m.faults_fired.items()):
            fired.add_metric([api, action], n)
        yield fired
        if m.groups is None:
            return
        by_state: dict[str, int] = {}
        members = GaugeMetricFamily(
            "kafkalite_group_members", "Members of each group", labels=["group"])
        generations = 0
        for gid, state, n, generation in m.groups():
            by_state[state] = by_state.get(state, 0) + 1
            members.add_metric([gid], n)
            generations += generation
        groups = GaugeMetricFamily(
            "kafka_coordinator_group_groupmetadatamanager_numgroups",
            "Groups by state (Kafka: GroupMetadataManager NumGroups, NumGroupsStable, ...)",
            labels=["state"])
        for state in ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty"):
            groups.add_metric([state], by_state.get(state, 0))
        yield groups
        yield members
        yield CounterMetricFamily(
            "kafka_server_group_coordinator_metrics_group_rebalance",
            "Rebalances completed: the sum of the groups' generations (Kafka: "
            "group-coordinator-metrics group-rebalance-count)", value=generations)
