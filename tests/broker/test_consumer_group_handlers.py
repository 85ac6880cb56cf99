"""ConsumerGroupHeartbeat, ConsumerGroupDescribe and the group APIs that know consumer
groups (ListGroups v5, OffsetCommit/OffsetFetch v9), through the route table with decoded
requests; the protocol switch, the authorization KafkaApis applies, the configuration
checks and the catalogue events reaching the coordinator."""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kafkalite.broker.config.properties import Config, ConfigError
from kafkalite.broker.security.acl import (
    AclBinding,
    AclOperation,
    AclPermission,
    AclResourceType,
    PatternType,
)
from kafkalite.protocol.apis import codec
from kafkalite.protocol.build import nested
from kafkalite.protocol.errors import ErrorCode as E

from .harness import Handlers

HEARTBEAT, DESCRIBE, LIST_GROUPS, OFFSET_COMMIT, OFFSET_FETCH, API_VERSIONS = 68, 69, 16, 8, 9, 18
MS = datetime.timedelta(milliseconds=1)


def join(h: Handlers, member: str = "m1", group: str = "g", names: tuple[str, ...] = ("foo",),
         regex: str | None = None, version: int = 1) -> object:
    return h.request(HEARTBEAT, version, group_id=group, member_id=member, member_epoch=0,
                     instance_id=None, rack_id=None, rebalance_timeout=30000 * MS,
                     subscribed_topic_names=names, subscribed_topic_regex=regex,
                     server_assignor=None, topic_partitions=())


