"""Scenarios: the classic group protocol, KIP-848 consumer groups, offsets and group
administration."""

from __future__ import annotations

import time
import uuid
from typing import Any

from .registry import (
    CONSUMER_GROUP_DESCRIBE,
    CONSUMER_GROUP_HEARTBEAT,
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    SYNC_GROUP,
    Run,
    create_topic,
    scenario,
)


def join(run: Run, step: str, group: str, member_id: str = "",
         session_ms: int = 10_000) -> Any:
    return run.call(step, JOIN_GROUP, group_id=group, session_timeout=session_ms,
                    rebalance_timeout=10_000, member_id=member_id, group_instance_id=None,
                    protocol_type="consumer", protocols=[{"name": "range",
                                                          "metadata": b"\x00\x01"}],
                    reason=None)


def joined(run: Run, group: str) -> tuple[str, int]:
    first = join(run, "join", group)
    member = first.member_id
    if int(first.error_code) != 0:  # MEMBER_ID_REQUIRED (v4+): join again with the id
        second = join(run, "rejoin", group, member)
        return second.member_id, int(second.generation_id)
    return member, int(first.generation_id)


def offsets(group: str, topic: str, topic_id: Any, offset: int,
            partitions: tuple[int, ...] = (0,)) -> dict[str, Any]:
    return {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "retention_time": -1, "topics": [
                {"name": topic, "topic_id": topic_id, "partitions": [
                    {"partition_index": p, "committed_offset": offset,
                     "committed_leader_epoch": -1, "committed_metadata": "m",
                     "commit_timestamp": -1} for p in partitions]}]}


def fetch_offsets(run: Run, step: str, group: str, topic: str | None,
                  topic_id: Any = None) -> None:
    topics = None if topic is None else [{"name": topic, "topic_id": topic_id,
                                          "partition_indexes": [0, 1]}]
    run.call(step, OFFSET_FETCH, group_id=group, topics=topics, require_stable=False,
             groups=[{"group_id": group, "member_id": None, "member_epoch": -1,
                      "topics": topics}])


@scenario("find-coordinator")
def find_coordinator(run: Run) -> None:
    run.call("group", FIND_COORDINATOR, key=run.group(), key_type=0,
             coordinator_keys=[run.group()])
    run.call("transaction", FIND_COORDINATOR, key=run.group("txn"), key_type=1,
             coordinator_keys=[run.group("txn")])
    run.call("bad_type", FIND_COORDINATOR, key=run.group(), key_type=5,
             coordinator_keys=[run.group()])


# Found a difference, fixed: a group's authorized operations include the configs ones.
@scenario("classic-group-lifecycle")
def classic_group(run: Run) -> None:
    g = run.group()
    member, generation = joined(run, g)
    run.call("sync", SYNC_GROUP, group_id=g, generation_id=generation, member_id=member,
             group_instance_id=None, protocol_type="consumer", protocol_name="range",
             assignments=[{"member_id": member, "assignment": b"\x00\x01\x02"}])
    run.call("heartbeat", HEARTBEAT, group_id=g, generation_id=generation,
             member_id=member, group_instance_id=None)
    run.call("describe", DESCRIBE_GROUPS, groups=[g], include_authorized_operations=True)
    run.call("leave", LEAVE_GROUP, group_id=g, member_id=member,
             members=[{"member_id": member, "group_instance_id": None, "reason": None}])
    run.call("describe_empty", DESCRIBE_GROUPS, groups=[g],
             include_authorized_operations=False)


@scenario("classic-group-errors")
def classic_group_errors(run: Run) -> None:
    g = run.group()
    member, generation = joined(run, g)
    run.call("heartbeat_wrong_generation", HEARTBEAT, group_id=g,
             generation_id=generation + 5, member_id=member, group_instance_id=None)
    run.call("heartbeat_unknown_member", HEARTBEAT, group_id=g, generation_id=generation,
             member_id="nobody", group_instance_id=None)
    run.call("sync_wrong_generation", SYNC_GROUP, group_id=g, generation_id=generation + 1,
             member_id=member, group_instance_id=None, protocol_type="consumer",
             protocol_name="range", assignments=[])
    run.call("heartbeat_unknown_group", HEARTBEAT, group_id=run.group("none"),
             generation_id=1, member_id="nobody", group_instance_id=None)
    join(run, "join_bad_session", run.group("short"), session_ms=10)
    run.call("leave_unknown", LEAVE_GROUP, group_id=g, member_id="nobody",
             members=[{"member_id": "nobody", "group_instance_id": None, "reason": None}])


