"""The cluster admin APIs of a one-broker KRaft cluster, through the handlers:
DescribeTopicPartitions (paging), DescribeQuorum, ListConfigResources, AlterReplicaLogDirs,
client quotas, ApiVersions' features and UpdateFeatures."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from kafkalite.broker.auth import Operation, ResourceType
from kafkalite.client.kafka import request_class
from kafkalite.protocol import features
from kafkalite.protocol.errors import ErrorCode

from .harness import Handlers

API_VERSIONS, CREATE_TOPICS, ALTER_REPLICA_LOG_DIRS, DESCRIBE_LOG_DIRS = 18, 19, 34, 35
DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, DESCRIBE_QUORUM, UPDATE_FEATURES = 48, 49, 55, 57
LIST_CONFIG_RESOURCES, DESCRIBE_TOPIC_PARTITIONS = 74, 75
SECOND = datetime.timedelta(seconds=1)


async def create(handlers: Handlers, *topics: tuple[str, int]) -> None:
    topic_t = request_class(CREATE_TOPICS, 7, "CreatableTopic")
    resp = await handlers.call(CREATE_TOPICS, 7, timeout=SECOND, validate_only=False,
                               topics=tuple(topic_t(name=n, num_partitions=p,
                                                    replication_factor=-1, assignments=(),
                                                    configs=()) for n, p in topics))
    assert all(t.error_code is ErrorCode.none for t in resp.topics)


class Deny:
    """An authorizer refusing the listed (operation, resource name) pairs."""

    def __init__(self, *refused: tuple[Operation, str]) -> None:
        self.refused = set(refused)

    def authorize(self, principal: str, action: Any, host: str = "") -> bool:
        return (action.operation, action.name) not in self.refused


# --- DescribeTopicPartitions ----------------------------------------------------------


async def describe_topics(handlers: Handlers, names: tuple[str, ...], limit: int = 2000,
                          cursor: tuple[str, int] | None = None) -> Any:
    topic_t = request_class(DESCRIBE_TOPIC_PARTITIONS, 0, "TopicRequest")
    cursor_t = request_class(DESCRIBE_TOPIC_PARTITIONS, 0, "Cursor")
    return await handlers.call(
        DESCRIBE_TOPIC_PARTITIONS, 0, topics=tuple(topic_t(name=n) for n in names),
        response_partition_limit=limit,
        cursor=None if cursor is None else cursor_t(topic_name=cursor[0],
                                                    partition_index=cursor[1]))


def pages(resp: Any) -> tuple[list[tuple[str, ErrorCode, list[int]]], tuple[str, int] | None]:
    topics = [(t.name, t.error_code, [p.partition_index for p in t.partitions])
              for t in resp.topics]
    c = resp.next_cursor
    return topics, None if c is None else (c.topic_name, c.partition_index)


async def test_describe_topic_partitions_pages_with_a_cursor(handlers: Handlers) -> None:
    await create(handlers, ("b", 3), ("a", 2), ("c", 1))
    # Every topic, in name order, two partitions per response.
    seen: list[tuple[str, ErrorCode, list[int]]] = []
    cursor = None
    for _ in range(10):
        topics, cursor = pages(await describe_topics(handlers, (), limit=2, cursor=cursor))
        seen.extend(topics)
        if cursor is None:
            break
    assert seen == [("a", ErrorCode.none, [0, 1]), ("b", ErrorCode.none, [0, 1]),
                    ("b", ErrorCode.none, [2]), ("c", ErrorCode.none, [0])]
    # A page that ends exactly at a topic's end points at the next topic's start.
    assert pages(await describe_topics(handlers, ("a", "b"), limit=2)) == (
        [("a", ErrorCode.none, [0, 1])], ("b", 0))
    # Named topics: unknown and invalid names are answered in order, with no partitions.
    assert pages(await describe_topics(handlers, ("zz", "c", "bad name"))) == (
        [("bad name", ErrorCode.invalid_topic_exception, []), ("c", ErrorCode.none, [0]),
         ("zz", ErrorCode.unknown_topic_or_partition, [])], None)
    # The cursor topic must be among the named ones, and its partition not negative.
    for names, cursor in ((("a",), ("b", 0)), (("a",), ("a", -1))):
        bad = await describe_topics(handlers, names, cursor=cursor)
        assert [(t.name, t.error_code) for t in bad.topics] == [
            ("a", ErrorCode.invalid_request)]


async def test_describe_topic_partitions_content(handlers: Handlers) -> None:
    await create(handlers, ("t", 2))
    handlers.broker.logs.get("t", 1).become_leader(4)  # type: ignore[union-attr]
    resp = await describe_topics(handlers, ("t", "__consumer_offsets"))
    t = resp.topics[1]
    node = handlers.broker.node_id
    assert (t.name, t.is_internal, t.topic_id) == (
        "t", False, handlers.broker.topics.get("t").topic_id)  # type: ignore[union-attr]
    assert t.topic_authorized_operations > 0
    assert [(p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes,
             p.eligible_leader_replicas, p.offline_replicas) for p in t.partitions] == [
        (0, node, 0, (node,), (node,), (), ()), (1, node, 4, (node,), (node,), (), ())]
    # Kafka's internal topics are flagged as such even before they exist.
    assert (resp.topics[0].name, resp.topics[0].is_internal, resp.topics[0].error_code) == (
        "__consumer_offsets", True, ErrorCode.unknown_topic_or_partition)


async def test_describe_topic_partitions_limit_and_authorization(tmp_path: Path) -> None:
    h = Handlers(tmp_path / "data", {"max.request.partition.size.limit": "3"})
    await h.open()
    try:
        await create(h, ("open", 5), ("hidden", 1))
        # The broker's cap wins over a larger request limit; at least one is answered.
        assert pages(await describe_topics(h, ("open",), limit=100)) == (
            [("open", ErrorCode.none, [0, 1, 2])], ("open", 3))
        assert pages(await describe_topics(h, ("open",), limit=0)) == (
            [("open", ErrorCode.none, [0])], ("open", 1))
        h.broker.apis.access.authorizer = Deny((Operation.DESCRIBE, "hidden"))
        # A named topic the principal may not see is refused (after the others) without
        # its id (all zeros on the wire, which kio reads as None); a full listing leaves
        # it out.
        resp = await describe_topics(h, ("hidden", "open"), cursor=("hidden", 0))
        assert [(t.name, t.error_code, t.topic_id) for t in resp.topics] == [
            ("open", ErrorCode.none, h.broker.topics.get("open").topic_id),  # type: ignore[union-attr]
            ("hidden", ErrorCode.topic_authorization_failed, None)]
        assert [t.name for t in (await describe_topics(h, (), limit=10)).topics] == ["open"]
    finally:
        await h.close()


# --- DescribeQuorum ---------------------------------------------------------------------


async def test_describe_quorum_reports_this_node_as_the_only_voter(handlers: Handlers) -> None:
    reg = handlers.broker.apis.registration(DESCRIBE_QUORUM)
    assert reg is not None and (reg.min_version, reg.max_version) == (0, 2)
    assert [(a.operation, a.resource_type) for a in reg.acl(None)] == [  # type: ignore[misc]
        (Operation.DESCRIBE, ResourceType.CLUSTER)]
    node = handlers.broker.node_id

    def ask(version: int, topic: str = "__cluster_metadata", partition: int = 0) -> Any:
        topic_t = request_class(DESCRIBE_QUORUM, version, "TopicData")
        part_t = request_class(DESCRIBE_QUORUM, version, "PartitionData")
        return handlers.call(DESCRIBE_QUORUM, version, topics=(topic_t(
            topic_name=topic, partitions=(part_t(partition_index=partition),)),))

    for version in (0, 1, 2):
        resp = await ask(version)
        assert resp.error_code is ErrorCode.none
        (topic,) = resp.topics
        (p,) = topic.partitions
        assert (topic.topic_name, p.error_code, p.leader_id, p.leader_epoch,
                p.high_watermark, p.observers) == (
            "__cluster_metadata", ErrorCode.none, node, 1, 1, ())
        assert [(v.replica_id, v.log_end_offset) for v in p.current_voters] == [(node, 1)]
        if version >= 1:
            assert p.current_voters[0].last_caught_up_timestamp > 0
        if version >= 2:
            assert [(n.node_id, [(x.name, x.host, x.port) for x in n.listeners])
                    for n in resp.nodes] == [(node, [("PLAINTEXT", "127.0.0.1", 9092)])]
    wrong = await ask(2, partition=1)
    assert [(p.partition_index, p.error_code) for p in wrong.topics[0].partitions] == [
        (1, ErrorCode.unknown_topic_or_partition)]


# --- ListConfigResources --------------------------------------------------------------


async def test_list_config_resources(handlers: Handlers) -> None:
    await create(handlers, ("t1", 1), ("t2", 1))
    reg = handlers.broker.apis.registration(LIST_CONFIG_RESOURCES)
    assert reg is not None and (reg.min_version, reg.max_version) == (0, 1)
    assert [a.operation for a in reg.acl(None)] == [Operation.DESCRIBE_CONFIGS]  # type: ignore[misc]
    node = str(handlers.broker.node_id)
    # v0 (ListClientMetricsResources): client-metrics subscriptions, of which there are none.
    v0 = await handlers.call(LIST_CONFIG_RESOURCES, 0)
    assert (v0.error_code, v0.config_resources) == (ErrorCode.none, ())
    every = await handlers.call(LIST_CONFIG_RESOURCES, 1, resource_types=())
    assert sorted((r.resource_type, r.resource_name) for r in every.config_resources) == [
        (2, "t1"), (2, "t2"), (4, node), (8, node)]
    topics = await handlers.call(LIST_CONFIG_RESOURCES, 1, resource_types=(2, 16))
    assert sorted(r.resource_name for r in topics.config_resources) == ["t1", "t2"]
    bad = await handlers.call(LIST_CONFIG_RESOURCES, 1, resource_types=(2, 1))
    assert (bad.error_code, bad.config_resources) == (ErrorCode.unsupported_version, ())


# --- AlterReplicaLogDirs ----------------------------------------------------------------


async def test_alter_replica_log_dirs_within_the_one_directory(handlers: Handlers) -> None:
    await create(handlers, ("moved", 2))
    described = await handlers.call(DESCRIBE_LOG_DIRS, 4, topics=None)
    here = described.results[0].log_dir
    assert Path(here) == (handlers.broker.cluster.data_dir).resolve()
    long_name = "x" * 240

    async def alter(*dirs: tuple[str, str, tuple[int, ...]]) -> list[tuple[str, int, ErrorCode]]:
        dir_t = request_class(ALTER_REPLICA_LOG_DIRS, 2, "AlterReplicaLogDir")
        topic_t = request_class(ALTER_REPLICA_LOG_DIRS, 2, "AlterReplicaLogDirTopic")
        resp = await handlers.call(ALTER_REPLICA_LOG_DIRS, 2, dirs=tuple(
            dir_t(path=path, topics=(topic_t(name=topic, partitions=parts),))
            for path, topic, parts in dirs))
        return sorted((t.topic_name, p.partition_index, p.error_code)
                      for t in resp.results for p in t.partitions)

    assert await alter((here, "moved", (0, 1)), ("/elsewhere", "moved", (5,)),
                       (here, "nope", (0,)), (here, long_name, (0,))) == [
        ("moved", 0, ErrorCode.none), ("moved", 1, ErrorCode.none),
        ("moved", 5, ErrorCode.log_dir_not_found),
        ("nope", 0, ErrorCode.replica_not_available),
        (long_name, 0, ErrorCode.invalid_topic_exception)]
    # Nothing moved: the partitions are where they were.
    assert handlers.broker.logs.get("moved", 0).dir.parent.resolve() == Path(here)  # type: ignore[union-attr]
    handlers.broker.apis.access.authorizer = Deny((Operation.ALTER, "kafka-cluster"))
    assert await alter((here, "moved", (0,))) == [
        ("moved", 0, ErrorCode.cluster_authorization_failed)]


# --- client quotas ----------------------------------------------------------------------


def entity(*pairs: tuple[str, str | None], version: int = 1, api: int = ALTER_CLIENT_QUOTAS
           ) -> tuple[Any, ...]:
    entity_t = request_class(api, version, "EntityData")
    return tuple(entity_t(entity_type=t, entity_name=n) for t, n in pairs)


QuotaEntry = tuple[tuple[Any, ...], dict[str, float | None]]
QuotaResult = tuple[dict[str, str | None], ErrorCode, str | None]


async def alter_quotas(handlers: Handlers, *entries: QuotaEntry,
                       validate_only: bool = False) -> list[QuotaResult]:
    entry_t = request_class(ALTER_CLIENT_QUOTAS, 1, "EntryData")
    op_t = request_class(ALTER_CLIENT_QUOTAS, 1, "OpData")
    resp = await handlers.call(ALTER_CLIENT_QUOTAS, 1, validate_only=validate_only, entries=tuple(
        entry_t(entity=ent, ops=tuple(op_t(key=k, value=v or 0.0, remove=v is None)
                                      for k, v in ops.items()))
        for ent, ops in entries))
    return [({e.entity_type: e.entity_name for e in r.entity}, r.error_code, r.error_message)
            for r in resp.entries]


async def describe_quotas(handlers: Handlers, *components: tuple[str, int, str | None],
                          strict: bool = False) -> Any:
    comp_t = request_class(DESCRIBE_CLIENT_QUOTAS, 1, "ComponentData")
    return await handlers.call(DESCRIBE_CLIENT_QUOTAS, 1, strict=strict, components=tuple(
        comp_t(entity_type=t, match_type=m, match=x) for t, m, x in components))


def described(resp: Any) -> list[tuple[dict[str, str | None], dict[str, float]]]:
    assert resp.error_code is ErrorCode.none, resp.error_message
    return sorted((({e.entity_type: e.entity_name for e in r.entity},
                    {v.key: v.value for v in r.values}) for r in resp.entries), key=str)


async def test_client_quotas_are_stored_and_filtered_as_kafka_does(handlers: Handlers) -> None:
    results = await alter_quotas(
        handlers,
        (entity(("user", "alice")), {"producer_byte_rate": 1024.0, "request_percentage": 50.5}),
        (entity(("user", "alice"), ("client-id", "app")), {"consumer_byte_rate": 2048.0}),
        (entity(("user", None)), {"producer_byte_rate": 100.0}),
        (entity(("client-id", "app")), {"consumer_byte_rate": 10.0}),
        (entity(("ip", "127.0.0.1")), {"connection_creation_rate": 5.0}),
    )
    assert [r[1] for r in results] == [ErrorCode.none] * 5
    alice = {"user": "alice"}
    alice_app = {"client-id": "app", "user": "alice"}
    # No components: everything. EXACT, DEFAULT (null name) and SPECIFIED (any name).
    assert len(described(await describe_quotas(handlers))) == 5
    assert described(await describe_quotas(handlers, ("user", 0, "alice"))) == [
        (alice_app, {"consumer_byte_rate": 2048.0}),
        (alice, {"producer_byte_rate": 1024.0, "request_percentage": 50.5})]
    assert described(await describe_quotas(handlers, ("user", 0, "alice"), strict=True)) == [
        (alice, {"producer_byte_rate": 1024.0, "request_percentage": 50.5})]
    assert described(await describe_quotas(handlers, ("user", 1, None))) == [
        ({"user": None}, {"producer_byte_rate": 100.0})]
    assert sorted(str(e) for e, _v in described(
        await describe_quotas(handlers, ("client-id", 2, None)))) == sorted(
        [str({"client-id": "app"}), str(alice_app)])
    assert described(await describe_quotas(handlers, ("ip", 2, None))) == [
        ({"ip": "127.0.0.1"}, {"connection_creation_rate": 5.0})]
    # Removing a key, and the last key of an entity removes the entity.
    await alter_quotas(handlers, (entity(("user", "alice")), {"request_percentage": None}),
                       (entity(("client-id", "app")), {"consumer_byte_rate": None}))
    assert described(await describe_quotas(handlers, ("user", 0, "alice"), strict=True)) == [
        (alice, {"producer_byte_rate": 1024.0})]
    assert described(await describe_quotas(handlers, ("client-id", 0, "app"),
                                           strict=True)) == []
    # validate_only changes nothing.
    assert (await alter_quotas(handlers, (entity(("user", "bob")), {"producer_byte_rate": 1.0}),
                               validate_only=True))[0][1] is ErrorCode.none
    assert described(await describe_quotas(handlers, ("user", 0, "bob"))) == []


async def test_client_quota_errors(handlers: Handlers) -> None:
    cases: list[tuple[tuple[Any, ...], dict[str, float | None], str]] = [
        ((), {"producer_byte_rate": 1.0}, "Invalid empty client quota entity"),
        (entity(("group", "g")), {"producer_byte_rate": 1.0},
         "Unhandled client quota entity type: group"),
        (entity(("user", "")), {"producer_byte_rate": 1.0}, "Empty user not supported"),
        (entity(("ip", "1.2.3.4"), ("user", "u")), {"connection_creation_rate": 1.0},
         "Invalid quota entity combination"),
        (entity(("ip", "not an ip")), {"connection_creation_rate": 1.0},
         "is not a valid IP or resolvable host"),
        (entity(("user", "u")), {"connection_creation_rate": 1.0},
         "Invalid configuration key connection_creation_rate"),
        (entity(("user", "u")), {"producer_byte_rate": -1.0},
         "Quota producer_byte_rate must be greater than 0"),
        (entity(("user", "u")), {"producer_byte_rate": 1.5},
         "producer_byte_rate cannot be a fractional value."),
        (entity(("ip", "::1")), {"connection_creation_rate": 2.0**40},
         "too large for an INT"),
    ]
    for ent, ops, message in cases:
        ((_e, err, text),) = await alter_quotas(handlers, (ent, ops))
        assert err is ErrorCode.invalid_request and message in (text or ""), (ent, text)
    assert described(await describe_quotas(handlers)) == []

    for comps, code in (
        ((("user", 0, None),), ErrorCode.invalid_request),
        ((("user", 1, "x"),), ErrorCode.invalid_request),
        ((("user", 2, None), ("user", 0, "x")), ErrorCode.invalid_request),
        ((("ip", 2, None), ("user", 2, None)), ErrorCode.invalid_request),
        ((("group", 2, None),), ErrorCode.unsupported_version),
        ((("user", 7, None),), ErrorCode.invalid_request),
        ((("", 2, None),), ErrorCode.invalid_request),
    ):
        resp = await describe_quotas(handlers, *comps)
        assert (resp.error_code, resp.entries) == (code, None), comps
        assert resp.error_message

    handlers.broker.apis.access.authorizer = Deny((Operation.ALTER_CONFIGS, "kafka-cluster"))
    ((_e, err, _m),) = await alter_quotas(handlers, (entity(("user", "u")),
                                                     {"producer_byte_rate": 1.0}))
    assert err is ErrorCode.cluster_authorization_failed
    reg = handlers.broker.apis.registration(DESCRIBE_CLIENT_QUOTAS)
    assert reg is not None and [a.operation for a in reg.acl(None)] == [  # type: ignore[misc]
        Operation.DESCRIBE_CONFIGS]


async def test_client_quotas_persist_across_restarts(tmp_path: Path) -> None:
    first = Handlers(tmp_path / "data")
    await first.open()
    await alter_quotas(first, (entity(("user", "carol"), ("client-id", None)),
                               {"consumer_byte_rate": 4096.0}))
    await first.close()
    assert (tmp_path / "data" / "__client_quotas.json").exists()
    again = Handlers(tmp_path / "data")
    await again.open()
    try:
        assert described(await describe_quotas(again, ("user", 0, "carol"))) == [
            ({"client-id": None, "user": "carol"}, {"consumer_byte_rate": 4096.0})]
    finally:
        await again.close()


# --- features -------------------------------------------------------------------------


async def test_api_versions_reports_the_feature_levels(handlers: Handlers) -> None:
    v4 = await handlers.call(API_VERSIONS, 4, client_software_name="t",
                             client_software_version="1")
    supported = {f.name: (f.min_version, f.max_version) for f in v4.supported_features}
    # The default release emulated is Kafka 4.4: its metadata.version (33).
    assert supported == {"metadata.version": (33, 33), "kraft.version": (0, 0),
                         "group.version": (1, 1), "transaction.version": (2, 2),
                         "streams.version": (1, 1)}
    # Finalized: only features above level 0, as Kafka lists them.
    assert [(f.name, f.min_version_level, f.max_version_level)
            for f in v4.finalized_features] == [("metadata.version", 33, 33),
                                                ("group.version", 1, 1),
                                                ("transaction.version", 2, 2),
                                                ("streams.version", 1, 1)]
    assert v4.finalized_features_epoch == features.FINALIZED_EPOCH
    # Below v4, supported ranges starting at 0 are left out (KAFKA-17492).
    v3 = await handlers.call(API_VERSIONS, 3, client_software_name="t",
                             client_software_version="1")
    assert [f.name for f in v3.supported_features] == ["metadata.version", "group.version",
                                                       "transaction.version",
                                                       "streams.version"]
    keys = {k.api_key: (k.min_version, k.max_version) for k in v4.api_keys}
    assert {k: keys[k] for k in (23, 34, 48, 49, 55, 57, 74, 75)} == {
        23: (2, 4), 34: (1, 2), 48: (0, 1), 49: (0, 1), 55: (0, 2), 57: (0, 2), 74: (0, 1),
        75: (0, 0)}


async def test_update_features_accepts_only_the_levels_in_force(handlers: Handlers) -> None:
    reg = handlers.broker.apis.registration(UPDATE_FEATURES)
    assert reg is not None and [a.operation for a in reg.acl(None)] == [  # type: ignore[misc]
        Operation.ALTER]

    async def update(version: int, *updates: tuple[str, int, int]) -> Any:
        key_t = request_class(UPDATE_FEATURES, version, "FeatureUpdateKey")

        def key(name: str, level: int, kind: int) -> Any:
            if version == 0:
                return key_t(feature=name, max_version_level=level, allow_downgrade=kind != 1)
            return key_t(feature=name, max_version_level=level, upgrade_type=kind)

        return await handlers.call(UPDATE_FEATURES, version, timeout=SECOND,
                                   validate_only=False,
                                   feature_updates=tuple(key(*u) for u in updates))

    ok = await update(1, ("metadata.version", 33, 1), ("group.version", 1, 1))
    assert (ok.error_code, [(r.feature, r.error_code) for r in ok.results]) == (
        ErrorCode.none, [("metadata.version", ErrorCode.none), ("group.version", ErrorCode.none)])
    assert (await update(2, ("metadata.version", 33, 1))).error_code is ErrorCode.none
    # UpdateFeatures checks against the levels ApiVersions reports (the emulated release's
    # metadata.version, not the record format kafkalite writes).
    reported = await handlers.call(API_VERSIONS, 4, client_software_name="t",
                                   client_software_version="1")
    for f in reported.finalized_features:
        assert (await update(2, (f.name, f.max_version_level, 1))).error_code is (
            ErrorCode.none), f.name
    assert features.METADATA_VERSION.level != 33  # else the check above proves nothing
    for version, upd, why in (
        # A feature whose only level is 0 is one this broker "does not support".
        (2, ("kraft.version", 1, 1), "Local controller 1 does not support this feature."),
        (2, ("group.version", 0, 2), "only supports versions 1"),
        (2, ("metadata.version", 21, 2), "only supports versions 33"),
        (1, ("transaction.version", 1, 2), "only supports versions 2"),
        (2, ("no.such.feature", 1, 1), "does not support this feature"),
        (2, ("group.version", -1, 1), "cannot be less than 0"),
        (2, ("group.version", 0, 9), "does not support the given upgrade type"),
        (0, ("metadata.version", 34, 1), "only supports versions 33"),
    ):
        resp = await update(version, upd)
        assert resp.error_code is ErrorCode.invalid_update_version, upd
        assert why in resp.error_message and resp.error_message.startswith(
            "The update failed for all features"), resp.error_message
        assert getattr(resp, "results", ()) == ()
