"""Topic administration with the real clients: kafka-python, aiokafka, confluent-kafka, kcat."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import uuid
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from aiokafka.admin.config_resource import ConfigResource as AioConfigResource
from aiokafka.admin.config_resource import ConfigResourceType as AioConfigResourceType
from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpConfigResourceType
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic

from kafkalite.broker.testing.fixtures import BrokerThread


def catalog_topic(broker: BrokerThread, name: str) -> Any:
    assert broker.broker is not None
    return broker.call(lambda: broker.broker.topics.get(name))  # type: ignore[union-attr]


def unique(prefix: str) -> str:
    """Topic names unique per run: the lifecycle tests may share an external broker."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def confluent_topic_id(bootstrap: str, name: str) -> uuid.UUID:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    desc = admin.describe_topics(TopicCollection([name]))[name].result(10)
    return uuid.UUID(bytes=_uuid_bytes(desc.topic_id))


def test_kafka_python_admin_lifecycle(kafka_bootstrap: str) -> None:
    topic = unique("kp")
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([KpNewTopic(topic, 3, 1, topic_configs={"retention.ms": "1000"})])
        assert topic in admin.list_topics()
        (desc,) = admin.describe_topics([topic])
        assert desc["error_code"] == 0
        assert len(desc["partitions"]) == 3
        topic_id = uuid.UUID(str(desc["topic_id"]))
        assert topic_id.int != 0
        assert topic_id == confluent_topic_id(kafka_bootstrap, topic)
        res = [KpConfigResource(KpConfigResourceType.TOPIC, topic)]
        modified = admin.describe_configs(res)["topic"][topic]
        assert {k: v["value"] for k, v in modified.items()} == {"retention.ms": "1000"}
        assert modified["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        every = admin.describe_configs(res, config_filter="all")["topic"][topic]
        assert every["cleanup.policy"]["value"] == "delete"
        assert every["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
        admin.delete_topics([topic])
        assert topic not in admin.list_topics()
    finally:
        admin.close()


def test_aiokafka_admin_lifecycle(kafka_bootstrap: str) -> None:
    topic = unique("aio")

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        await admin.start()
        try:
            await admin.create_topics([AioNewTopic(topic, 2, 1)])
            assert topic in await admin.list_topics()
            (desc,) = await admin.describe_topics([topic])
            assert len(desc["partitions"]) == 2
            # aiokafka's protocol tables stop at Metadata v5, which carries no topic ids;
            # the id is read with another client.
            assert confluent_topic_id(kafka_bootstrap, topic).int != 0
            (cfg,) = await admin.describe_configs(
                [AioConfigResource(AioConfigResourceType.TOPIC, topic)]
            )
            names = {e[0] for e in cfg.resources[0][4]}
            assert {"retention.ms", "cleanup.policy", "segment.bytes"} <= names
            await admin.delete_topics([topic])
            assert topic not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(run())


def test_confluent_admin_lifecycle(kafka_bootstrap: str) -> None:
    topic = unique("cf")
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 4, 1, config={"cleanup.policy": "compact"})])[
        topic
    ].result(10)
    md = admin.list_topics(timeout=10)
    assert len(md.topics[topic].partitions) == 4
    desc = admin.describe_topics(TopicCollection([topic]))[topic].result(10)
    assert len(desc.partitions) == 4
    assert uuid.UUID(bytes=_uuid_bytes(desc.topic_id)).int != 0
    res = ConfigResource("topic", topic)
    cfg = admin.describe_configs([res])[res].result(10)
    assert cfg["cleanup.policy"].value == "compact"
    assert cfg["cleanup.policy"].source == 1  # DYNAMIC_TOPIC_CONFIG
    assert cfg["retention.ms"].is_default

    # Grow, alter live, and refuse what a one-broker Kafka refuses.
    admin.create_partitions([NewPartitions(topic, 6)])[topic].result(10)
    assert len(admin.list_topics(timeout=10).topics[topic].partitions) == 6
    alter = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("retention.ms", "5000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.APPEND),
    ])
    admin.incremental_alter_configs([alter])[alter].result(10)
    cfg = admin.describe_configs([res])[res].result(10)
    assert cfg["retention.ms"].value == "5000"
    assert cfg["cleanup.policy"].value == "compact,delete"
    with pytest.raises(KafkaException, match="INVALID_PARTITIONS"):
        admin.create_partitions([NewPartitions(topic, 2)])[topic].result(10)
    with pytest.raises(KafkaException, match="INVALID_REPLICATION_FACTOR"):
        rf3 = unique("cf-rf3")
        admin.create_topics([NewTopic(rf3, 1, 3)])[rf3].result(10)
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)

    admin.delete_topics([topic])[topic].result(10)
    assert topic not in admin.list_topics(timeout=10).topics


def _uuid_bytes(tid: Any) -> bytes:
    most = tid.get_most_significant_bits() & (2**64 - 1)
    least = tid.get_least_significant_bits() & (2**64 - 1)
    return most.to_bytes(8, "big") + least.to_bytes(8, "big")


def test_kcat_lists_topic(kafka_bootstrap: str) -> None:
    assert shutil.which("kcat"), "kcat is required (scripts/test.sh installs it)"
    topic = unique("kcat")
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(10)
    out = subprocess.run(
        ["kcat", "-L", "-b", kafka_bootstrap, "-m", "10"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout
    assert f'topic "{topic}" with 2 partitions' in out
    assert "1 brokers:" in out


def test_restart_keeps_cluster_id_topics_and_ids(broker: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("durable-topic", 3, 1)])["durable-topic"].result(10)
    assert broker.broker is not None
    cluster_id = broker.broker.cluster_id
    topic_id = catalog_topic(broker, "durable-topic").topic_id
    broker.restart()
    assert broker.broker is not None
    assert broker.broker.cluster_id == cluster_id
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    md = admin.list_topics(timeout=10)
    assert md.cluster_id == cluster_id
    assert len(md.topics["durable-topic"].partitions) == 3
    desc = admin.describe_topics(TopicCollection(["durable-topic"]))["durable-topic"].result(10)
    assert uuid.UUID(bytes=_uuid_bytes(desc.topic_id)) == topic_id
