"""Authorization cases: groups, offsets and security."""

from __future__ import annotations

from typing import Any

from kafkalite.broker.security.acl import AclResourceType

from .authz_harness import (
    CLUSTER_DENIED,
    GROUP_DENIED,
    NO_OPS,
    SECOND,
    TOPIC_DENIED,
    TXN_DENIED,
    Api,
    C,
    G,
    O,
    T,
    case,
    cluster_op,
    codes_of,
    group_read,
)

# --- groups --------------------------------------------------------------------------------

@case(10)
async def find_coordinator(a: Api) -> None:
    path = ("coordinators", "error_code")
    assert codes_of(await a.call(10, 4, key_type=0, coordinator_keys=("g",)), *path) == \
        [GROUP_DENIED]
    a.allow(G, "g", O.READ)  # Read implies the Describe FindCoordinator asks for
    assert codes_of(await a.call(10, 4, key_type=0, coordinator_keys=("g",)), *path) == [0]
    assert codes_of(await a.call(10, 4, key_type=1, coordinator_keys=("tx",)), *path) == \
        [TXN_DENIED]
    a.allow(AclResourceType.TRANSACTIONAL_ID, "tx", O.DESCRIBE)
    assert codes_of(await a.call(10, 4, key_type=1, coordinator_keys=("tx",)), *path) == [0]


@case(11)
async def join_group(a: Api) -> None:
    proto = a.n(11, 9, "JoinGroupRequestProtocol", name="range", metadata=b"")
    await group_read(a, 11, 9, group_id="g", session_timeout=10 * SECOND,
                      rebalance_timeout=10 * SECOND, member_id="", group_instance_id=None,
                      protocol_type="consumer", protocols=(proto,), reason=None)


@case(14)
async def sync_group(a: Api) -> None:
    await group_read(a, 14, 5, group_id="g", generation_id=1, member_id="m",
                      group_instance_id=None, protocol_type="consumer", protocol_name="range",
                      assignments=())


@case(12)
async def heartbeat(a: Api) -> None:
    await group_read(a, 12, 4, group_id="g", generation_id=1, member_id="m",
                      group_instance_id=None)


@case(13)
async def leave_group(a: Api) -> None:
    member = a.n(13, 5, "MemberIdentity", member_id="m", group_instance_id=None, reason=None)
    await group_read(a, 13, 5, group_id="g", members=(member,))


@case(68)
async def consumer_group_heartbeat(a: Api) -> None:
    """Read on the group; then Describe on every subscribed topic (KafkaApis, 4.0)."""
    fields = dict(group_id="g", member_id="m", member_epoch=0, instance_id=None,
                  rack_id=None, rebalance_timeout=10 * SECOND, subscribed_topic_names=("t",),
                  subscribed_topic_regex=None, server_assignor=None, topic_partitions=())
    await group_read(a, 68, 1, **fields)
    assert (await a.call(68, 1, **fields)).error_code == TOPIC_DENIED
    a.allow(T, "t", O.DESCRIBE)
    r = await a.call(68, 1, **fields)
    assert (r.error_code, r.member_epoch) == (0, 1)


@case(69)
async def consumer_group_describe(a: Api) -> None:
    fields = dict(group_ids=("g",), include_authorized_operations=True)
    (g,) = (await a.call(69, 1, **fields)).groups
    assert (g.error_code, g.authorized_operations) == (GROUP_DENIED, NO_OPS)
    a.allow(G, "g", O.DESCRIBE)
    (g,) = (await a.call(69, 1, **fields)).groups
    assert g.error_code == 69  # GROUP_ID_NOT_FOUND: allowed, and there is no such group


# --- offsets and group administration ---------------------------------------------------

async def _commit(a: Api, group: str) -> Any:
    part = a.n(8, 9, "OffsetCommitRequestPartition", partition_index=0, committed_offset=0,
               committed_leader_epoch=-1, committed_metadata=None)
    return await a.call(8, 9, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                        group_instance_id=None, topics=(
                            a.n(8, 9, "OffsetCommitRequestTopic", name="t",
                                partitions=(part,)),))


@case(8)
async def offset_commit(a: Api) -> None:
    path = ("topics", "partitions", "error_code")
    assert codes_of(await _commit(a, "g"), *path) == [GROUP_DENIED]
    a.allow(G, "g", O.READ)
    assert codes_of(await _commit(a, "g"), *path) == [TOPIC_DENIED]
    a.allow(T, "t", O.READ)
    assert codes_of(await _commit(a, "g"), *path) == [0]


@case(9)
async def offset_fetch(a: Api) -> None:
    def request(topics: Any) -> dict[str, Any]:
        return dict(require_stable=False, groups=(a.n(
            9, 9, "OffsetFetchRequestGroup", group_id="g", member_id=None, member_epoch=-1,
            topics=topics),))

    named = (a.n(9, 9, "OffsetFetchRequestTopics", name="t", partition_indexes=(0,)),)
    (g,) = (await a.call(9, 9, **request(named))).groups
    assert (g.error_code, g.topics) == (GROUP_DENIED, ())
    a.allow(G, "g", O.READ)
    a.allow(T, "t", O.READ)
    assert codes_of(await _commit(a, "g"), "topics", "partitions", "error_code") == [0]
    a.revoke_all()
    a.allow(G, "g", O.DESCRIBE)
    (g,) = (await a.call(9, 9, **request(named))).groups
    assert codes_of(g, "topics", "partitions", "error_code") == [TOPIC_DENIED]
    (g,) = (await a.call(9, 9, **request(None))).groups
    assert (g.error_code, g.topics) == (0, ())  # all topics: denied ones left out
    a.allow(T, "t", O.DESCRIBE)
    (g,) = (await a.call(9, 9, **request(None))).groups
    assert [(t.name, [p.committed_offset for p in t.partitions]) for t in g.topics] == \
        [("t", [0])]