@scenario("offset-commit-fetch")
def offset_commit_fetch(run: Run) -> None:
    tid = create_topic(run, run.topic(), partitions=2)
    g = run.group()
    run.call("commit", OFFSET_COMMIT, **offsets(g, run.topic(), tid, 5, (0, 1)))
    fetch_offsets(run, "fetch", g, run.topic(), tid)
    fetch_offsets(run, "fetch_all", g, None)
    fetch_offsets(run, "fetch_unknown_group", run.group("none"), run.topic(), tid)


@scenario("offset-commit-errors")
def offset_commit_errors(run: Run) -> None:
    tid = create_topic(run, run.topic())
    g = run.group()
    run.call("unknown_partition", OFFSET_COMMIT, **offsets(g, run.topic(), tid, 1, (9,)))
    run.call("unknown_topic", OFFSET_COMMIT,
             **offsets(g, run.topic("missing"), None, 1))
    member, generation = joined(run, g)
    bad = offsets(g, run.topic(), tid, 1)
    run.call("wrong_generation", OFFSET_COMMIT, **{
        **bad, "generation_id_or_member_epoch": generation + 3, "member_id": member})
    run.call("unknown_member", OFFSET_COMMIT, **{
        **bad, "generation_id_or_member_epoch": generation, "member_id": "nobody"})


@scenario("offset-delete")
def offset_delete(run: Run) -> None:
    tid = create_topic(run, run.topic())
    g = run.group()
    run.call("commit", OFFSET_COMMIT, **offsets(g, run.topic(), tid, 3))
    run.call("delete", OFFSET_DELETE, group_id=g, topics=[
        {"name": run.topic(), "partitions": [{"partition_index": 0}]}])
    run.call("delete_unknown_group", OFFSET_DELETE, group_id=run.group("none"), topics=[
        {"name": run.topic(), "partitions": [{"partition_index": 0}]}])
    fetch_offsets(run, "fetch", g, run.topic(), tid)


@scenario("list-describe-delete-groups")
def group_admin(run: Run) -> None:
    tid = create_topic(run, run.topic())
    g = run.group()
    run.call("commit", OFFSET_COMMIT, **offsets(g, run.topic(), tid, 3))
    live = run.group("live")
    joined(run, live)
    run.call("describe", DESCRIBE_GROUPS, groups=[g, run.group("none")],
             include_authorized_operations=False)
    run.call("delete", DELETE_GROUPS, groups_names=[g, live, run.group("none")])
    run.call("describe_after", DESCRIBE_GROUPS, groups=[g],
             include_authorized_operations=False)


@scenario("list-groups-filter")
def list_groups(run: Run) -> None:
    # Only groups this scenario made are compared: others of the session differ by name.
    g = run.group()
    joined(run, g)
    resp = run.call("list", LIST_GROUPS, states_filter=["PreparingRebalance",
                                                        "CompletingRebalance", "Stable"],
                    types_filter=[], record=False)
    mine = [x for x in resp.groups if str(x.group_id).startswith(run.group(""))]
    run.note("mine", [{"group_id": x.group_id,
                       "state": getattr(x, "group_state", None),
                       "type": getattr(x, "group_type", None),
                       "protocol_type": x.protocol_type} for x in mine])
    run.note("error_code", int(resp.error_code))


def cg_heartbeat(run: Run, step: str, group: str, member_id: str, epoch: int,
                 topics: list[str] | None, record: bool = True) -> Any:
    return run.call(step, CONSUMER_GROUP_HEARTBEAT, record=record, group_id=group,
                    member_id=member_id,
                    member_epoch=epoch, instance_id=None, rack_id=None,
                    rebalance_timeout=10_000, subscribed_topic_names=topics,
                    subscribed_topic_regex=None, server_assignor=None,
                    topic_partitions=[] if epoch == 0 else None)


