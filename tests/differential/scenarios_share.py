"""Scenarios: group configs (resource type GROUP) and KIP-932 share groups: heartbeats and
their errors, ShareGroupDescribe, and the share-group offsets APIs."""

from __future__ import annotations

import time
import uuid
from typing import Any

from .harness import batch
from .registry import (
    CREATE_ACLS,
    DELETE_GROUPS,
    DESCRIBE_CONFIGS,
    INCREMENTAL_ALTER_CONFIGS,
    Run,
    call_until,
    create_topic,
    produce,
    scenario,
)

SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE = 76, 77
DESCRIBE_SHARE_GROUP_OFFSETS, ALTER_SHARE_GROUP_OFFSETS = 90, 91
DELETE_SHARE_GROUP_OFFSETS = 92
GROUP_RESOURCE = 32
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS = 15, 14
GROUP_AUTHORIZATION_FAILED = 30
#: AclOperation codes, and the GROUP resource type of the ACL APIs.
ACL_READ, ACL_DELETE, ACL_DESCRIBE, ACL_GROUP = 3, 6, 8, 3


def heartbeat(run: Run, step: str, group: str, member: str, epoch: int,
              topics: list[str] | None, record: bool = True) -> Any:
    return run.call(step, SHARE_GROUP_HEARTBEAT, record=record, group_id=group,
                    member_id=member, member_epoch=epoch, rack_id=None,
                    subscribed_topic_names=topics)


def settled(run: Run, group: str, member: str, topics: list[str]) -> int:
    """Join and heartbeat until the member's epoch stops moving (Kafka's coordinator may
    bump the group epoch once the share-partitions are initialized); its epoch."""
    resp = heartbeat(run, "join", group, member, 0, topics, record=False)
    epoch = int(resp.member_epoch)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        time.sleep(0.2)
        resp = heartbeat(run, "steady", group, member, epoch, None, record=False)
        if int(resp.error_code) != 0 or int(resp.member_epoch) == epoch:
            break
        epoch = int(resp.member_epoch)
    return epoch


@scenario("share-group-heartbeat")
def share_group_heartbeat(run: Run) -> None:
    create_topic(run, run.topic(), partitions=2)
    g, member = run.group(), str(uuid.uuid4())
    heartbeat(run, "empty_group_id", "", member, 0, [run.topic()])
    heartbeat(run, "empty_member_id", g, "", 0, [run.topic()])
    heartbeat(run, "first_without_topics", g, member, 0, None)
    heartbeat(run, "bad_epoch", g, member, -2, None)
    heartbeat(run, "unknown_member", g, member, 3, None)
    epoch = settled(run, g, member, [run.topic()])
    run.note("member_epoch_positive", epoch > 0)
    heartbeat(run, "fenced", g, member, epoch + 5, None)
    heartbeat(run, "leave", g, member, -1, None)
    heartbeat(run, "leave_again", g, member, -1, None)


@scenario("share-group-describe")
def share_group_describe(run: Run) -> None:
    create_topic(run, run.topic(), partitions=2)
    g, member = run.group(), str(uuid.uuid4())
    settled(run, g, member, [run.topic()])
    resp = run.call("describe", SHARE_GROUP_DESCRIBE, group_ids=[g, run.group("missing")],
                    include_authorized_operations=True)
    # Kafka bumps the group epoch as it initializes the share-partitions, and assigns them
    # only then; kafkalite assigns at once (allow-listed).
    run.note("described", [x.group_id for x in resp.groups])
    heartbeat(run, "leave", g, member, -1, None, record=False)
    run.call("describe_empty", SHARE_GROUP_DESCRIBE, group_ids=[g],
             include_authorized_operations=False)


def describe_offsets(run: Run, step: str, group: str,
                     topics: list[dict[str, Any]] | None) -> Any:
    return run.call(step, DESCRIBE_SHARE_GROUP_OFFSETS,
                    groups=[{"group_id": group, "topics": topics}])


def alter_offsets(run: Run, step: str, group: str, topic: str,
                  starts: dict[int, int], record: bool = True) -> Any:
    return run.call(step, ALTER_SHARE_GROUP_OFFSETS, record=record, group_id=group, topics=[{
        "topic_name": topic, "partitions": [{"partition_index": p, "start_offset": o}
                                            for p, o in starts.items()]}])


