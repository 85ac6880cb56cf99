"""Cluster admin calls of real clients over TCP: the Java Admin (kafka-clients 3.9.1) and
kafka-python's admin client, against DescribeTopicPartitions, DescribeQuorum,
ListConfigResources, Describe/AlterReplicaLogDirs, client quotas and features."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

import pytest
from kafka import errors as kerr
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import TopicPartitionReplica

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol import releases
from kafkalite.protocol.errors import ErrorCode

from .api_recorder import record
from .java_support import run_java

DESCRIBE_TOPIC_PARTITIONS, DESCRIBE_QUORUM, LIST_CONFIG_RESOURCES = 75, 55, 74
ALTER_REPLICA_LOG_DIRS, DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 34, 48, 49
UPDATE_FEATURES = 57


@pytest.fixture
def kp(broker: BrokerThread) -> KafkaAdminClient:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    admin.create_topics([NewTopic("alpha", 5, 1), NewTopic("beta", 1, 1)])
    yield admin
    admin.close()


def test_java_admin(broker: BrokerThread, kp: KafkaAdminClient, tmp_path: Path) -> None:
    describe = record(broker, DESCRIBE_TOPIC_PARTITIONS)
    quorum = record(broker, DESCRIBE_QUORUM)
    metrics = record(broker, LIST_CONFIG_RESOURCES)
    alter_dirs = record(broker, ALTER_REPLICA_LOG_DIRS)
    quotas = record(broker, DESCRIBE_CLIENT_QUOTAS)
    out = run_java("AdminApis", broker.bootstrap,
                   "describe-topics", "2", "alpha", "beta", "gamma",
                   "+", "quorum", "+", "client-metrics",
                   "+", "log-dirs", "alpha", str(tmp_path / "elsewhere"),
                   "+", "quotas", "+", "features")
    # Java prints topic ids as Kafka does: URL-safe base64 of the 16 bytes.
    ids = {d["name"]: base64.urlsafe_b64encode(uuid.UUID(str(d["topic_id"])).bytes)
           .decode().rstrip("=") for d in kp.describe_topics(["alpha", "beta"])}

    # describeTopics pages through DescribeTopicPartitions two partitions at a time.
    one = "1:1:1"  # leader 1, one replica, one in-sync replica
    assert out["alpha"] == f"{ids['alpha']};false;" + "".join(f"{p}:{one}," for p in range(5))
    assert out["beta"] == f"{ids['beta']};false;0:{one},"
    assert out["gamma"] == "error:UnknownTopicOrPartitionException"
    assert len(describe.seen) >= 3 and set(describe.versions) == {0}
    cursors = [req.cursor for _v, req, _r in describe.seen if req.cursor is not None]
    assert {(c.topic_name, c.partition_index) for c in cursors} >= {("alpha", 2), ("alpha", 4)}

    assert (out["leader"], out["epoch"], out["hw"], out["voters"], out["observers"],
            out["nodes"]) == ("1", "1", "1", "1:1:true,", "0", "[1]")
    assert quorum.versions == [2]
    # kafka-clients 4.x lists them with ListConfigResources v1, naming the resource type.
    assert out["client-metrics"] == "0" and metrics.versions == [1]

    assert broker.broker is not None
    here = str(Path(broker.broker.cluster.data_dir).resolve())
    assert (out["dirs"], out["dir"], out["total"]) == ("1", here, "true")
    assert int(out["size"]) == 0
    assert (out["alter-same"], out["alter-other"]) == ("ok", "error:LogDirNotFoundException")
    assert [resp.results[0].partitions[0].error_code for _v, _q, resp in alter_dirs.seen] == [
        ErrorCode.none, ErrorCode.log_dir_not_found]

    assert out["all"] == "2"
    assert out["alice"] == "{producer_byte_rate=1024.0, request_percentage=12.5}"
    assert out["default"] == "{consumer_byte_rate=2048.0}"
    assert out["exact"] == "[ClientQuotaEntity(entries={user=alice})]"
    assert out["bad"] == "error:InvalidRequestException"
    assert out["after-remove"] == "{request_percentage=12.5}"
    assert len(quotas.seen) == 3

    # The metadata.version of the Kafka release emulated by default (4.4).
    mv = releases.release(releases.DEFAULT_RELEASE).features["metadata.version"]
    assert out["finalized.metadata.version"] == f"{mv}-{mv}"
    assert (out["supported.group.version"], out["supported.transaction.version"]) == (
        "1-1", "2-2")
    assert out["features-epoch"] == "0"
    # The finalized metadata.version and group.version 1 are the levels in force: asking
    # for them changes nothing.
    assert (out["update-same"], out["update-group"]) == ("ok", "ok")


def test_kafka_python_admin(broker: BrokerThread, kp: KafkaAdminClient) -> None:
    describe = record(broker, DESCRIBE_TOPIC_PARTITIONS)
    first = kp.describe_topic_partitions(["alpha", "beta"], response_partition_limit=3)
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
            for t in first["topics"]] == [("alpha", [0, 1, 2])]
    assert first["next_cursor"] == {"topic_name": "alpha", "partition_index": 3}
    rest = kp.describe_topic_partitions(["alpha", "beta"], cursor=first["next_cursor"])
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]], t["is_internal"])
            for t in rest["topics"]] == [("alpha", [3, 4], False), ("beta", [0], False)]
    assert rest["next_cursor"] is None
    assert all(p["leader_id"] == 1 and p["leader_epoch"] == 0 and p["isr_nodes"] == [1]
               for t in rest["topics"] for p in t["partitions"])
    assert describe.versions == [0, 0]

    quorum = kp.describe_metadata_quorum()
    (topic,) = quorum["topics"]
    (part,) = topic["partitions"]
    assert (topic["topic_name"], part["leader_id"], part["leader_epoch"], part["error"]) == (
        "__cluster_metadata", 1, 1, None)
    assert [v["replica_id"] for v in part["current_voters"]] == [1]
    assert part["observers"] == []

    resources = kp.list_config_resources()
    assert {k: sorted(v) for k, v in resources.items()} == {
        "topic": ["alpha", "beta"], "broker": ["1"], "broker_logger": ["1"]}
    only_topics = kp.list_config_resources(["TOPIC"])
    assert {k: sorted(v) for k, v in only_topics.items()} == {"topic": ["alpha", "beta"]}

    assert broker.broker is not None
    here = str(Path(broker.broker.cluster.data_dir).resolve())
    (described,) = kp.describe_log_dirs()
    assert described["broker"] == 1
    assert [(d["log_dir"], d["error_code"], sorted(t["name"] for t in d["topics"]))
            for d in described["log_dirs"]] == [(here, 0, ["alpha", "beta"])]
    moved = kp.alter_replica_log_dirs({
        TopicPartitionReplica("alpha", 0, 1): here,
        TopicPartitionReplica("beta", 0, 1): here + "-other",
    })
    assert moved[TopicPartitionReplica("alpha", 0, 1)] is kerr.NoError
    assert moved[TopicPartitionReplica("beta", 0, 1)] is kerr.LogDirNotFoundError

    feats = kp.describe_features()
    mv = releases.release(releases.DEFAULT_RELEASE).features["metadata.version"]
    assert feats["metadata.version"]["finalized"] == (mv, mv)
    assert feats["group.version"]["supported"] == (1, 1)
    assert feats["group.version"]["finalized"] == (1, 1)
    assert feats["transaction.version"]["finalized"] == (2, 2)
