"""Scenarios: ApiVersions, Metadata, topics, configs and cluster description."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .harness import to_data
from .registry import (
    ALTER_CONFIGS,
    API_VERSIONS,
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DESCRIBE_CLUSTER,
    DESCRIBE_CONFIGS,
    DESCRIBE_TOPIC_PARTITIONS,
    INCREMENTAL_ALTER_CONFIGS,
    METADATA,
    Run,
    call_until,
    create_topic,
    scenario,
)

TOPIC, BROKER = 2, 4


# Found differences: Metadata v13 and OffsetCommit/OffsetFetch v10 (now served); the
# rest listed in allowlist.toml.
@scenario("api-versions")
def api_versions(run: Run) -> None:
    run.call("api_versions", API_VERSIONS, client_software_name="differential",
             client_software_version="1.0")


# ApiVersions v5 (KIP-1242): a client names the cluster and node it means to reach; a
# mismatch is REBOOTSTRAP_REQUIRED, one of the two without the other INVALID_REQUEST, as is
# (from v3) a software name outside Kafka's pattern. Errors come with no API list.
@scenario("api-versions-checks")
def api_versions_checks(run: Run) -> None:
    meta = run.call("metadata", METADATA, version=run.common[METADATA][1], record=False,
                    topics=[], allow_auto_topic_creation=False,
                    include_cluster_authorized_operations=False,
                    include_topic_authorized_operations=False)
    cluster_id, node_id = meta.cluster_id, int(meta.brokers[0].node_id)
    software = {"client_software_name": "differential", "client_software_version": "1.0"}
    for step, fields in (("wrong_cluster", {"cluster_id": "not-this-cluster",
                                             "node_id": node_id}),
                         ("wrong_node", {"cluster_id": cluster_id, "node_id": node_id + 50}),
                         ("cluster_only", {"cluster_id": cluster_id}),
                         ("node_only", {"node_id": node_id})):
        run.call(step, API_VERSIONS, version=5, **software, **fields)
    right = run.call("right", API_VERSIONS, version=5, record=False, **software,
                     cluster_id=cluster_id, node_id=node_id)
    run.note("right.error_code", int(right.error_code))
    run.note("right.has_apis", len(right.api_keys) > 0)
    run.call("bad_software", API_VERSIONS, version=3, client_software_name="-bad name",
             client_software_version="1.0")


@scenario("api-versions-unknown-version")
def api_versions_unknown(run: Run) -> None:
    # A version past the newest: the broker answers v0 with UNSUPPORTED_VERSION and its
    # ranges, so a client can downgrade.
    w = run.main
    frame = w.send_bytes(API_VERSIONS, 99, b"\x00\x00\x00", flexible=True)
    run.note("unsupported.v0", w.decode(API_VERSIONS, 0, frame).error_code)


@scenario("metadata-no-topics")
def metadata_no_topics(run: Run) -> None:
    # An empty list means every topic at v0 and none from v1. Every topic is whatever the
    # other scenarios have created so far on each broker, so only this scenario's own
    # topic is compared, with the rest of the answer.
    create_topic(run, run.topic())
    resp = run.call("metadata", METADATA, record=False, topics=[],
                    allow_auto_topic_creation=False,
                    include_cluster_authorized_operations=False,
                    include_topic_authorized_operations=False)
    data = to_data(resp)
    data["topics"] = [t for t in data["topics"] if t["name"] == run.topic()]
    run.note("metadata", data)


@scenario("metadata-unknown-topic")
def metadata_unknown(run: Run) -> None:
    run.call("metadata", METADATA, topics=[{"name": run.topic("missing"), "topic_id": None}],
             allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
             include_topic_authorized_operations=True)


@scenario("metadata-topic")
def metadata_topic(run: Run) -> None:
    create_topic(run, run.topic(), partitions=3)
    run.call("metadata", METADATA, topics=[{"name": run.topic(), "topic_id": None}],
             allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
             include_topic_authorized_operations=True)


# Found a difference, fixed: an unknown topic's authorized operations.
@scenario("describe-topic-partitions")
def describe_topic_partitions(run: Run) -> None:
    create_topic(run, run.topic(), partitions=3)
    run.call("describe", DESCRIBE_TOPIC_PARTITIONS,
             topics=[{"name": run.topic()}, {"name": run.topic("missing")}],
             response_partition_limit=2, cursor=None)


@scenario("create-topics-errors")
def create_topics_errors(run: Run) -> None:
    create_topic(run, run.topic("exists"))
    run.call("create", CREATE_TOPICS, timeout=30_000, validate_only=False, topics=[
        {"name": run.topic("exists"), "num_partitions": 1, "replication_factor": 1,
         "assignments": [], "configs": []},
        {"name": run.topic("rf3"), "num_partitions": 1, "replication_factor": 3,
         "assignments": [], "configs": []},
        {"name": run.topic("zero"), "num_partitions": 0, "replication_factor": 1,
         "assignments": [], "configs": []},
        {"name": "bad name!", "num_partitions": 1, "replication_factor": 1,
         "assignments": [], "configs": []},
        {"name": run.topic("badcfg"), "num_partitions": 1, "replication_factor": 1,
         "assignments": [], "configs": [{"name": "cleanup.policy", "value": "sometimes"}]},
        {"name": run.topic("unknowncfg"), "num_partitions": 1, "replication_factor": 1,
         "assignments": [], "configs": [{"name": "no.such.config", "value": "1"}]},
    ])


# Found differences (listed): the 4.x topic config catalogue.
@scenario("create-topic-configs")
def create_topic_configs(run: Run) -> None:
    create_topic(run, run.topic(), partitions=2, configs={"retention.ms": "60000"},
                 record=True)


# Found a difference, fixed: a validate-only answer carries a topic id.
@scenario("create-topics-validate-only")
def create_topics_validate_only(run: Run) -> None:
    run.call("create", CREATE_TOPICS, timeout=30_000, validate_only=True, topics=[
        {"name": run.topic(), "num_partitions": 2, "replication_factor": -1,
         "assignments": [], "configs": [{"name": "retention.ms", "value": "1000"}]}])
    run.call("metadata", METADATA, topics=[{"name": run.topic(), "topic_id": None}],
             allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
             include_topic_authorized_operations=False)


@scenario("delete-topics")
def delete_topics(run: Run) -> None:
    create_topic(run, run.topic())
    run.call("delete", DELETE_TOPICS, timeout=30_000, topic_names=[run.topic(),
                                                                   run.topic("missing")],
             topics=[{"name": run.topic(), "topic_id": None},
                     {"name": run.topic("missing"), "topic_id": None}])


@scenario("create-partitions")
def create_partitions(run: Run) -> None:
    create_topic(run, run.topic(), partitions=2)
    run.call("grow", CREATE_PARTITIONS, timeout=30_000, validate_only=False, topics=[
        {"name": run.topic(), "count": 3, "assignments": None},
        {"name": run.topic("missing"), "count": 3, "assignments": None}])
    run.call("shrink", CREATE_PARTITIONS, timeout=30_000, validate_only=False, topics=[
        {"name": run.topic(), "count": 1, "assignments": None}])
    run.call("same", CREATE_PARTITIONS, timeout=30_000, validate_only=True, topics=[
        {"name": run.topic(), "count": 3, "assignments": None}])


# Found a difference (listed): Kafka's cluster-level min.insync.replicas.
@scenario("describe-configs-topic")
def describe_configs_topic(run: Run) -> None:
    create_topic(run, run.topic(), configs={"retention.ms": "123456",
                                            "cleanup.policy": "compact"})
    run.call("describe", DESCRIBE_CONFIGS, include_synonyms=True,
             include_documentation=False, resources=[
                 {"resource_type": TOPIC, "resource_name": run.topic(),
                  "configuration_keys": ["retention.ms", "cleanup.policy", "segment.bytes",
                                         "max.message.bytes", "min.insync.replicas"]},
                 {"resource_type": TOPIC, "resource_name": run.topic("missing"),
                  "configuration_keys": None}])


def _value(resp: Any, name: str) -> str | None:
    """A config's value in a DescribeConfigs answer of one resource."""
    return next((c.value for r in resp.results for c in r.configs if c.name == name), None)


