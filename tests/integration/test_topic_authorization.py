"""Topic admin and Metadata authorize per topic, as Kafka: a denied topic gets
TOPIC_AUTHORIZATION_FAILED while the rest of the request is served."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from kafkalite.broker.auth import Action, Operation, ResourceType
from kafkalite.broker.testing.fixtures import BrokerThread


class DenySecret:
    """Denies everything on topics named secret-*, and CREATE on the cluster."""

    def authorize(self, principal: str, action: Action, host: str = "") -> bool:
        if action.resource_type == ResourceType.TOPIC:
            return not action.name.startswith("secret-")
        return not (action.resource_type == ResourceType.CLUSTER
                    and action.operation == Operation.CREATE)


@pytest.fixture
def admin(broker: BrokerThread) -> AdminClient:
    b = broker.broker
    assert b is not None

    def setup() -> None:
        b.create_topic("secret-a", 1)
        b.apis.authorizer = DenySecret()

    broker.call(setup)
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def test_create_delete_and_configs_per_topic(admin: AdminClient) -> None:
    futures = admin.create_topics([NewTopic("secret-b", 1, 1), NewTopic("open-b", 1, 1)])
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        futures["secret-b"].result(10)
    futures["open-b"].result(10)  # CREATE on the topic suffices without the cluster's

    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        admin.delete_topics(["secret-a"])["secret-a"].result(10)
    secret, open_ = ConfigResource("topic", "secret-a"), ConfigResource("topic", "open-b")
    got = admin.describe_configs([secret, open_])
    with pytest.raises(KafkaException, match="TOPIC_AUTHORIZATION_FAILED"):
        got[secret].result(10)
    assert got[open_].result(10)["cleanup.policy"].value == "delete"


def test_metadata_hides_denied_topics(admin: AdminClient) -> None:
    admin.create_topics([NewTopic("open-c", 1, 1)])["open-c"].result(10)
    md = admin.list_topics(timeout=10)
    assert "open-c" in md.topics and "secret-a" not in md.topics
    md = admin.list_topics(topic="secret-a", timeout=10)
    err = md.topics["secret-a"].error
    assert err is not None and err.name() == "TOPIC_AUTHORIZATION_FAILED"
