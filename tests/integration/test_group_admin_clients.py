"""Admin clients see and manage groups and offsets: confluent-kafka AdminClient,
kafka-python KafkaAdminClient and the Java Admin/KafkaConsumer."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaException,
)
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_java
from .test_offsets_clients import _ck_consumer, _ck_first_offset, _name, produce


def _wait_state(admin: AdminClient, group: str, state: ConsumerGroupState) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        d = admin.describe_consumer_groups([group])[group].result(10)
        if d.state == state:
            return
        time.sleep(0.1)
    raise AssertionError(f"group {group} never reached {state}")


def test_confluent_admin_groups_and_offsets(broker: BrokerThread) -> None:
    topic, group = _name("adm"), _name("g")
    produce(broker.bootstrap, topic)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    c = _ck_consumer(broker.bootstrap, group)
    c.subscribe([topic])
    _ck_first_offset(c)
    c.commit(offsets=[CkTopicPartition(topic, 0, 2)], asynchronous=False)
    _wait_state(admin, group, ConsumerGroupState.STABLE)

    stable = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(10)
    assert group in {g.group_id for g in stable.valid}
    empty = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(10)
    assert group not in {g.group_id for g in empty.valid}

    d = admin.describe_consumer_groups([group])[group].result(10)
    assert not d.is_simple_consumer_group
    assert d.partition_assignor in ("range", "roundrobin", "cooperative-sticky")
    [m] = d.members
    assert m.client_id == "rdkafka" and m.host
    assert [(tp.topic, tp.partition) for tp in m.assignment.topic_partitions] == [(topic, 0)]

    offsets = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)])[group].result(10)
    assert [(tp.topic, tp.partition, tp.offset) for tp in offsets.topic_partitions] == [
        (topic, 0, 2)]

    with pytest.raises(KafkaException) as e:
        admin.delete_consumer_groups([group])[group].result(10)
    assert "NON_EMPTY_GROUP" in str(e.value) or "not empty" in str(e.value).lower()

    c.close()
    _wait_state(admin, group, ConsumerGroupState.EMPTY)
    empty = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(10)
    assert group in {g.group_id for g in empty.valid}

    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
        group, [CkTopicPartition(topic, 0, 5)])])[group].result(10)
    offsets = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [CkTopicPartition(topic, 0)])])[group].result(10)
    assert offsets.topic_partitions[0].offset == 5

    admin.delete_consumer_groups([group])[group].result(10)
    listed = admin.list_consumer_groups().result(10)
    assert group not in {g.group_id for g in listed.valid}
    offsets = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [CkTopicPartition(topic, 0)])])[group].result(10)
    assert offsets.topic_partitions[0].offset < 0


def test_kafka_python_admin_groups_and_offsets(broker: BrokerThread) -> None:
    topic, group = _name("kpadm"), _name("g")
    produce(broker.bootstrap, topic)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        c = _ck_consumer(broker.bootstrap, group)
        c.subscribe([topic])
        _ck_first_offset(c)
        c.commit(offsets=[CkTopicPartition(topic, 0, 7, metadata="m7")], asynchronous=False)
        deadline = time.monotonic() + 15
        while admin.describe_groups([group])[group]["group_state"] != "Stable":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed[group]["protocol_type"] == "consumer"
        assert [g["group_id"] for g in admin.list_groups(states_filter=["Stable"])
                if g["group_id"] == group] == [group]
        d = admin.describe_groups([group])[group]
        assert d["protocol_type"] == "consumer" and len(d["members"]) == 1
        member = d["members"][0]
        assert member["client_id"] == "rdkafka"
        assert topic in member["member_metadata"]["topics"]
        assigned = member["member_assignment"]["assigned_partitions"]
        assert [(a["topic"], a["partitions"]) for a in assigned] == [(topic, [0])]
        offsets = admin.list_group_offsets({group: None})[group]
        assert offsets[TopicPartition(topic, 0)].offset == 7
        # librdkafka sends the metadata string with its terminating NUL; the broker keeps
        # the bytes it was given, as Kafka does.
        assert offsets[TopicPartition(topic, 0)].metadata == "m7\x00"
        assert admin.delete_groups([group])[group] == "NonEmptyGroupError"
        # KIP-496: the member subscribes to the topic, so its offsets stay; a topic it does
        # not subscribe to is no error (one that does not exist is unknown, as in Kafka).
        other = TopicPartition(_name("other"), 0)
        produce(broker.bootstrap, other.topic, 1)
        missing = TopicPartition(_name("missing"), 0)
        deleted = admin.delete_group_offsets(group, [TopicPartition(topic, 0), other, missing])
        assert deleted[TopicPartition(topic, 0)].__name__ == "GroupSubscribedToTopicError"
        assert deleted[other].__name__ == "NoError"
        assert deleted[missing].__name__ == "UnknownTopicOrPartitionError"
        assert admin.list_group_offsets({group: None})[group][TopicPartition(topic, 0)].offset == 7
        c.close()
        deadline = time.monotonic() + 15
        while admin.describe_groups([group])[group]["group_state"] != "Empty":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert admin.delete_groups([group])[group] == "OK"
        assert admin.delete_groups([group])[group] == "GroupIdNotFoundError"
    finally:
        admin.close()


def test_java_consumer_group_commit_resume_and_describe(broker: BrokerThread) -> None:
    topic, group = _name("java"), _name("g")
    produce(broker.bootstrap, topic)
    lines = run_java("GroupOffsets", broker.bootstrap, topic, group, "4", timeout=120)
    assert lines["first.offset"] == "0"
    assert lines["committed"] == "4"
    assert lines["resumed.offset"] == "4"
    assert lines["describe.state"] == "Stable"
    assert lines["describe.members"] == "1"
    assert lines["describe.assigned"] == f"[{topic}-0]"
    assert lines["describe.client"] == "java-offsets"