@scenario("alter-configs")
def alter_configs(run: Run) -> None:
    create_topic(run, run.topic())
    run.call("alter", ALTER_CONFIGS, validate_only=False, resources=[
        {"resource_type": TOPIC, "resource_name": run.topic(),
         "configs": [{"name": "retention.ms", "value": "5000"}]},
        {"resource_type": TOPIC, "resource_name": run.topic("missing"),
         "configs": [{"name": "retention.ms", "value": "5000"}]}])
    run.call("invalid", ALTER_CONFIGS, validate_only=False, resources=[
        {"resource_type": TOPIC, "resource_name": run.topic(),
         "configs": [{"name": "retention.ms", "value": "soon"}]}])
    # Kafka's broker applies a config change from its metadata log a moment after the
    # controller answers: asked until it shows, then recorded.
    call_until(run, "describe", DESCRIBE_CONFIGS,
               lambda r: _value(r, "retention.ms") == "5000", include_synonyms=False,
               include_documentation=False, resources=[
                   {"resource_type": TOPIC, "resource_name": run.topic(),
                    "configuration_keys": ["retention.ms"]}])


@scenario("incremental-alter-configs")
def incremental_alter_configs(run: Run) -> None:
    create_topic(run, run.topic(), configs={"retention.ms": "7000"})
    run.call("alter", INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=[
        {"resource_type": TOPIC, "resource_name": run.topic(), "configs": [
            {"name": "retention.ms", "config_operation": 1, "value": None},
            {"name": "cleanup.policy", "config_operation": 2, "value": "compact"}]}])
    run.call("invalid", INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=[
        {"resource_type": TOPIC, "resource_name": run.topic(), "configs": [
            {"name": "segment.bytes", "config_operation": 0, "value": "-5"}]},
        {"resource_type": TOPIC, "resource_name": run.topic("missing"), "configs": [
            {"name": "segment.bytes", "config_operation": 0, "value": "1048576"}]}])
    call_until(run, "describe", DESCRIBE_CONFIGS,
               lambda r: _value(r, "cleanup.policy") == "compact"
               and _value(r, "retention.ms") != "7000",
               include_synonyms=False, include_documentation=False, resources=[
                   {"resource_type": TOPIC, "resource_name": run.topic(),
                    "configuration_keys": ["retention.ms", "cleanup.policy",
                                           "segment.bytes"]}])


