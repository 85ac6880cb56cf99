"""ShareGroupHeartbeat and ShareGroupDescribe, and the group APIs that know share groups
(ListGroups v5, DescribeGroups, DeleteGroups, ConsumerGroupDescribe), through the route
table with decoded requests; their authorization as KafkaApis; and ApiVersions not
offering the share APIs while ShareFetch is not served."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from kafkalite.broker.security.acl import (
    AclBinding,
    AclOperation,
    AclPermission,
    AclResourceType,
    PatternType,
)
from kafkalite.coordinator.partitions import share_session_key
from kafkalite.protocol.errors import ErrorCode as E

from .harness import Handlers
from .test_dynamic_configs import SET, incremental

SHARE_HEARTBEAT, SHARE_DESCRIBE = 76, 77
LIST_GROUPS, DESCRIBE_GROUPS, DELETE_GROUPS, CONSUMER_DESCRIBE, API_VERSIONS = 16, 15, 42, 69, 18
GROUP = 32  # the config resource type


async def heartbeat(h: Handlers, member: str, epoch: int, group: str = "sg",
                    names: tuple[str, ...] | None = ("foo",)) -> object:
    return await h.call(SHARE_HEARTBEAT, 1, group_id=group, member_id=member,
                        member_epoch=epoch, rack_id=None, subscribed_topic_names=names)


async def test_heartbeat_describe_list_and_delete(handlers: Handlers) -> None:
    info = handlers.broker.create_topic("foo", 2)
    r = await heartbeat(handlers, "m1", 0)
    assert (r.error_code, r.member_id, r.member_epoch) == (E.none, "m1", 1)
    assert r.heartbeat_interval.total_seconds() == 5
    assert [(tp.topic_id, tp.partitions) for tp in r.assignment.topic_partitions] == [
        (info.topic_id, (0, 1))]
    steady = await heartbeat(handlers, "m1", 1, names=None)
    assert (steady.error_code, steady.member_epoch, steady.assignment) == (E.none, 1, None)

    d = await handlers.call(SHARE_DESCRIBE, 1, group_ids=("sg", "missing"),
                            include_authorized_operations=False)
    g, missing = d.groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch,
            g.assignor_name) == (E.none, "Stable", 1, 1, "simple")
    [m] = g.members
    assert (m.member_id, m.member_epoch, m.client_id, m.client_host,
            m.subscribed_topic_names) == ("m1", 1, "test", "/127.0.0.1", ("foo",))
    assert [(tp.topic_id, tp.topic_name, tp.partitions)
            for tp in m.assignment.topic_partitions] == [(info.topic_id, "foo", (0, 1))]
    assert (missing.error_code, missing.error_message) == (E.group_id_not_found,
                                                           "Group missing not found.")

    listed = await handlers.call(LIST_GROUPS, 5, states_filter=(), types_filter=("Share",))
    assert [(x.group_id, x.protocol_type, x.group_state, x.group_type)
            for x in listed.groups] == [("sg", "share", "Stable", "share")]
    assert (await handlers.call(LIST_GROUPS, 5, states_filter=(),
                                types_filter=("consumer",))).groups == ()

    # DescribeGroups describes a group of another kind as Dead, as Kafka below v6.
    dg = await handlers.call(DESCRIBE_GROUPS, 5, groups=("sg",),
                             include_authorized_operations=False)
    assert (dg.groups[0].error_code, dg.groups[0].group_state) == (E.none, "Dead")
    cd = await handlers.call(CONSUMER_DESCRIBE, 1, group_ids=("sg",),
                             include_authorized_operations=False)
    assert (cd.groups[0].error_code, cd.groups[0].error_message) == (
        E.group_id_not_found, "Group sg is not a consumer group.")

    deleted = await handlers.call(DELETE_GROUPS, 2, groups_names=("sg",))
    assert deleted.results[0].error_code is E.non_empty_group
    left = await heartbeat(handlers, "m1", -1, names=None)
    assert (left.error_code, left.member_epoch) == (E.none, -1)
    deleted = await handlers.call(DELETE_GROUPS, 2, groups_names=("sg",))
    assert deleted.results[0].error_code is E.none
    assert handlers.broker.groups.core.share_group("sg") is None


async def test_bad_heartbeats_get_kafkas_errors(handlers: Handlers) -> None:
    handlers.broker.create_topic("foo", 1)
    first = await heartbeat(handlers, "m1", 0, names=())
    assert (first.error_code, first.error_message) == (
        E.invalid_request, "SubscribedTopicNames must be set in first request.")
    assert (await heartbeat(handlers, "", 0)).error_code is E.invalid_request
    # A member epoch for a group that does not exist: Kafka's GROUP_ID_NOT_FOUND.
    assert (await heartbeat(handlers, "m1", 3, names=None)).error_code is E.group_id_not_found
    await heartbeat(handlers, "m1", 0)
    assert (await heartbeat(handlers, "m1", 9, names=None)).error_code is E.fenced_member_epoch


async def test_share_apis_are_offered_at_kafka_4_2s_versions(handlers: Handlers) -> None:
    versions = await handlers.call(API_VERSIONS, 3, client_software_name="t",
                                   client_software_version="1")
    offered = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
    # ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge.
    assert {k: offered.get(k) for k in (SHARE_HEARTBEAT, SHARE_DESCRIBE, 78, 79)} == {
        SHARE_HEARTBEAT: (1, 1), SHARE_DESCRIBE: (1, 1), 78: (1, 2), 79: (1, 2)}


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[Handlers]:
    h = Handlers(tmp_path / "data", {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    await h.open()

    def allow(rt: AclResourceType, name: str, op: AclOperation) -> AclBinding:
        return AclBinding(rt, name, PatternType.LITERAL, "User:ANONYMOUS", "*", op,
                          AclPermission.ALLOW)

    h.broker.acls.add([
        allow(AclResourceType.GROUP, "sg", AclOperation.READ),
        allow(AclResourceType.GROUP, "sg", AclOperation.DESCRIBE),
        allow(AclResourceType.TOPIC, "foo", AclOperation.DESCRIBE),
    ])
    yield h
    await h.close()


async def test_authorization_as_kafka_apis(secured: Handlers) -> None:
    for name in ("foo", "secret"):
        secured.broker.create_topic(name, 1)
    r = await heartbeat(secured, "m1", 0, group="other")
    assert r.error_code is E.group_authorization_failed
    r = await heartbeat(secured, "m1", 0, names=("foo", "secret"))
    assert r.error_code is E.topic_authorization_failed
    assert (await heartbeat(secured, "m1", 0)).error_code is E.none
    d = await secured.call(SHARE_DESCRIBE, 1, group_ids=("sg", "other"),
                           include_authorized_operations=True)
    assert [(x.group_id, x.error_code) for x in d.groups] == [
        ("other", E.group_authorization_failed), ("sg", E.none)]
    assert d.groups[1].authorized_operations == (1 << 3) | (1 << 8)  # Read, Describe


async def test_share_group_uses_its_session_timeout_and_heartbeat(handlers: Handlers) -> None:
    handlers.broker.create_topic("foo", 1)
    assert (await incremental(handlers, "sg", ("share.heartbeat.interval.ms", SET, "7000"),
                              ("share.session.timeout.ms", SET, "55000"), rtype=GROUP))[0] == 0
    r = await heartbeat(handlers, "m1", 0)
    other = await heartbeat(handlers, "m2", 0, group="other")
    assert r.heartbeat_interval == timedelta(seconds=7)
    assert other.heartbeat_interval == timedelta(seconds=5)
    timers = handlers.broker.scheduler.timers
    now = handlers.broker.scheduler.now()
    mine = timers.deadline(share_session_key("sg", "m1"))
    theirs = timers.deadline(share_session_key("other", "m2"))
    assert mine is not None and theirs is not None
    assert mine - now > 50000 >= theirs - now
