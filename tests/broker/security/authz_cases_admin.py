"""Authorization cases: metadata, topics, configs and the cluster."""

from __future__ import annotations

import uuid
from typing import Any

from kafkalite.broker.security.acl import AclBinding, AclPermission, PatternType

from .authz_harness import (
    ALICE,
    CLUSTER_DENIED,
    GROUP_DENIED,
    NO_OPS,
    SECOND,
    TOPIC_DENIED,
    Api,
    C,
    G,
    O,
    T,
    case,
    cluster_op,
    codes_of,
)

# --- metadata, topics and configs --------------------------------------------------------

@case(75)
async def describe_topic_partitions(a: Api) -> None:
    def request(*names: str) -> dict[str, Any]:
        return dict(topics=tuple(a.n(75, 0, "TopicRequest", name=n) for n in names),
                    response_partition_limit=100, cursor=None)

    (t,) = (await a.call(75, 0, **request("t"))).topics
    assert (t.name, t.error_code) == ("t", TOPIC_DENIED)
    assert (await a.call(75, 0, **request())).topics == ()  # all topics: denied ones out
    a.allow(T, "t", O.DESCRIBE)
    (t,) = (await a.call(75, 0, **request("t"))).topics
    assert (t.error_code, t.topic_authorized_operations) == (0, 1 << 8)

@case(3)
async def metadata(a: Api) -> None:
    def named(*names: str, create: bool = False) -> dict[str, Any]:
        return dict(topics=tuple(a.n(3, 12, "MetadataRequestTopic", topic_id=None, name=n)
                                 for n in names),
                    allow_auto_topic_creation=create, include_topic_authorized_operations=True)

    resp = await a.call(3, 12, **named("t"))
    assert [(t.name, t.error_code, t.topic_authorized_operations) for t in resp.topics] == [
        ("t", TOPIC_DENIED, NO_OPS)]
    every = dict(topics=None, allow_auto_topic_creation=False,
                 include_topic_authorized_operations=True)
    assert (await a.call(3, 12, **every)).topics == ()  # a listing leaves denied ones out
    a.allow(T, "t", O.READ)
    (t,) = (await a.call(3, 12, **every)).topics
    # Read implies Describe: both bits, nothing else.
    assert (t.name, t.error_code, t.topic_authorized_operations) == ("t", 0, 1 << 3 | 1 << 8)
    # Auto-creation: Describe lets the name through, Create (topic or cluster) creates it.
    a.allow(T, "auto-m", O.DESCRIBE)
    (t,) = (await a.call(3, 12, **named("auto-m", create=True))).topics
    assert t.error_code == TOPIC_DENIED and a.broker.topics.get("auto-m") is None
    a.allow(C, "kafka-cluster", O.CREATE)
    (t,) = (await a.call(3, 12, **named("auto-m", create=True))).topics
    assert t.error_code == 0 and a.broker.topics.get("auto-m") is not None
    # v8-v10: the cluster's operations, 0 without Describe on the cluster.
    v10 = dict(topics=(), allow_auto_topic_creation=False,
               include_cluster_authorized_operations=True,
               include_topic_authorized_operations=False)
    a.store.add([AclBinding(C, "kafka-cluster", PatternType.LITERAL, ALICE, "*", O.DESCRIBE,
                            AclPermission.DENY)])
    assert (await a.call(3, 10, **v10)).cluster_authorized_operations == 0
    a.revoke_all()
    a.allow(C, "kafka-cluster", O.ALTER)
    assert (await a.call(3, 10, **v10)).cluster_authorized_operations == 1 << 7 | 1 << 8


@case(19)
async def create_topics(a: Api) -> None:
    def request(*names: str) -> dict[str, Any]:
        return dict(timeout=SECOND, validate_only=False, topics=tuple(
            a.n(19, 7, "CreatableTopic", name=n, num_partitions=1, replication_factor=-1,
                assignments=(), configs=()) for n in names))

    (r,) = (await a.call(19, 7, **request("n1"))).topics
    assert r.error_code == TOPIC_DENIED
    dup = (await a.call(19, 7, **request("d", "d"))).topics  # duplicates before authorization
    assert [r.error_code for r in dup] == [42, 42]
    a.allow(T, "n1", O.CREATE)
    (r,) = (await a.call(19, 7, **request("n1"))).topics
    # Created, but its configs only go to a principal with DescribeConfigs on it.
    assert (r.error_code, r.topic_config_error_code, r.num_partitions, r.configs) == \
        (0, TOPIC_DENIED, -1, ())
    a.allow(T, "n2", O.CREATE)
    a.allow(T, "n2", O.DESCRIBE_CONFIGS)
    (r,) = (await a.call(19, 7, **request("n2"))).topics
    assert (r.error_code, r.topic_config_error_code, r.num_partitions) == (0, 0, 1)
    assert r.configs


