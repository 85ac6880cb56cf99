"""Broker configs as a real client reads them: three nodes in racks RACK1..RACK3 each
report their own id, rack and listeners through DescribeConfigs (confluent-kafka's
AdminClient, one request per broker); each node has its own dynamic level beside the
cluster default (confluent-kafka and kafka-configs); the internal topics take Kafka's
default replication factor of 3, capped at the nodes there are; ``advertised.listeners``
is read-only; and a broker started as franz-go's CI starts Kafka (rebalance protocols
classic, consumer, share) serves a consumer group."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_tool, tools_log_config

CONFIGS = "org.apache.kafka.tools.ConfigCommand"

NODES = 3


def describe_brokers(admin: AdminClient, ids: list[int]) -> dict[int, dict[str, object]]:
    # The client sends each broker's request to that broker, one broker per call.
    out = {}
    for i in ids:
        [(_r, future)] = admin.describe_configs([ConfigResource(ResourceType.BROKER,
                                                                str(i))]).items()
        out[i] = future.result(15)
    return out


def test_each_of_three_nodes_reports_its_own_rack_and_id(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker({"broker.rack": "RACK1,RACK2,RACK3"}, nodes=NODES)
    admin = AdminClient({"bootstrap.servers": ",".join(broker.bootstraps)})
    described = describe_brokers(admin, [1, 2, 3])
    for node, entries in described.items():
        assert entries["broker.rack"].value == f"RACK{node}"  # type: ignore[attr-defined]
        assert entries["node.id"].value == str(node)  # type: ignore[attr-defined]
        # The port the node was given (configured port 0: any free port, on every node).
        assert entries["listeners"].value.startswith("PLAINTEXT://")  # type: ignore[attr-defined]
        rf = entries["offsets.topic.replication.factor"]
        assert (rf.value, rf.is_default) == ("3", True)  # type: ignore[attr-defined]
        assert entries["advertised.listeners"].is_read_only  # type: ignore[attr-defined]
    # A client counting racks from the brokers' configs sees three.
    assert {e["broker.rack"].value for e in described.values()} == {  # type: ignore[attr-defined]
        "RACK1", "RACK2", "RACK3"}
    # The metadata the client uses agrees with the configs.
    meta = admin.list_topics(timeout=10)
    assert sorted(meta.brokers) == [1, 2, 3]


def _alter_broker(admin: AdminClient, name: str, **values: str) -> None:
    entries = [ConfigEntry(k.replace("_", "."), v,
                           incremental_operation=AlterConfigOpType.SET)
               for k, v in values.items()]
    [(_r, future)] = admin.incremental_alter_configs(
        [ConfigResource(ResourceType.BROKER, name, incremental_configs=entries)]).items()
    future.result(15)


def test_each_node_has_its_own_dynamic_configs(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    """kafka-configs --entity-type brokers --entity-name N sets node N's own level; the
    cluster default (empty name) reaches every node; both outlive a restart."""
    broker = make_broker({}, nodes=NODES)
    admin = AdminClient({"bootstrap.servers": ",".join(broker.bootstraps)})
    _alter_broker(admin, "1", message_max_bytes="2000000")
    _alter_broker(admin, "2", message_max_bytes="3000000", compression_gzip_level="5")
    # The cluster default, as kafka-configs --entity-default sets it.
    log = tools_log_config(tmp_path)
    assert run_tool(CONFIGS, "--bootstrap-server", broker.bootstraps[1], "--entity-type",
                    "brokers", "--entity-default", "--alter", "--add-config",
                    "log.cleaner.backoff.ms=20000", log_config=log).stdout == (
        "Completed updating default config for brokers in the cluster.\n")

    def check(described: dict[int, dict[str, object]]) -> None:
        values = {n: {k: (e.value, e.source) for k, e in entries.items()}  # type: ignore[attr-defined]
                  for n, entries in described.items()}
        dyn_broker, dyn_default, default = (ConfigSource.DYNAMIC_BROKER_CONFIG.value,
                                            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
                                            ConfigSource.DEFAULT_CONFIG.value)
        assert values[1]["message.max.bytes"] == ("2000000", dyn_broker)
        assert values[2]["message.max.bytes"] == ("3000000", dyn_broker)
        assert values[3]["message.max.bytes"] == ("1048588", default)
        assert values[2]["compression.gzip.level"] == ("5", dyn_broker)
        assert values[1]["compression.gzip.level"] == ("-1", default)
        assert values[3]["compression.gzip.level"] == ("-1", default)
        for n in (1, 2, 3):
            assert values[n]["log.cleaner.backoff.ms"] == ("20000", dyn_default)
            assert values[n]["node.id"][0] == str(n)

    check(describe_brokers(admin, [1, 2, 3]))
    # kafka-configs --describe of node 2 lists node 2's own level only.
    assert run_tool(CONFIGS, "--bootstrap-server", broker.bootstrap, "--entity-type",
                    "brokers", "--entity-name", "2", "--describe",
                    log_config=log).stdout.splitlines() == [
        "Dynamic configs for broker 2 are:",
        "  compression.gzip.level=5 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        "compression.gzip.level=5, DEFAULT_CONFIG:compression.gzip.level=-1}",
        "  message.max.bytes=3000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        "message.max.bytes=3000000, DEFAULT_CONFIG:message.max.bytes=1048588}",
    ]
    # Deleting node 2's value leaves node 1's.
    entries = [ConfigEntry("message.max.bytes", None,
                           incremental_operation=AlterConfigOpType.DELETE)]
    [(_r, future)] = admin.incremental_alter_configs(
        [ConfigResource(ResourceType.BROKER, "2", incremental_configs=entries)]).items()
    future.result(15)
    described = describe_brokers(admin, [1, 2])
    assert described[2]["message.max.bytes"].value == "1048588"  # type: ignore[attr-defined]
    assert described[1]["message.max.bytes"].value == "2000000"  # type: ignore[attr-defined]
    _alter_broker(admin, "2", message_max_bytes="3000000")
    broker.restart()
    admin = AdminClient({"bootstrap.servers": ",".join(broker.bootstraps)})
    check(describe_brokers(admin, [1, 2, 3]))


def test_internal_topics_replicate_to_three_nodes_by_default(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker({"offsets.topic.num.partitions": "2",
                          "group.initial.rebalance.delay.ms": "0",
                          "default.replication.factor": "3"}, nodes=NODES)
    bootstrap = ",".join(broker.bootstraps)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _commit_one(bootstrap, "rf-default", "rf-topic")
    meta = admin.list_topics("__consumer_offsets", timeout=10)
    partitions = meta.topics["__consumer_offsets"].partitions
    assert len(partitions) == 2
    assert all(len(p.replicas) == 3 for p in partitions.values())


def test_one_node_keeps_its_internal_topics_on_itself(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker({"offsets.topic.num.partitions": "1",
                          "group.initial.rebalance.delay.ms": "0"})
    _commit_one(broker.bootstrap, "rf-one", "rf-one-topic")
    meta = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(
        "__consumer_offsets", timeout=10)
    assert [p.replicas for p in meta.topics["__consumer_offsets"].partitions.values()] == [[1]]


def test_started_as_franz_go_ci_starts_kafka(make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker({"group.coordinator.rebalance.protocols": "classic,consumer,share",
                          "group.initial.rebalance.delay.ms": "0"})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    entries = describe_brokers(admin, [1])[1]
    assert entries["group.coordinator.rebalance.protocols"].value == (  # type: ignore[attr-defined]
        "classic,consumer,share")
    _commit_one(broker.bootstrap, "franz", "franz-topic", protocol="consumer")


def _commit_one(bootstrap: str, group: str, topic: str, protocol: str = "classic") -> None:
    """Produce one record and have a consumer of ``group`` read and commit it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    from confluent_kafka.admin import NewTopic

    admin.create_topics([NewTopic(topic, 1)])[topic].result(15)
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(topic, b"v")
    assert p.flush(15) == 0
    conf: dict[str, object] = {"bootstrap.servers": bootstrap, "group.id": group,
                               "auto.offset.reset": "earliest", "enable.auto.commit": False,
                               "group.protocol": protocol}
    if protocol == "classic":
        conf["session.timeout.ms"] = 6000
    c = Consumer(conf)
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 30
        msg = None
        while msg is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                msg = m
        assert msg is not None and msg.value() == b"v"
        c.commit(msg, asynchronous=False)
    finally:
        c.close()