@scenario("describe-configs-broker")
def describe_configs_broker(run: Run) -> None:
    run.call("describe", DESCRIBE_CONFIGS, include_synonyms=False,
             include_documentation=False, resources=[
                 {"resource_type": BROKER, "resource_name": "",
                  "configuration_keys": ["log.retention.ms", "num.partitions",
                                         "auto.create.topics.enable"]},
                 {"resource_type": BROKER, "resource_name": "not-a-number",
                  "configuration_keys": None}])


@scenario("describe-cluster")
def describe_cluster(run: Run) -> None:
    run.call("describe", DESCRIBE_CLUSTER, include_cluster_authorized_operations=True,
             endpoint_type=1, include_fenced_brokers=False)
    # KIP-1073: fenced brokers on request, each broker's is_fenced (none fenced here).
    run.call("describe_fenced_included", DESCRIBE_CLUSTER,
             include_cluster_authorized_operations=False, endpoint_type=1,
             include_fenced_brokers=True)


_RATE = "max.connection.creation.rate"
_LISTENER_RATE = "listener.name.sasl_plaintext.max.connection.creation.rate"


def _broker_rates(run: Run, step: str, settled: Callable[[Any], bool]) -> None:
    call_until(run, step, DESCRIBE_CONFIGS, settled, include_synonyms=True,
               include_documentation=False, resources=[
                   {"resource_type": BROKER, "resource_name": "1",
                    "configuration_keys": [_RATE, _LISTENER_RATE]}])


@scenario("broker-connection-creation-rate")
def broker_connection_creation_rate(run: Run) -> None:
    """``max.connection.creation.rate`` as a dynamic broker config, broker-wide and per
    listener: a rate of 0 refused, one set, described with its synonyms, removed. The
    rates are high enough that no connection of the suite waits."""
    def alter(step: str, op: int, rates: dict[str, str | None]) -> None:
        run.call(step, INCREMENTAL_ALTER_CONFIGS, validate_only=False, resources=[
            {"resource_type": BROKER, "resource_name": "1", "configs": [
                {"name": k, "config_operation": op, "value": v}
                for k, v in rates.items()]}])

    alter("zero", 0, {_RATE: "0"})
    alter("listener-zero", 0, {_LISTENER_RATE: "0"})
    alter("set", 0, {_RATE: "100000", _LISTENER_RATE: "50000"})
    _broker_rates(run, "described", lambda r: _value(r, _LISTENER_RATE) == "50000")
    alter("delete", 1, {_RATE: None, _LISTENER_RATE: None})
    _broker_rates(run, "removed", lambda r: _value(r, _RATE) != "100000")
