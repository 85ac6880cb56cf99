"""The scenarios of the differential suite, by name (``@scenario("name")``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .harness import Run, Scenario

SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        if name in SCENARIOS:
            raise ValueError(f"scenario {name} defined twice")
        SCENARIOS[name] = fn
        return fn

    return register


__all__ = ["SCENARIOS", "Run", "scenario"]


# API keys the scenarios use.
PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 8, 9, 10
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, SASL_HANDSHAKE, API_VERSIONS = 15, 16, 17, 18
CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS, INIT_PRODUCER_ID = 19, 20, 21, 22
OFFSET_FOR_LEADER_EPOCH, ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN = 23, 24, 25, 26
TXN_OFFSET_COMMIT, DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 28, 29, 30, 31
DESCRIBE_CONFIGS, ALTER_CONFIGS, DESCRIBE_LOG_DIRS, CREATE_PARTITIONS = 32, 33, 35, 37
DELETE_GROUPS, ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS = 42, 43, 44
LIST_PARTITION_REASSIGNMENTS, OFFSET_DELETE = 46, 47
DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 48, 49
DESCRIBE_USER_SCRAM_CREDENTIALS, ALTER_USER_SCRAM_CREDENTIALS = 50, 51
DESCRIBE_QUORUM, UPDATE_FEATURES, DESCRIBE_CLUSTER, DESCRIBE_PRODUCERS = 55, 57, 60, 61
DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 65, 66
CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 68, 69
DESCRIBE_TOPIC_PARTITIONS = 75
WRITE_TXN_MARKERS, ALTER_REPLICA_LOG_DIRS, ALTER_PARTITION_REASSIGNMENTS = 27, 34, 45
LIST_CONFIG_RESOURCES = 74
CREATE_DELEGATION_TOKEN, RENEW_DELEGATION_TOKEN = 38, 39
EXPIRE_DELEGATION_TOKEN, DESCRIBE_DELEGATION_TOKEN = 40, 41
UNREGISTER_BROKER, UNREGISTER_CONTROLLER = 64, 94


def create_topic(run: Run, name: str, partitions: int = 1,
                 configs: dict[str, str] | None = None, step: str = "create",
                 record: bool = False) -> Any:
    """Create a topic at CreateTopics' newest common version (a setup step: not compared
    unless ``record``); its topic id."""
    _lo, hi = run.common[CREATE_TOPICS]
    resp = run.call(step, CREATE_TOPICS, version=hi, record=record, topics=[{
        "name": name, "num_partitions": partitions, "replication_factor": 1,
        "assignments": [], "configs": [{"name": k, "value": v}
                                       for k, v in (configs or {}).items()]}],
        timeout=30_000, validate_only=False)
    if resp is None or int(resp.topics[0].error_code) != 0:
        raise RuntimeError(f"setup: creating topic {name} failed: {resp}")
    wait_for_leaders(run, name, partitions)
    return resp.topics[0].topic_id


def wait_for_leaders(run: Run, name: str, partitions: int, timeout: float = 15.0) -> None:
    """Kafka answers CreateTopics once the controller committed the topic; its broker
    learns of it a moment later. Wait until Metadata shows every partition led."""
    deadline = time.monotonic() + timeout
    while True:
        resp = run.call("wait", METADATA, version=12, record=False, topics=[
            {"name": name, "topic_id": None}], allow_auto_topic_creation=False,
            include_topic_authorized_operations=False)
        topic = resp.topics[0]
        if (int(topic.error_code) == 0 and len(topic.partitions) == partitions
                and all(int(p.leader_id) >= 0 for p in topic.partitions)):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"setup: topic {name} has no leaders: {resp}")
        time.sleep(0.05)


def call_until(run: Run, step: str, api_key: int, settled: Callable[[Any], bool],
               attempts: int = 100, **fields: Any) -> Any:
    """Ask until ``settled(response)`` (bounded), then record the answer under ``step``.
    Kafka's broker applies an admin change from its metadata log a moment after the
    controller answers it; a client reading straight after may see the old state."""
    for _ in range(attempts):
        resp = run.call(step, api_key, record=False, **fields)
        if resp is None or settled(resp):
            break
        time.sleep(0.05)
    return run.call(step, api_key, **fields)


NOT_LEADER_OR_FOLLOWER = 6


def produce(run: Run, step: str, topic: str, topic_id: Any, records: bytes,
            partition: int = 0, acks: int = -1, transactional_id: str | None = None,
            version: int | None = None, attempts: int = 100, **kw: Any) -> Any:
    """Produce one batch; retried, as clients retry, while the partition answers
    NOT_LEADER_OR_FOLLOWER: Kafka's broker can list a new partition's leader in Metadata
    a moment before it leads the partition, and nothing is written by such an answer."""
    for _ in range(attempts):
        resp = run.call(step, PRODUCE, version=version, transactional_id=transactional_id,
                        acks=acks, timeout=10_000, topic_data=[{
                            "name": topic, "topic_id": topic_id, "partition_data": [
                                {"index": partition, "records": records}]}], **kw)
        if resp is None or acks == 0 or not any(
                int(p.error_code) == NOT_LEADER_OR_FOLLOWER
                for t in resp.responses for p in t.partition_responses):
            return resp
        time.sleep(0.05)
    return resp
