"""Config and cluster admin APIs as a one-broker Kafka answers them."""

from __future__ import annotations

import pytest
from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kafka import errors as kerr
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpConfigResourceType
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic
from kafka.structs import TopicPartition as KpTopicPartition

from kafkalite.broker.testing.fixtures import BrokerThread


@pytest.fixture
def kp(broker: BrokerThread) -> KafkaAdminClient:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    admin.create_topics([KpNewTopic("t", 2, 1)])
    yield admin
    admin.close()


def test_topic_configs_validated_and_applied_live(broker: BrokerThread, kp: KafkaAdminClient
                                                   ) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    bad = ConfigResource("topic", "t", incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException, match="INVALID_CONFIG"):
        admin.incremental_alter_configs([bad])[bad].result(10)
    unknown = ConfigResource("topic", "t", incremental_configs=[
        ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException, match="INVALID_CONFIG"):
        admin.incremental_alter_configs([unknown])[unknown].result(10)
    not_list = ConfigResource("topic", "t", incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.APPEND)])
    with pytest.raises(KafkaException, match="INVALID_CONFIG"):
        admin.incremental_alter_configs([not_list])[not_list].result(10)
    missing = ConfigResource("topic", "nope", incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC_OR_PART"):
        admin.incremental_alter_configs([missing])[missing].result(10)

    changes: list[tuple[str, dict[str, str]]] = []
    assert broker.broker is not None
    catalog = broker.broker.topics
    broker.call(lambda: catalog.listeners.append(lambda ev, info: changes.append(
        (ev, dict(info.configs)))))
    ok = ConfigResource("topic", "t", incremental_configs=[
        ConfigEntry("segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([ok])[ok].result(10)
    assert ("changed", {"segment.bytes": "1048576"}) in changes
    assert broker.call(lambda: broker.broker.topic_config("t", "segment.bytes")) == "1048576"

    delete = ConfigResource("topic", "t", incremental_configs=[
        ConfigEntry("segment.bytes", None, incremental_operation=AlterConfigOpType.DELETE)])
    admin.incremental_alter_configs([delete])[delete].result(10)
    res = ConfigResource("topic", "t")
    cfg = admin.describe_configs([res])[res].result(10)
    assert cfg["segment.bytes"].value == "1073741824" and cfg["segment.bytes"].is_default

    # validate_only checks without applying.
    dry = ConfigResource("topic", "t", incremental_configs=[
        ConfigEntry("retention.ms", "77", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([dry], validate_only=True)[dry].result(10)
    assert admin.describe_configs([res])[res].result(10)["retention.ms"].value == "604800000"


def test_legacy_alter_configs_replaces_the_set(kp: KafkaAdminClient) -> None:
    kp.alter_configs([KpConfigResource(KpConfigResourceType.TOPIC, "t",
                                       configs={"retention.ms": "123"})], incremental=False)
    got = kp.describe_configs([KpConfigResource(KpConfigResourceType.TOPIC, "t")])
    assert {k: v["value"] for k, v in got["topic"]["t"].items()} == {"retention.ms": "123"}


def test_describe_configs_synonyms_and_broker(broker: BrokerThread, kp: KafkaAdminClient
                                              ) -> None:
    got = kp.describe_configs([KpConfigResource(KpConfigResourceType.TOPIC, "t",
                                                configs={"retention.ms": None,
                                                         "segment.bytes": None})],
                              include_synonyms=True, config_filter="all")["topic"]["t"]
    assert set(got) == {"retention.ms", "segment.bytes"}
    entry = got["retention.ms"]
    assert entry["config_type"] == "LONG" and entry["value"] == "604800000"
    # As Kafka: the default comes from log.retention.hours, and synonyms before the first
    # log.retention.ms entry are dropped, so none are listed.
    assert entry["synonyms"] == []
    assert [(s["name"], s["value"], s["source"]) for s in got["segment.bytes"]["synonyms"]] == [
        ("log.segment.bytes", "1073741824", "DEFAULT_CONFIG")
    ]
    brokers = kp.describe_configs([KpConfigResource(KpConfigResourceType.BROKER, "1")],
                                  config_filter="all")["broker"]["1"]
    assert brokers["num.partitions"]["value"] == "1"
    assert brokers["num.partitions"]["read_only"] is True
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource("broker", "1", incremental_configs=[
        ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException, match="Cannot update these configs dynamically"):
        admin.incremental_alter_configs([res])[res].result(10)


def test_create_topics_validation(broker: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    cases = {
        "bad name!": ("TOPIC_EXCEPTION", NewTopic("bad name!", 1, 1)),
        "zero": ("INVALID_PARTITIONS", NewTopic("zero", 0, 1)),
        "badcfg": ("INVALID_CONFIG", NewTopic("badcfg", 1, 1, config={"cleanup.policy": "x"})),
    }
    for name, (code, nt) in cases.items():
        with pytest.raises(KafkaException, match=code):
            admin.create_topics([nt])[name].result(10)
    admin.create_topics([NewTopic("dot.name", 1, 1)])["dot.name"].result(10)
    with pytest.raises(KafkaException, match=r"collides with existing topic: dot\.name"):
        admin.create_topics([NewTopic("dot_name", 1, 1)])["dot_name"].result(10)
    admin.create_topics([NewTopic("dry", 2, 1)], validate_only=True)["dry"].result(10)
    admin.create_topics([NewTopic("dflt", -1, -1)])["dflt"].result(10)
    md = admin.list_topics(timeout=10)
    assert "dry" not in md.topics
    assert len(md.topics["dflt"].partitions) == 1  # num.partitions


def test_internal_topic_cannot_be_deleted(broker: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert broker.broker is not None
    broker.call(lambda: broker.broker.topics.get("__consumer_offsets")
                or broker.broker.create_topic("__consumer_offsets", 1, internal=True))
    with pytest.raises(KafkaException, match="TOPIC_EXCEPTION"):
        admin.delete_topics(["__consumer_offsets"])["__consumer_offsets"].result(10)
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC_OR_PART"):
        admin.delete_topics(["never-was"])["never-was"].result(10)
    md = admin.list_topics(timeout=10)
    assert md.topics["__consumer_offsets"].partitions


def test_one_broker_cluster_answers(broker: BrokerThread, kp: KafkaAdminClient) -> None:
    dirs = kp.describe_log_dirs()
    (entry,) = dirs
    assert entry["broker"] == 1
    (log_dir,) = entry["log_dirs"]
    assert log_dir["error_code"] == 0
    t = {x["name"]: x for x in log_dir["topics"]}["t"]
    assert [p["partition_index"] for p in t["partitions"]] == [0, 1]

    assert kp.list_partition_reassignments() == {}
    moved = kp.alter_partition_reassignments({
        KpTopicPartition("t", 0): [1],
        KpTopicPartition("t", 1): [1, 2],
    })
    assert moved[KpTopicPartition("t", 0)] is None
    assert moved[KpTopicPartition("t", 1)] is kerr.InvalidReplicationAssignmentError

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("t", 0)]).result(10)
    err = result[TopicPartition("t", 0)]
    assert err is not None and err.name() == "ELECTION_NOT_NEEDED"

    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert broker.broker is not None
    assert cluster.cluster_id == broker.broker.cluster_id
    assert cluster.controller.id == 1 and len(cluster.nodes) == 1
    assert cluster.authorized_operations


def test_log_dir_sizes_follow_produced_data(broker: BrokerThread) -> None:
    from confluent_kafka import Producer

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("sized", 1, 1)])["sized"].result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        p.produce("sized", value=b"v" * 500, key=str(i).encode())
    assert p.flush(10) == 0
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        (entry,) = kp.describe_log_dirs()
    finally:
        kp.close()
    (log_dir,) = entry["log_dirs"]
    sized = {t["name"]: t for t in log_dir["topics"]}["sized"]
    assert sized["partitions"][0]["partition_size"] > 20 * 500