@case(20)
async def delete_topics(a: Api) -> None:
    def request(name: str | None, tid: uuid.UUID | None = None) -> dict[str, Any]:
        return dict(timeout=SECOND, topics=(
            a.n(20, 6, "DeleteTopicState", name=name, topic_id=tid or uuid.UUID(int=0)),))

    # Authorized before it is looked up: a missing name is not revealed as missing.
    for name in ("t", "missing"):
        (r,) = (await a.call(20, 6, **request(name))).responses
        assert r.error_code == TOPIC_DENIED
    info = a.broker.topics.get("t")
    assert info is not None
    (r,) = (await a.call(20, 6, **request(None, info.topic_id))).responses
    assert r.error_code == TOPIC_DENIED
    a.allow(T, "t", O.DELETE)
    (r,) = (await a.call(20, 6, **request("t"))).responses
    assert r.error_code == 0 and a.broker.topics.get("t") is None


@case(37)
async def create_partitions(a: Api) -> None:
    fields = dict(timeout=SECOND, validate_only=True, topics=(
        a.n(37, 3, "CreatePartitionsTopic", name="t", count=2, assignments=None),))
    assert codes_of(await a.call(37, 3, **fields), "results", "error_code") == [TOPIC_DENIED]
    a.allow(T, "t", O.ALTER)
    assert codes_of(await a.call(37, 3, **fields), "results", "error_code") == [0]


TOPIC_RES, BROKER_RES, GROUP_RES = 2, 4, 32


@case(32)
async def describe_configs(a: Api) -> None:
    fields = dict(include_synonyms=False, include_documentation=False, resources=(
        a.n(32, 4, "DescribeConfigsResource", resource_type=TOPIC_RES, resource_name="t",
            configuration_keys=None),
        a.n(32, 4, "DescribeConfigsResource", resource_type=BROKER_RES, resource_name="1",
            configuration_keys=None),
        a.n(32, 4, "DescribeConfigsResource", resource_type=GROUP_RES, resource_name="g",
            configuration_keys=None)))
    path = ("results", "error_code")
    assert codes_of(await a.call(32, 4, **fields), *path) == [TOPIC_DENIED, CLUSTER_DENIED,
                                                              GROUP_DENIED]
    a.allow(T, "t", O.ALTER_CONFIGS)  # implies DescribeConfigs
    a.allow(C, "kafka-cluster", O.DESCRIBE_CONFIGS)
    a.allow(G, "g", O.DESCRIBE_CONFIGS)
    assert codes_of(await a.call(32, 4, **fields), *path) == [0, 0, 0]


async def _alter_configs(a: Api, api: int, version: int) -> None:
    extra = {"config_operation": 0} if api == 44 else {}
    cfg = a.n(api, version, "AlterableConfig", name="retention.ms", value="1000", **extra)
    gcfg = a.n(api, version, "AlterableConfig", name="share.auto.offset.reset",
               value="earliest", **extra)
    fields = dict(validate_only=True, resources=(
        a.n(api, version, "AlterConfigsResource", resource_type=TOPIC_RES, resource_name="t",
            configs=(cfg,)),
        a.n(api, version, "AlterConfigsResource", resource_type=BROKER_RES,
            resource_name="1", configs=()),
        a.n(api, version, "AlterConfigsResource", resource_type=GROUP_RES,
            resource_name="g", configs=(gcfg,))))
    path = ("responses", "error_code")
    assert codes_of(await a.call(api, version, **fields), *path) == [TOPIC_DENIED,
                                                                      CLUSTER_DENIED,
                                                                      GROUP_DENIED]
    a.allow(T, "t", O.DESCRIBE_CONFIGS)  # not enough to alter
    a.allow(G, "g", O.DESCRIBE_CONFIGS)
    a.allow(C, "kafka-cluster", O.ALTER_CONFIGS)
    assert codes_of(await a.call(api, version, **fields), *path) == [TOPIC_DENIED, 0,
                                                                      GROUP_DENIED]
    a.allow(T, "t", O.ALTER_CONFIGS)
    a.allow(G, "g", O.ALTER_CONFIGS)
    assert codes_of(await a.call(api, version, **fields), *path) == [0, 0, 0]


@case(74)
async def list_config_resources(a: Api) -> None:
    await cluster_op(a, 74, 1, O.DESCRIBE_CONFIGS, resource_types=())


@case(48)
async def describe_client_quotas(a: Api) -> None:
    await cluster_op(a, 48, 1, O.DESCRIBE_CONFIGS, components=(), strict=False)


