"""Scenarios: quotas, SCRAM credentials, delegation tokens, partition leadership, log dirs,
SASL, quorum."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .registry import (
    ALTER_CLIENT_QUOTAS,
    ALTER_PARTITION_REASSIGNMENTS,
    ALTER_REPLICA_LOG_DIRS,
    ALTER_USER_SCRAM_CREDENTIALS,
    CREATE_DELEGATION_TOKEN,
    DESCRIBE_CLIENT_QUOTAS,
    DESCRIBE_CLUSTER,
    DESCRIBE_CONFIGS,
    DESCRIBE_DELEGATION_TOKEN,
    DESCRIBE_LOG_DIRS,
    DESCRIBE_QUORUM,
    DESCRIBE_USER_SCRAM_CREDENTIALS,
    ELECT_LEADERS,
    EXPIRE_DELEGATION_TOKEN,
    INCREMENTAL_ALTER_CONFIGS,
    LIST_CONFIG_RESOURCES,
    LIST_PARTITION_REASSIGNMENTS,
    RENEW_DELEGATION_TOKEN,
    SASL_HANDSHAKE,
    UNREGISTER_BROKER,
    UNREGISTER_CONTROLLER,
    UPDATE_FEATURES,
    WRITE_TXN_MARKERS,
    Run,
    call_until,
    create_topic,
    scenario,
)


@scenario("client-quotas")
def client_quotas(run: Run) -> None:
    client = run.group("client")
    entity = [{"entity_type": "client-id", "entity_name": client}]
    run.call("alter", ALTER_CLIENT_QUOTAS, validate_only=False, entries=[
        {"entity": entity, "ops": [{"key": "producer_byte_rate", "value": 1024.0,
                                    "remove": False}]}])
    run.call("invalid_key", ALTER_CLIENT_QUOTAS, validate_only=False, entries=[
        {"entity": entity, "ops": [{"key": "no_such_quota", "value": 1.0,
                                    "remove": False}]}])
    components = [{"entity_type": "client-id", "match_type": 0, "match": client}]
    call_until(run, "describe", DESCRIBE_CLIENT_QUOTAS, lambda r: bool(r.entries),
               strict=True, components=components)
    run.call("remove", ALTER_CLIENT_QUOTAS, validate_only=False, entries=[
        {"entity": entity, "ops": [{"key": "producer_byte_rate", "value": 0.0,
                                    "remove": True}]}])


@scenario("scram-credentials")
def scram_credentials(run: Run) -> None:
    user = run.group("user")
    run.call("describe_unknown", DESCRIBE_USER_SCRAM_CREDENTIALS, users=[{"name": user}])
    run.call("upsert", ALTER_USER_SCRAM_CREDENTIALS, deletions=[], upsertions=[
        {"name": user, "mechanism": 1, "iterations": 4096, "salt": b"salt" * 4,
         "salted_password": b"p" * 32}])
    run.call("bad_iterations", ALTER_USER_SCRAM_CREDENTIALS, deletions=[], upsertions=[
        {"name": user, "mechanism": 2, "iterations": 1, "salt": b"salt" * 4,
         "salted_password": b"p" * 64}])
    call_until(run, "describe", DESCRIBE_USER_SCRAM_CREDENTIALS,
               lambda r: all(int(u.error_code) == 0 for u in r.results),
               users=[{"name": user}])
    run.call("delete", ALTER_USER_SCRAM_CREDENTIALS, upsertions=[],
             deletions=[{"name": user, "mechanism": 1}])


@scenario("delegation-tokens-refused")
def delegation_tokens_refused(run: Run) -> None:
    """Neither broker has ``delegation.token.secret.key``: on PLAINTEXT a token request
    is DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, over SASL DELEGATION_TOKEN_AUTH_DISABLED.
    (Create, Renew and Expire refused on PLAINTEXT answer -1 timestamps, which kio
    cannot decode: only Describe is sent there.)"""
    run.call("describe_plaintext", DESCRIBE_DELEGATION_TOKEN, owners=None)
    alice = run.wire(sasl_user="alice")
    run.call("create", CREATE_DELEGATION_TOKEN, wire=alice, owner_principal_type=None,
             owner_principal_name=None, renewers=[], max_lifetime=-1)
    run.call("renew", RENEW_DELEGATION_TOKEN, wire=alice, hmac=b"nope", renew_period=-1)
    run.call("expire", EXPIRE_DELEGATION_TOKEN, wire=alice, hmac=b"nope",
             expiry_time_period=-1)
    run.call("describe", DESCRIBE_DELEGATION_TOKEN, wire=alice, owners=None)
    run.call("describe_none", DESCRIBE_DELEGATION_TOKEN, wire=alice, owners=[])


@scenario("elect-leaders")
def elect_leaders(run: Run) -> None:
    create_topic(run, run.topic())
    run.call("preferred", ELECT_LEADERS, election_type=0, timeout=10_000,
             topic_partitions=[{"topic": run.topic(), "partitions": [0, 3]}])
    run.call("unknown_topic", ELECT_LEADERS, election_type=0, timeout=10_000,
             topic_partitions=[{"topic": run.topic("missing"), "partitions": [0]}])


@scenario("list-partition-reassignments")
def list_reassignments(run: Run) -> None:
    create_topic(run, run.topic())
    run.call("list", LIST_PARTITION_REASSIGNMENTS, timeout=10_000,
             topics=[{"name": run.topic(), "partition_indexes": [0]}])


@scenario("sasl-handshake")
def sasl_handshake(run: Run) -> None:
    run.call("unsupported_mechanism", SASL_HANDSHAKE, mechanism="GSSAPI")
    plain = run.wire()
    run.call("plaintext_listener", SASL_HANDSHAKE, wire=plain, mechanism="PLAIN")


@scenario("update-features-validate-only")
def update_features(run: Run) -> None:
    run.call("unknown_feature", UPDATE_FEATURES, timeout=10_000, validate_only=True,
             feature_updates=[{"feature": "no.such.feature", "max_version_level": 1,
                               "upgrade_type": 1, "allow_downgrade": False}])
    run.call("downgrade_unsafe", UPDATE_FEATURES, timeout=10_000, validate_only=True,
             feature_updates=[{"feature": "metadata.version", "max_version_level": 1,
                               "upgrade_type": 3, "allow_downgrade": True}])


# Found differences (listed): no controller listener, no metadata log.
@scenario("describe-quorum")
def describe_quorum(run: Run) -> None:
    run.call("describe", DESCRIBE_QUORUM, topics=[{"topic_name": "__cluster_metadata",
                                                    "partitions": [{"partition_index": 0}]}])


@scenario("describe-log-dirs")
def describe_log_dirs(run: Run) -> None:
    create_topic(run, run.topic(), partitions=2)

    def listed(resp: Any) -> list[int]:
        return sorted(int(p.partition_index) for d in resp.results for t in d.topics
                      if t.name == run.topic() for p in t.partitions)

    # Kafka's broker creates a new partition's log a moment after Metadata shows its
    # leader: asked again until both logs are listed (bounded), as an operator would.
    for _ in range(100):
        resp = run.call("describe", DESCRIBE_LOG_DIRS, record=False,
                        topics=[{"topic": run.topic(), "partitions": [0, 1, 7]}])
        if listed(resp) == [0, 1]:
            break
        time.sleep(0.05)
    # Paths and sizes are each broker's own: compare what is reported, not where.
    run.note("error_code", int(getattr(resp, "error_code", 0)))  # v4+
    run.note("dirs", [{"error_code": int(d.error_code),
                       "topics": [{"name": t.name,
                                   "partitions": sorted(int(p.partition_index)
                                                        for p in t.partitions)}
                                  for t in d.topics if t.name == run.topic()]}
                      for d in resp.results])


@scenario("alter-replica-log-dirs")
def alter_replica_log_dirs(run: Run) -> None:
    create_topic(run, run.topic())
    run.call("unknown_dir", ALTER_REPLICA_LOG_DIRS, dirs=[
        {"path": "/no/such/dir", "topics": [{"name": run.topic(), "partitions": [0]}]}])


@scenario("alter-partition-reassignments")
def alter_reassignments(run: Run) -> None:
    create_topic(run, run.topic())
    run.call("cancel_none", ALTER_PARTITION_REASSIGNMENTS, timeout=10_000,
             allow_replication_factor_change=True, topics=[
                 {"name": run.topic(), "partitions": [{"partition_index": 0,
                                                       "replicas": None}]},
                 {"name": run.topic("missing"), "partitions": [{"partition_index": 0,
                                                                "replicas": None}]}])
    run.call("empty_replicas", ALTER_PARTITION_REASSIGNMENTS, timeout=10_000,
             allow_replication_factor_change=False, topics=[
                 {"name": run.topic(), "partitions": [{"partition_index": 0,
                                                       "replicas": []}]}])


@scenario("list-config-resources")
def list_config_resources(run: Run) -> None:
    # Only the resource types whose entries do not depend on the rest of the session.
    resp = run.call("list", LIST_CONFIG_RESOURCES, record=False, resource_types=[4])
    run.note("error_code", int(resp.error_code))
    run.note("brokers", len(resp.config_resources))


@scenario("write-txn-markers-unauthorized")
def write_txn_markers(run: Run) -> None:
    # WriteTxnMarkers is inter-broker: a client without ClusterAction is refused.
    create_topic(run, run.topic())
    alice = run.wire(sasl_user="alice")
    run.call("markers", WRITE_TXN_MARKERS, wire=alice, markers=[
        {"producer_id": 1, "producer_epoch": 0, "transaction_result": False,
         "topics": [{"name": run.topic(), "partition_indexes": [0]}],
         "coordinator_epoch": 0, "transaction_version": 2}])


CLIENT_METRICS = 16


def client_metrics_configs(run: Run, step: str, name: str, keys: list[str] | None = None
                           ) -> Any:
    return run.call(step, DESCRIBE_CONFIGS, resources=[{
        "resource_type": CLIENT_METRICS, "resource_name": name, "configuration_keys": keys}],
        include_synonyms=True, include_documentation=False)


def alter_client_metrics(run: Run, step: str, name: str,
                         ops: list[tuple[str, int, str | None]]) -> Any:
    return run.call(step, INCREMENTAL_ALTER_CONFIGS, resources=[{
        "resource_type": CLIENT_METRICS, "resource_name": name, "configs": [
            {"name": k, "config_operation": op, "value": v} for k, op, v in ops]}],
        validate_only=False)


def _client_metrics_until(run: Run, step: str, name: str,
                          settled: Callable[[dict[str, str | None]], bool]) -> Any:
    # Kafka's brokers apply the change when their metadata log reaches it.
    return call_until(run, step, DESCRIBE_CONFIGS, lambda r: settled(
        {c.name: c.value for res in r.results for c in res.configs}), resources=[{
            "resource_type": CLIENT_METRICS, "resource_name": name, "configuration_keys": None}],
        include_synonyms=True, include_documentation=False)


@scenario("unregister-nodes")
def unregister_nodes(run: Run) -> None:
    # Kafka's own broker (a combined node, its quorum's one voter) is not unregistered
    # here: a live broker registers again, but its partitions would move meanwhile.
    me = run.call("cluster", DESCRIBE_CLUSTER, record=False,
                  include_cluster_authorized_operations=False,
                  include_fenced_brokers=False).brokers[0].broker_id
    run.call("broker_unknown", UNREGISTER_BROKER, broker_id=4242)
    run.call("controller_unknown", UNREGISTER_CONTROLLER, controller_id=4242)
    run.call("controller_voter", UNREGISTER_CONTROLLER, controller_id=me)


@scenario("client-metrics-configs")
def client_metrics_configs_scenario(run: Run) -> None:
    # KIP-714 subscriptions (resource type CLIENT_METRICS): served by Kafka without a
    # metrics-reporter plugin, which only the telemetry APIs need.
    sub = run.group("sub")
    client_metrics_configs(run, "describe_missing", sub)
    alter_client_metrics(run, "set", sub, [("metrics", 0, "*"), ("interval.ms", 0, "1000")])
    _client_metrics_until(run, "describe_set", sub, lambda v: v.get("interval.ms") == "1000")
    client_metrics_configs(run, "describe_one", sub, ["interval.ms"])
    alter_client_metrics(run, "append", sub, [("metrics", 2, "org.apache.kafka.producer."),
                                              ("match", 0, "client_id=app.*")])
    _client_metrics_until(run, "describe_appended", sub, lambda v: bool(v.get("match")))
    alter_client_metrics(run, "subtract", sub, [("metrics", 3, "*")])
    alter_client_metrics(run, "interval_too_short", sub, [("interval.ms", 0, "50")])
    alter_client_metrics(run, "interval_not_int", sub, [("interval.ms", 0, "soon")])
    alter_client_metrics(run, "unknown_key", sub, [("no.such.key", 0, "1")])
    alter_client_metrics(run, "bad_match", sub, [("match", 0, "bogus=1")])
    alter_client_metrics(run, "append_int", sub, [("interval.ms", 2, "5")])
    client_metrics_configs(run, "describe_after_errors", sub)
    alter_client_metrics(run, "empty_name", "", [("metrics", 0, "*")])
    client_metrics_configs(run, "describe_empty_name", "")
    listed = run.call("list", LIST_CONFIG_RESOURCES, record=False, resource_types=[16])
    run.note("listed", sub in {r.resource_name for r in listed.config_resources})
    alter_client_metrics(run, "delete_all", sub, [("metrics", 1, None), ("interval.ms", 1, None),
                                                  ("match", 1, None)])
    # Kafka's brokers see the deletion once the metadata log reaches them: asked again for
    # up to 5 s, as a client waiting for it would.
    deadline = time.monotonic() + 5
    while True:
        listed = run.call("list_after", LIST_CONFIG_RESOURCES, record=False,
                          resource_types=[16])
        still = sub in {r.resource_name for r in listed.config_resources}
        if not still or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    run.note("listed_after_delete", still)
    client_metrics_configs(run, "describe_deleted", sub)