@case(47)
async def offset_delete(a: Api) -> None:
    fields = dict(group_id="g", topics=(a.n(
        47, 0, "OffsetDeleteRequestTopic", name="t",
        partitions=(a.n(47, 0, "OffsetDeleteRequestPartition", partition_index=0),)),))
    assert (await a.call(47, 0, **fields)).error_code == GROUP_DENIED
    a.allow(G, "g", O.READ)  # OffsetDelete asks for Delete on the group
    assert (await a.call(47, 0, **fields)).error_code == GROUP_DENIED
    a.allow(G, "g", O.DELETE)
    resp = await a.call(47, 0, **fields)
    assert resp.error_code == 69  # GROUP_ID_NOT_FOUND: authorization passed
    a.allow(T, "t", O.READ)
    assert codes_of(await _commit(a, "g"), "topics", "partitions", "error_code") == [0]
    a.revoke_all()
    a.allow(G, "g", O.DELETE)
    resp = await a.call(47, 0, **fields)
    assert resp.error_code == 0
    assert codes_of(resp, "topics", "partitions", "error_code") == [TOPIC_DENIED]


@case(15)
async def describe_groups(a: Api) -> None:
    fields = dict(groups=("g",), include_authorized_operations=True)
    (g,) = (await a.call(15, 5, **fields)).groups
    assert (g.error_code, g.authorized_operations) == (GROUP_DENIED, NO_OPS)
    a.allow(G, "g", O.DESCRIBE)
    (g,) = (await a.call(15, 5, **fields)).groups
    assert (g.error_code, g.authorized_operations) == (0, 1 << 8)


@case(16)
async def list_groups(a: Api) -> None:
    a.allow(G, "g", O.READ)
    a.allow(T, "t", O.READ)
    assert codes_of(await _commit(a, "g"), "topics", "partitions", "error_code") == [0]
    a.revoke_all()
    resp = await a.call(16, 5, states_filter=(), types_filter=())
    assert (resp.error_code, resp.groups) == (0, ())  # filtered, not refused
    a.allow(G, "g", O.DESCRIBE)
    assert [g.group_id for g in (await a.call(16, 5, states_filter=(), types_filter=())).groups] \
        == ["g"]
    a.revoke_all()
    a.allow(C, "kafka-cluster", O.DESCRIBE)  # Describe on the cluster lists every group
    assert [g.group_id for g in (await a.call(16, 5, states_filter=(), types_filter=())).groups] \
        == ["g"]


@case(42)
async def delete_groups(a: Api) -> None:
    path = ("results", "error_code")
    assert codes_of(await a.call(42, 2, groups_names=("g",)), *path) == [GROUP_DENIED]
    a.allow(G, "g", O.DELETE)
    assert codes_of(await a.call(42, 2, groups_names=("g",)), *path) == [69]


# --- security ----------------------------------------------------------------------------

def _acl_fields(a: Api, api: int) -> dict[str, Any]:
    filt = dict(resource_type_filter=2, resource_name_filter="t", pattern_type_filter=3,
                principal_filter=None, host_filter=None, operation=1, permission_type=1)
    if api == 30:
        return dict(creations=(a.n(30, 3, "AclCreation", resource_type=2, resource_name="x",
                                   resource_pattern_type=3, principal="User:bob", host="*",
                                   operation=3, permission_type=3),))
    if api == 31:
        return dict(filters=(a.n(31, 3, "DeleteAclsFilter", **filt),))
    return filt


@case(30)
async def create_acls(a: Api) -> None:
    path = ("results", "error_code")
    assert codes_of(await a.call(30, 3, **_acl_fields(a, 30)), *path) == [CLUSTER_DENIED]
    a.allow(C, "kafka-cluster", O.ALTER)
    assert codes_of(await a.call(30, 3, **_acl_fields(a, 30)), *path) == [0]


@case(29)
async def describe_acls(a: Api) -> None:
    await cluster_op(a, 29, 3, O.DESCRIBE, **_acl_fields(a, 29))


@case(31)
async def delete_acls(a: Api) -> None:
    path = ("filter_results", "error_code")
    assert codes_of(await a.call(31, 3, **_acl_fields(a, 31)), *path) == [CLUSTER_DENIED]
    a.allow(C, "kafka-cluster", O.ALTER)
    assert codes_of(await a.call(31, 3, **_acl_fields(a, 31)), *path) == [0]


@case(50)
async def describe_user_scram_credentials(a: Api) -> None:
    await cluster_op(a, 50, 0, O.DESCRIBE, users=None)


@case(51)
async def alter_user_scram_credentials(a: Api) -> None:
    up = a.n(51, 0, "ScramCredentialUpsertion", name="carol", mechanism=1, iterations=4096,
             salt=b"salt", salted_password=b"x" * 32)
    path = ("results", "error_code")
    assert codes_of(await a.call(51, 0, deletions=(), upsertions=(up,)), *path) == \
        [CLUSTER_DENIED]
    a.allow(C, "kafka-cluster", O.ALTER)
    assert codes_of(await a.call(51, 0, deletions=(), upsertions=(up,)), *path) == [0]