@case(49)
async def alter_client_quotas(a: Api) -> None:
    entity = a.n(49, 1, "EntityData", entity_type="client-id", entity_name="app")
    op = a.n(49, 1, "OpData", key="producer_byte_rate", value=1024.0, remove=False)
    fields = dict(validate_only=True, entries=(a.n(49, 1, "EntryData", entity=(entity,),
                                                   ops=(op,)),))
    path = ("entries", "error_code")
    assert codes_of(await a.call(49, 1, **fields), *path) == [CLUSTER_DENIED]
    a.allow(C, "kafka-cluster", O.DESCRIBE_CONFIGS)  # not enough
    assert codes_of(await a.call(49, 1, **fields), *path) == [CLUSTER_DENIED]
    a.allow(C, "kafka-cluster", O.ALTER_CONFIGS)
    assert codes_of(await a.call(49, 1, **fields), *path) == [0]


@case(33)
async def alter_configs(a: Api) -> None:
    await _alter_configs(a, 33, 2)


@case(44)
async def incremental_alter_configs(a: Api) -> None:
    await _alter_configs(a, 44, 1)


# --- cluster -------------------------------------------------------------------------------

@case(60)
async def describe_cluster(a: Api) -> None:
    # Served to anyone, as Kafka; only the authorized operations need Describe.
    resp = await a.call(60, 1, include_cluster_authorized_operations=True, endpoint_type=1)
    assert (resp.error_code, resp.cluster_authorized_operations) == (0, 0)
    assert [b.broker_id for b in resp.brokers] == [1]
    a.allow(C, "kafka-cluster", O.DESCRIBE)
    resp = await a.call(60, 1, include_cluster_authorized_operations=True, endpoint_type=1)
    assert resp.cluster_authorized_operations == 1 << 8


@case(34)
async def alter_replica_log_dirs(a: Api) -> None:
    log_dir = str(a.broker.data_dir)
    fields = dict(dirs=(a.n(34, 2, "AlterReplicaLogDir", path=log_dir, topics=(
        a.n(34, 2, "AlterReplicaLogDirTopic", name="t", partitions=(0,)),)),))
    path = ("results", "partitions", "error_code")
    assert codes_of(await a.call(34, 2, **fields), *path) == [CLUSTER_DENIED]
    a.allow(C, "kafka-cluster", O.ALTER)
    assert codes_of(await a.call(34, 2, **fields), *path) == [0]


@case(55)
async def describe_quorum(a: Api) -> None:
    part = a.n(55, 2, "PartitionData", partition_index=0)
    await cluster_op(a, 55, 2, O.DESCRIBE, topics=(
        a.n(55, 2, "TopicData", topic_name="__cluster_metadata", partitions=(part,)),))


@case(57)
async def update_features(a: Api) -> None:
    await cluster_op(a, 57, 2, O.ALTER, timeout=SECOND, feature_updates=(),
                      validate_only=True)


@case(35)
async def describe_log_dirs(a: Api) -> None:
    await cluster_op(a, 35, 4, O.DESCRIBE, topics=None)


@case(43)
async def elect_leaders(a: Api) -> None:
    await cluster_op(a, 43, 2, O.ALTER, election_type=0, topic_partitions=None,
                      timeout=SECOND)


@case(46)
async def list_partition_reassignments(a: Api) -> None:
    await cluster_op(a, 46, 0, O.DESCRIBE, timeout=SECOND, topics=None)


@case(45)
async def alter_partition_reassignments(a: Api) -> None:
    await cluster_op(a, 45, 0, O.ALTER, timeout=SECOND, topics=())


# --- client telemetry (KIP-714): no authorization, as in Kafka ------------------------------

@case(71)
async def get_telemetry_subscriptions(a: Api) -> None:
    resp = await a.call(71, 0, client_instance_id=None)
    assert resp.error_code == 0 and resp.client_instance_id is not None
    assert resp.requested_metrics == ()


@case(72)
async def push_telemetry(a: Api) -> None:
    got = await a.call(71, 0, client_instance_id=None)
    resp = await a.call(72, 0, client_instance_id=got.client_instance_id,
                        subscription_id=got.subscription_id, terminating=False,
                        compression_type=0, metrics=b"")
    assert resp.error_code == 0


@case(64)
async def unregister_broker(a: Api) -> None:
    # The broker's own id: registered and running, so allowed it answers no error.
    await cluster_op(a, 64, 0, O.ALTER, broker_id=1)


@case(94)
async def unregister_controller(a: Api) -> None:
    assert (await a.call(94, 0, controller_id=7)).error_code == CLUSTER_DENIED
    a.allow(C, "kafka-cluster", O.ALTER)
    assert (await a.call(94, 0, controller_id=7)).error_code == 136  # not registered
