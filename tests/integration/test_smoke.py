"""The three Python clients reach a broker started on port 0 and read its metadata."""

from __future__ import annotations

import asyncio

from aiokafka.admin import AIOKafkaAdminClient
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from kafkalite.broker.testing.fixtures import BrokerThread


def test_confluent_sees_cluster(broker: BrokerThread) -> None:
    md = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    assert broker.broker is not None
    assert md.cluster_id == broker.broker.cluster_id
    assert [b.port for b in md.brokers.values()] == [broker.port]


def test_kafka_python_and_aiokafka_connect(broker: BrokerThread) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        assert admin.list_topics() == []
    finally:
        admin.close()

    async def run() -> list[str]:
        a = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await a.start()
        try:
            return list(await a.list_topics())
        finally:
            await a.close()

    assert asyncio.run(run()) == []
