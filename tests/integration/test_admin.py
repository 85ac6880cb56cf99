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
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpConfigResourceType
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic

from broker.testing import BrokerThread


def catalog_topic(broker: BrokerThread, name: str) -> Any:
    assert broker.broker is not None
    return broker.call(lambda: broker.broker.topics.get(name))  # type: ignore[union-attr]


def test_kafka_python_admin_lifecycle(broker: BrokerThread) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([KpNewTopic("kp-topic", 3, 1, topic_configs={"retention.ms": "1000"})])
        assert "kp-topic" in admin.list_topics()
        (desc,) = admin.describe_topics(["kp-topic"])
        assert desc["error_code"] == 0
        assert len(desc["partitions"]) == 3
        info = catalog_topic(broker, "kp-topic")
        assert uuid.UUID(str(desc["topic_id"])) == info.topic_id
        res = [KpConfigResource(KpConfigResourceType.TOPIC, "kp-topic")]
        modified = admin.describe_configs(res)["topic"]["kp-topic"]
        assert {k: v["value"] for k, v in modified.items()} == {"retention.ms": "1000"}
        assert modified["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        every = admin.describe_configs(res, config_filter="all")["topic"]["kp-topic"]
        assert every["cleanup.policy"]["value"] == "delete"
        assert every["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
        admin.delete_topics(["kp-topic"])
        assert "kp-topic" not in admin.list_topics()
        assert catalog_topic(broker, "kp-topic") is None
    finally:
        admin.close()


def test_aiokafka_admin_lifecycle(broker: BrokerThread) -> None:
    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([AioNewTopic("aio-topic", 2, 1)])
            assert "aio-topic" in await admin.list_topics()
            (desc,) = await admin.describe_topics(["aio-topic"])
            assert len(desc["partitions"]) == 2
            # aiokafka's protocol tables stop at Metadata v5, which carries no topic ids.
            assert catalog_topic(broker, "aio-topic").topic_id.int != 0
            (cfg,) = await admin.describe_configs(
                [AioConfigResource(AioConfigResourceType.TOPIC, "aio-topic")]
            )
            names = {e[0] for e in cfg.resources[0][4]}
            assert {"retention.ms", "cleanup.policy", "segment.bytes"} <= names
            await admin.delete_topics(["aio-topic"])
            assert "aio-topic" not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(run())


def test_confluent_admin_lifecycle(broker: BrokerThread) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("cf-topic", 4, 1, config={"cleanup.policy": "compact"})])[
        "cf-topic"
    ].result(10)
    md = admin.list_topics(timeout=10)
    assert len(md.topics["cf-topic"].partitions) == 4
    desc = admin.describe_topics(TopicCollection(["cf-topic"]))["cf-topic"].result(10)
    info = catalog_topic(broker, "cf-topic")
    assert str(desc.topic_id) and len(desc.partitions) == 4
    assert uuid.UUID(bytes=_uuid_bytes(desc.topic_id)) == info.topic_id
    res = ConfigResource("topic", "cf-topic")
    cfg = admin.describe_configs([res])[res].result(10)
    assert cfg["cleanup.policy"].value == "compact"
    assert cfg["cleanup.policy"].source == 1  # DYNAMIC_TOPIC_CONFIG
    assert cfg["retention.ms"].is_default

    # Grow, alter live, and refuse what a one-broker Kafka refuses.
    admin.create_partitions([NewPartitions("cf-topic", 6)])["cf-topic"].result(10)
    assert catalog_topic(broker, "cf-topic").partitions == 6
    with pytest.raises(KafkaException, match="INVALID_PARTITIONS"):
        admin.create_partitions([NewPartitions("cf-topic", 2)])["cf-topic"].result(10)
    with pytest.raises(KafkaException, match="INVALID_REPLICATION_FACTOR"):
        admin.create_topics([NewTopic("cf-rf3", 1, 3)])["cf-rf3"].result(10)
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        admin.create_topics([NewTopic("cf-topic", 1, 1)])["cf-topic"].result(10)

    admin.delete_topics(["cf-topic"])["cf-topic"].result(10)
    assert "cf-topic" not in admin.list_topics(timeout=10).topics


def _uuid_bytes(tid: Any) -> bytes:
    most = tid.get_most_significant_bits() & (2**64 - 1)
    least = tid.get_least_significant_bits() & (2**64 - 1)
    return most.to_bytes(8, "big") + least.to_bytes(8, "big")


def test_kcat_lists_topic(broker: BrokerThread) -> None:
    assert shutil.which("kcat"), "kcat is required (scripts/test.sh installs it)"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("kcat-topic", 2, 1)])["kcat-topic"].result(10)
    out = subprocess.run(
        ["kcat", "-L", "-b", broker.bootstrap, "-m", "10"],
        capture_output=True, text=True, timeout=30, check=True,
    ).stdout
    assert 'topic "kcat-topic" with 2 partitions' in out
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
