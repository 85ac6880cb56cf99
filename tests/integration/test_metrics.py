"""``/metrics`` on the admin listener, read with prometheus-client's own text parser while
real clients produce, consume and run a group."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable

from confluent_kafka import Consumer, Producer
from prometheus_client.parser import text_string_to_metric_families

from kafkalite.broker.testing.fixtures import BrokerThread

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(broker: BrokerThread) -> Samples:
    with urllib.request.urlopen(f"{broker.admin_url}/metrics", timeout=10) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain")
        text = resp.read().decode()
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_request_counters_move_as_a_client_produces(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker(admin=True)
    before = scrape(broker)
    assert value(before, "kafka_network_requestmetrics_requests_total", request="Produce") == 0
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(20):
        p.produce("metered", key=b"k", value=b"v%d" % i)
        p.poll(0)
        if i % 5 == 4:
            assert p.flush(10) == 0
    after = scrape(broker)
    produces = value(after, "kafka_network_requestmetrics_requests_total", request="Produce")
    assert produces >= 4
    # The histogram counted every one of them, and its buckets add up.
    assert value(after, "kafka_network_requestmetrics_totaltimems_count",
                 request="Produce") == produces
    assert value(after, "kafka_network_requestmetrics_totaltimems_bucket",
                 request="Produce", le="+Inf") == produces
    assert value(after, "kafka_network_requestmetrics_totaltimems_sum", request="Produce") > 0
    assert value(after, "kafka_network_requestmetrics_requests_total", request="Metadata") >= 1
    assert value(after, "kafka_server_brokertopicmetrics_messagesin_total",
                 topic="metered") == 20
    assert value(after, "kafka_server_brokertopicmetrics_bytesin_total", topic="metered") > 20

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "metered-group",
                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                  "heartbeat.interval.ms": 200})
    c.subscribe(["metered"])
    got = 0
    deadline = time.monotonic() + 30
    while got < 20 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            got += 1
    assert got == 20
    with broker.faults.injected("Heartbeat", error="REBALANCE_IN_PROGRESS", count=1) as rule:
        while rule.fired == 0 and time.monotonic() < deadline:
            c.poll(0.1)
    assert rule.fired == 1
    grouped = scrape(broker)
    c.close()
    assert value(grouped, "kafka_server_brokertopicmetrics_bytesout_total",
                 topic="metered") >= value(after, "kafka_server_brokertopicmetrics_bytesin_total",
                                           topic="metered")
    assert value(grouped, "kafkalite_fault_rules_fired_total", request="Heartbeat",
                 action="error") == 1
    assert value(grouped, "kafka_network_requestmetrics_requests_total",
                 request="Heartbeat") >= 1
    assert value(grouped, "kafka_coordinator_group_groupmetadatamanager_numgroups") == 1
    assert value(grouped, "kafka_coordinator_group_groupmetadatamanager_numgroupsstable") + \
        value(grouped, "kafka_coordinator_group_groupmetadatamanager_numgroupspreparingrebalance") \
        + value(grouped,
                "kafka_coordinator_group_groupmetadatamanager_numgroupscompletingrebalance") == 1
    assert value(grouped, "kafkalite_group_members", group="metered-group") == 1
    assert value(grouped,
                 "kafka_server_group_coordinator_metrics_group_completed_rebalance_total") >= 1
    # Counters never go back.
    later = scrape(broker)
    assert value(later, "kafka_network_requestmetrics_requests_total", request="Produce") == \
        produces
    assert value(later, "kafka_network_requestmetrics_requests_total", request="Heartbeat") >= \
        value(grouped, "kafka_network_requestmetrics_requests_total", request="Heartbeat")
