"""Several listeners: Metadata and DescribeCluster answer with the advertised address of
the listener the client connected through (the compose set-up relies on it)."""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from kafkalite.broker.testing.fixtures import BrokerThread


def test_each_listener_advertises_its_own_address(
    make_broker: Callable[..., BrokerThread],
) -> None:
    b = make_broker({
        "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
        # Port 0 in an advertised listener means "the port that listener bound".
        "advertised.listeners": "INTERNAL://localhost:0,EXTERNAL://127.0.0.1:0",
    })
    assert b.broker is not None
    ports = {lst.name: lst.port for lst in b.broker.listeners}
    assert set(ports) == {"INTERNAL", "EXTERNAL"} and ports["INTERNAL"] != ports["EXTERNAL"]

    external = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports['EXTERNAL']}"})
    md = external.list_topics(timeout=10)
    assert [(x.host, x.port) for x in md.brokers.values()] == [("127.0.0.1", ports["EXTERNAL"])]

    # Bootstrapping through INTERNAL returns the internal name, as a container on the
    # compose network would see it.
    internal = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{ports['INTERNAL']}")
    try:
        cluster = internal.describe_cluster()
    finally:
        internal.close()
    assert [(x["host"], x["port"]) for x in cluster["brokers"]] == [
        ("localhost", ports["INTERNAL"])
    ]
    assert cluster["controller_id"] == b.broker.node_id
    assert cluster["cluster_id"] == b.broker.cluster_id