async def test_heartbeat_join_commit_fetch_and_describe(handlers: Handlers) -> None:
    info = handlers.broker.create_topic("foo", 3)
    r = await handlers.call(HEARTBEAT, 1, join(handlers))
    assert (r.error_code, r.error_message, r.member_id, r.member_epoch) == (E.none, None, "m1", 1)
    assert r.heartbeat_interval == 5000 * MS
    assert [(tp.topic_id, tp.partitions) for tp in r.assignment.topic_partitions] == [
        (info.topic_id, (0, 1, 2))]

    commit_t = codec(OFFSET_COMMIT, 9).request_type
    topic_t = nested(commit_t, "OffsetCommitRequestTopic")
    part_t = nested(commit_t, "OffsetCommitRequestPartition")

    async def commit(epoch: int, version: int = 9) -> E:
        req = handlers.request(OFFSET_COMMIT, version, group_id="g", member_id="m1",
                               generation_id_or_member_epoch=epoch, group_instance_id=None,
                               topics=(topic_t(name="foo", partitions=(part_t(
                                   partition_index=0, committed_offset=7,
                                   committed_leader_epoch=-1, committed_metadata=""),)),))
        resp = await handlers.call(OFFSET_COMMIT, version, req)
        return resp.topics[0].partitions[0].error_code  # type: ignore[no-any-return]

    assert await commit(1) is E.none
    assert await commit(0) is E.stale_member_epoch

    fetch_t = codec(OFFSET_FETCH, 9).request_type
    group_t = nested(fetch_t, "OffsetFetchRequestGroup")

    async def fetch(member: str | None, epoch: int) -> object:
        req = handlers.request(OFFSET_FETCH, 9, groups=(group_t(
            group_id="g", member_id=member, member_epoch=epoch, topics=None),),
            require_stable=False)
        return (await handlers.call(OFFSET_FETCH, 9, req)).groups[0]

    ok = await fetch("m1", 1)
    assert ok.error_code == 0
    assert [(p.partition_index, p.committed_offset) for t in ok.topics for p in t.partitions] == [
        (0, 7)]
    assert (await fetch("m1", 5)).error_code == E.stale_member_epoch
    assert (await fetch("nobody", 1)).error_code == E.unknown_member_id

    d = await handlers.call(DESCRIBE, 1, group_ids=("g", "missing"),
                            include_authorized_operations=True)
    g, missing = d.groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (
        E.none, "Stable", 1, 1, "uniform")
    # Read, Delete, Describe, DescribeConfigs and AlterConfigs on a group, as Kafka 4.x's
    # bit field.
    assert g.authorized_operations == (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)
    [m] = g.members
    assert (m.member_id, m.member_epoch, m.client_id, m.client_host, m.member_type,
            m.subscribed_topic_names) == ("m1", 1, "test", "/127.0.0.1", 1, ("foo",))
    assert [(tp.topic_id, tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions
            ] == [(info.topic_id, "foo", (0, 1, 2))]
    assert (missing.error_code, missing.error_message) == (E.group_id_not_found,
                                                           "Group missing not found.")


async def test_list_groups_v5_filters_by_type_and_state(handlers: Handlers) -> None:
    handlers.broker.create_topic("foo", 1)
    await handlers.call(HEARTBEAT, 1, join(handlers, group="cg"))

    async def listed(types: tuple[str, ...] = (), states: tuple[str, ...] = ()) -> set[tuple]:  # type: ignore[type-arg]
        r = await handlers.call(LIST_GROUPS, 5, states_filter=states, types_filter=types)
        return {(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in r.groups}

    assert ("cg", "consumer", "Stable", "consumer") in await listed()
    assert await listed(types=("Consumer",)) == {("cg", "consumer", "Stable", "consumer")}
    assert await listed(types=("classic",)) == set()
    assert await listed(types=("nonsense",)) == set()
    assert await listed(states=("STABLE",)) == {("cg", "consumer", "Stable", "consumer")}
    assert await listed(states=("empty",)) == set()


@pytest.fixture
async def classic_only(tmp_path: Path) -> AsyncIterator[Handlers]:
    h = Handlers(tmp_path / "data", {"group.coordinator.rebalance.protocols": "classic"})
    await h.open()
    yield h
    await h.close()


async def test_consumer_protocol_off_answers_unsupported_version(classic_only: Handlers) -> None:
    r = await classic_only.call(HEARTBEAT, 1, join(classic_only))
    assert (r.error_code, r.member_id) == (E.unsupported_version, None)
    d = await classic_only.call(DESCRIBE, 0, group_ids=("g",),
                                include_authorized_operations=False)
    assert [g.error_code for g in d.groups] == [E.unsupported_version]
    # As Kafka, the APIs stay advertised.
    versions = await classic_only.call(API_VERSIONS, 3, client_software_name="t",
                                       client_software_version="1")
    keys = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
    assert keys[HEARTBEAT] == (0, 1) and keys[DESCRIBE] == (0, 1)


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[Handlers]:
    h = Handlers(tmp_path / "data", {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    await h.open()

    def allow(rt: AclResourceType, name: str, op: AclOperation,
              pattern: PatternType = PatternType.LITERAL) -> AclBinding:
        return AclBinding(rt, name, pattern, "User:ANONYMOUS", "*", op, AclPermission.ALLOW)

    h.broker.acls.add([
        allow(AclResourceType.GROUP, "g", AclOperation.READ),
        allow(AclResourceType.GROUP, "g", AclOperation.DESCRIBE),
        allow(AclResourceType.TOPIC, "foo", AclOperation.DESCRIBE, PatternType.PREFIXED),
    ])
    yield h
    await h.close()


async def test_heartbeat_authorization_as_kafka_apis(secured: Handlers) -> None:
    for name in ("foo", "foo2", "secret"):
        secured.broker.create_topic(name, 1)
    r = await secured.call(HEARTBEAT, 1, join(secured, group="other"))
    assert r.error_code is E.group_authorization_failed
    r = await secured.call(HEARTBEAT, 1, join(secured, names=("foo", "secret")))
    assert r.error_code is E.topic_authorization_failed
    # A regex resolves to the topics the principal may describe only.
    r = await secured.call(HEARTBEAT, 1, join(secured, names=(), regex="foo.*|secret"))
    assert r.error_code is E.none
    g = secured.broker.groups.core.consumer_group("g")
    assert g is not None and g.resolved_regexes["foo.*|secret"].topics == {"foo", "foo2"}
    d = await secured.call(DESCRIBE, 1, group_ids=("g", "other"),
                           include_authorized_operations=False)
    assert [(x.group_id, x.error_code) for x in d.groups] == [
        ("other", E.group_authorization_failed), ("g", E.none)]


def test_consumer_group_settings_are_checked_as_kafka() -> None:
    cases = [
        ({"group.consumer.session.timeout.ms": "1000"},
         "group.consumer.session.timeout.ms must be greater than or equal to "
         "group.consumer.min.session.timeout.ms"),
        ({"group.consumer.heartbeat.interval.ms": "20000"},
         "group.consumer.heartbeat.interval.ms must be less than or equal to "
         "group.consumer.max.heartbeat.interval.ms"),
        ({"group.consumer.min.session.timeout.ms": "100", "group.consumer.session.timeout.ms":
          "1000", "group.consumer.heartbeat.interval.ms": "5000"},
         "group.consumer.heartbeat.interval.ms must be less than "
         "group.consumer.session.timeout.ms"),
        ({"group.coordinator.rebalance.protocols": "consumer"},
         "Disabling the 'classic' protocol is not supported."),
        ({"group.consumer.assignors": "sticky"}, "group.consumer.assignors: unknown assignor"),
        ({"group.consumer.migration.policy": "sideways"},
         "Invalid value sideways for configuration group.consumer.migration.policy"),
    ]
    for overrides, message in cases:
        with pytest.raises(ConfigError, match=message):
            Config.build(environ={}, overrides=overrides)
    ok = Config.build(environ={}, overrides={"group.consumer.assignors": "range,uniform",
                                             "group.consumer.migration.policy": "UPGRADE"})
    assert ok.text("group.consumer.assignors") == "range,uniform"


async def test_catalogue_events_reach_the_coordinator(handlers: Handlers) -> None:
    topics = handlers.broker.groups.core.topics
    info = handlers.broker.create_topic("grows", 2)
    assert topics.by_name["grows"].topic_id == info.topic_id
    version = topics.version
    handlers.broker.storage.catalog.set_partitions("grows", 5)
    assert topics.by_name["grows"].num_partitions == 5 and topics.version > version
    handlers.broker.storage.catalog.delete("grows")
    assert "grows" not in topics.by_name


@pytest.mark.parametrize("version", [0, 1])
def test_heartbeat_response_encoding_matches_kio(version: int) -> None:
    import uuid

    from kafkalite.broker.handlers.groups.consumer_groups import encode_heartbeat_response
    from kafkalite.coordinator.results import ConsumerHeartbeatResult

    resp_t = codec(HEARTBEAT, version).response_type
    tp_t, assignment_t = nested(resp_t, "TopicPartitions"), nested(resp_t, "Assignment")
    # a sorts first: Kafka compares the halves as signed longs.
    a, b = uuid.UUID(int=(1 << 127) + 5), uuid.UUID(int=7)
    cases = [
        ConsumerHeartbeatResult(E.none, None, "m1", 3, 5000, None),
        ConsumerHeartbeatResult(E.none, None, "m-é", 3, 5000, {a: frozenset({3, 1}),
                                                               b: frozenset(range(200))}),
        ConsumerHeartbeatResult(E.none, None, "m1", 4, 100, {}),
        ConsumerHeartbeatResult(E.fenced_member_epoch, "The member must rejoin." * 10),
    ]
    for res in cases:
        assignment = None if res.assignment is None else assignment_t(topic_partitions=tuple(
            tp_t(topic_id=t, partitions=tuple(sorted(res.assignment[t]))) for t in (
                [a, b] if len(res.assignment) == 2 else list(res.assignment))))
        expected = codec(HEARTBEAT, version).encode_response(resp_t(
            throttle_time=datetime.timedelta(0), error_code=res.error,
            error_message=res.message, member_id=res.member_id,
            member_epoch=res.member_epoch,
            heartbeat_interval=datetime.timedelta(milliseconds=res.heartbeat_interval_ms),
            assignment=assignment))
        assert encode_heartbeat_response(res) == expected, res