# Found a difference (listed): the group epoch after a v0 join.
@scenario("consumer-group-heartbeat")
def consumer_group(run: Run) -> None:
    create_topic(run, run.topic(), partitions=2)
    g = run.group()
    # v0 needs a member id from the client; v1 lets the broker assign one.
    mid = str(uuid.uuid4()) if run.version(CONSUMER_GROUP_HEARTBEAT) == 0 else ""
    first = cg_heartbeat(run, "join", g, mid, 0, [run.topic()], record=False)
    run.note("join.error_code", int(first.error_code))
    member = first.member_id or mid
    # Heartbeat as a consumer does until the member owns its assignment and the group's
    # epoch stops moving (Kafka assigns asynchronously); the settled state is compared.
    epoch, resp = int(first.member_epoch), first
    assigned = bool(first.assignment and first.assignment.topic_partitions)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        resp = cg_heartbeat(run, "steady", g, member, epoch, None, record=False)
        if resp.assignment is not None and resp.assignment.topic_partitions:
            assigned = True
        if assigned and int(resp.member_epoch) == epoch and resp.assignment is None:
            break
        epoch = int(resp.member_epoch)
        time.sleep(0.1)
    run.note("steady.error_code", int(resp.error_code))
    cg_heartbeat(run, "fenced_epoch", g, member, epoch + 7, None)
    cg_heartbeat(run, "unknown_member", g, "x" * 22, 1, None)
    run.call("describe", CONSUMER_GROUP_DESCRIBE, group_ids=[g, run.group("none")],
             include_authorized_operations=False)
    cg_heartbeat(run, "leave", g, member, -1, None)


def named(assignment: Any, names: dict[Any, str]) -> dict[str, list[int]] | None:
    """A heartbeat's assignment by topic name (each broker draws its own topic ids)."""
    if assignment is None:
        return None
    return {names.get(t.topic_id, "?"): sorted(t.partitions)
            for t in assignment.topic_partitions}


# An application subscribing, unsubscribing and subscribing again within a millisecond
# while the coordinator revokes a dropped topic: the member's answers at each step.
@scenario("consumer-group-resubscribe-while-revoking")
def consumer_group_resubscribe(run: Run) -> None:
    names = {create_topic(run, run.topic(x), partitions=2): run.topic(x) for x in "abc"}
    g, mid = run.group(), str(uuid.uuid4())
    first = cg_heartbeat(run, "join", g, mid, 0, [run.topic("a"), run.topic("b")],
                         record=False)
    run.note("join.error_code", int(first.error_code))
    epoch, resp, owned = int(first.member_epoch), first, None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # acknowledge until the member owns all four
        if resp.assignment is not None:
            owned = [{"topic_id": t.topic_id, "partitions": list(t.partitions)}
                     for t in resp.assignment.topic_partitions]
        if owned and sum(len(t["partitions"]) for t in owned) == 4 \
                and int(resp.member_epoch) == epoch and resp.assignment is None:
            break
        epoch = int(resp.member_epoch)
        resp = run.call("ack", CONSUMER_GROUP_HEARTBEAT, record=False, group_id=g,
                        member_id=mid, member_epoch=epoch, instance_id=None, rack_id=None,
                        rebalance_timeout=-1, subscribed_topic_names=None,
                        subscribed_topic_regex=None, server_assignor=None,
                        topic_partitions=owned)
        time.sleep(0.05)
    run.note("stable.owned", sorted(names[t["topic_id"]] for t in owned or []))
    # The new subscription drops "a", without saying what the member owns (as librdkafka
    # sends it): "a" is revoked at once, at the same member epoch.
    moved = cg_heartbeat(run, "resubscribe", g, mid, epoch, [run.topic("b"), run.topic("c")],
                         record=False)
    run.note("resubscribe", {"error_code": int(moved.error_code),
                             "same_epoch": int(moved.member_epoch) == epoch,
                             "assignment": named(moved.assignment, names)})
    left = cg_heartbeat(run, "leave", g, mid, -1, None)
    # The same member id joins again at epoch 0 with a third subscription. Kafka 4.4
    # computes a target at most once per group.consumer.assignment.interval.ms, so its
    # answer may carry no partitions yet (kafkalite assigns at once: docs/compatibility.md);
    # the partitions the member settles on are compared.
    back = cg_heartbeat(run, "rejoin", g, mid, 0, [run.topic("c")], record=False)
    run.note("rejoin", {"error_code": int(back.error_code),
                        "member_id_kept": back.member_id == mid,
                        "epoch_moved_on": int(back.member_epoch) > epoch,
                        "nothing_of_a_or_b": not set(named(back.assignment, names) or {})
                        - {run.topic("c")}})
    epoch, resp = int(back.member_epoch), back
    settled = named(back.assignment, names)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and settled != {run.topic("c"): [0, 1]}:
        time.sleep(0.1)
        resp = cg_heartbeat(run, "settle", g, mid, epoch, None, record=False)
        settled = named(resp.assignment, names) or settled
        epoch = int(resp.member_epoch)
    run.note("rejoin.settled", settled)
    run.note("leave.epoch", int(left.member_epoch))
    cg_heartbeat(run, "leave_again", g, mid, -1, None)