@scenario("share-group-offsets")
def share_group_offsets(run: Run) -> None:
    t = run.topic()
    tid = create_topic(run, t, partitions=2)
    produce(run, "produce", t, tid, batch(*(b"v%d" % i for i in range(5))), record=False)
    g, member = run.group(), str(uuid.uuid4())
    asked = [{"topic_name": t, "partitions": [0, 1]},
             {"topic_name": run.topic("missing"), "partitions": [0]}]
    describe_offsets(run, "describe_no_group", g, asked)
    alter_offsets(run, "alter_no_group", g, t, {0: 1})
    # Kafka 4.4 makes the share group an alter names.
    run.call("describe_altered_group", SHARE_GROUP_DESCRIBE, group_ids=[g],
             include_authorized_operations=False)
    describe_offsets(run, "describe_altered", g, asked)
    run.call("delete_no_group", DELETE_SHARE_GROUP_OFFSETS, group_id=g,
             topics=[{"topic_name": t}])
    settled(run, g, member, [t])
    alter_offsets(run, "alter_not_empty", g, t, {0: 1})
    heartbeat(run, "leave", g, member, -1, None, record=False)
    # Kafka's share coordinator may still be loading __share_group_state: ask again.
    deadline = time.monotonic() + 15
    while True:
        resp = alter_offsets(run, "alter_wait", g, t, {0: 3}, record=False)
        if int(resp.error_code) not in (COORDINATOR_NOT_AVAILABLE,
                                        COORDINATOR_LOAD_IN_PROGRESS) \
                or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    alter_offsets(run, "alter", g, t, {0: 2, 9: 0})
    describe_offsets(run, "describe", g, asked)
    describe_offsets(run, "describe_all", g, None)
    describe_offsets(run, "describe_none", g, [])
    run.call("delete", DELETE_SHARE_GROUP_OFFSETS, group_id=g,
             topics=[{"topic_name": t}, {"topic_name": run.topic("missing")}])
    describe_offsets(run, "describe_deleted", g, asked)
    run.call("delete_again", DELETE_SHARE_GROUP_OFFSETS, group_id=g,
             topics=[{"topic_name": t}])
    # DeleteGroups takes the share-partition state with the group.
    alter_offsets(run, "alter_before_group_delete", g, t, {1: 0})
    run.call("delete_group", DELETE_GROUPS, groups_names=[g])
    describe_offsets(run, "describe_after_group_delete", g, asked)


def allow_group(run: Run, group: str, operation: int) -> None:
    run.call("acl", CREATE_ACLS, record=False, creations=[{
        "resource_type": ACL_GROUP, "resource_name": group, "resource_pattern_type": 3,
        "principal": "User:alice", "host": "*", "operation": operation,
        "permission_type": 3}])


def once_allowed(step: str, call: Any, group_error: Any) -> Any:
    """Ask until the group is no longer refused (Kafka's broker applies a new ACL from
    its metadata log a moment after the controller answered), at most 10 s; the last
    answer is recorded under ``step``."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if int(group_error(call(None, False))) != GROUP_AUTHORIZATION_FAILED:
            break
        time.sleep(0.1)
    return call(step, True)


@scenario("share-offsets-acls")
def share_offsets_acls(run: Run) -> None:
    t = run.topic()
    create_topic(run, t, partitions=1)
    g = run.group()
    alice = run.wire(sasl_user="alice")

    def describe(step: str | None, record: bool) -> Any:
        return run.call(step or "wait", DESCRIBE_SHARE_GROUP_OFFSETS, wire=alice,
                        record=record, groups=[{"group_id": g, "topics": [
                            {"topic_name": t, "partitions": [0]}]}])

    def alter(step: str | None, record: bool) -> Any:
        return run.call(step or "wait", ALTER_SHARE_GROUP_OFFSETS, wire=alice, record=record,
                        group_id=g, topics=[{"topic_name": t, "partitions": [
                            {"partition_index": 0, "start_offset": 0}]}])

    def delete(step: str | None, record: bool) -> Any:
        return run.call(step or "wait", DELETE_SHARE_GROUP_OFFSETS, wire=alice,
                        record=record, group_id=g, topics=[{"topic_name": t}])

    describe("describe_denied", True)
    alter("alter_denied", True)
    delete("delete_denied", True)
    allow_group(run, g, ACL_DESCRIBE)
    once_allowed("describe_topic_denied", describe, lambda r: r.groups[0].error_code)
    allow_group(run, g, ACL_READ)
    once_allowed("alter_topic_denied", alter, lambda r: r.error_code)
    allow_group(run, g, ACL_DELETE)
    once_allowed("delete_topic_denied", delete, lambda r: r.error_code)


def group_configs(run: Run, step: str, group: str, names: list[str] | None) -> Any:
    return run.call(step, DESCRIBE_CONFIGS, resources=[{
        "resource_type": GROUP_RESOURCE, "resource_name": group, "configuration_keys": names}],
        include_synonyms=False, include_documentation=False)


def alter_group_configs(run: Run, step: str, group: str, configs: dict[str, str]) -> Any:
    return run.call(step, INCREMENTAL_ALTER_CONFIGS, resources=[{
        "resource_type": GROUP_RESOURCE, "resource_name": group, "configs": [
            {"name": k, "config_operation": 0, "value": v} for k, v in configs.items()]}],
        validate_only=False)


def _configs_set(resp: Any) -> bool:
    values = {c.name: c.value for r in resp.results for c in r.configs}
    return values.get("share.auto.offset.reset") == "earliest"


@scenario("group-configs")
def group_configs_scenario(run: Run) -> None:
    g = run.group()
    names = ["share.auto.offset.reset", "share.record.lock.duration.ms",
             "consumer.session.timeout.ms", "share.isolation.level"]
    group_configs(run, "describe_default", g, names)
    group_configs(run, "describe_every", g, None)
    alter_group_configs(run, "set", g, {"share.auto.offset.reset": "earliest",
                                        "consumer.session.timeout.ms": "50000"})
    call_until(run, "describe_set", DESCRIBE_CONFIGS, _configs_set, resources=[{
        "resource_type": GROUP_RESOURCE, "resource_name": g, "configuration_keys": names}],
        include_synonyms=False, include_documentation=False)
    alter_group_configs(run, "out_of_range", g, {"share.record.lock.duration.ms": "10"})
    alter_group_configs(run, "bad_value", g, {"share.auto.offset.reset": "sometime"})
    alter_group_configs(run, "unknown", g, {"no.such.group.config": "1"})
    group_configs(run, "describe_after", g, names)
