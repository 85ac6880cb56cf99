"""Scenarios: KIP-1071 streams groups: StreamsGroupHeartbeat's validation and errors, the
join of a member whose topology needs internal topics (which the coordinator creates), its
tasks once they exist, fencing and leaving, and StreamsGroupDescribe."""

from __future__ import annotations

import datetime
import time
import uuid
from typing import Any

from .registry import Run, call_until, create_topic, scenario, wait_for_leaders

STREAMS_GROUP_HEARTBEAT, STREAMS_GROUP_DESCRIBE = 88, 89
STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE = 93
CONSUMER_GROUP_HEARTBEAT = 68
OFFSET_DELETE = 47


def topology(app: str, source: str) -> dict[str, Any]:
    """Word count's topology: subtopology 0 reads ``source`` into a repartition topic,
    subtopology 1 counts it into a store with a changelog."""
    repartition, changelog = f"{app}-words-repartition", f"{app}-counts-changelog"
    info: dict[str, Any] = dict(replication_factor=0, topic_configs=())
    return dict(epoch=1, subtopologies=[
        dict(subtopology_id="0", source_topics=[source], source_topic_regex=[],
             state_changelog_topics=[], repartition_sink_topics=[repartition],
             repartition_source_topics=[], copartition_groups=[]),
        dict(subtopology_id="1", source_topics=[], source_topic_regex=[],
             state_changelog_topics=[dict(name=changelog, partitions=0, **info)],
             repartition_sink_topics=[],
             repartition_source_topics=[dict(name=repartition, partitions=0, **info)],
             copartition_groups=[]),
    ])


def heartbeat(run: Run, step: str, group: str, member: str, epoch: int, *,
              topo: dict[str, Any] | None = None, owned: list[Any] | None = None,
              join_fields: bool = False, record: bool = True,
              instance: str | None = None, process: int = 1,
              standby: list[Any] | None = None, endpoint: tuple[str, int] | None = None,
              endpoint_epoch: int = 0, shutdown: bool = False) -> Any:
    fields: dict[str, Any] = dict(
        group_id=group, member_id=member, member_epoch=epoch,
        endpoint_information_epoch=endpoint_epoch, instance_id=instance,
        user_endpoint=None if endpoint is None else dict(host=endpoint[0], port=endpoint[1]))
    if join_fields:
        fields.update(rebalance_timeout=datetime.timedelta(milliseconds=30000),
                      process_id=str(uuid.UUID(int=process)), active_tasks=(), standby_tasks=(),
                      warmup_tasks=(), client_tags=())
    else:
        # The client sends its three task lists together when they changed.
        fields.update(active_tasks=None if owned is None else [
            dict(subtopology_id=s, partitions=ps) for s, ps in owned],
            standby_tasks=None if owned is None else [
                dict(subtopology_id=s, partitions=ps) for s, ps in standby or []],
            warmup_tasks=None if owned is None else [], client_tags=None)
    fields.update(topology=topo, task_offsets=None, task_end_offsets=None)
    if shutdown:
        fields.update(shutdown_application=True)
    return run.call(step, STREAMS_GROUP_HEARTBEAT, record=record, **fields)


def tasks_of(resp: Any, field: str = "active_tasks") -> list[Any]:
    return sorted((t.subtopology_id, sorted(int(p) for p in t.partitions))
                  for t in getattr(resp, field) or ())


def joined(run: Run, group: str, member: str, source: str, instance: str | None = None,
           endpoint: tuple[str, int] | None = None) -> tuple[int, list[Any]]:
    """Join, then heartbeat until the coordinator has created the internal topics, the
    initial rebalance delay has passed and the member has its tasks; its epoch and tasks.
    At epoch 0 (the delay running) a member heartbeats as it joined, as Kafka Streams does."""
    resp = heartbeat(run, "join", group, member, 0, topo=topology(group, source),
                     join_fields=True, instance=instance, endpoint=endpoint)
    epoch, owned = int(resp.member_epoch), tasks_of(resp)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not owned:
        time.sleep(0.3)
        if epoch == 0:
            resp = heartbeat(run, "steady", group, member, 0, topo=topology(group, source),
                             join_fields=True, instance=instance, endpoint=endpoint,
                             record=False)
        else:
            resp = heartbeat(run, "steady", group, member, epoch, owned=owned, record=False,
                             instance=instance)
        if int(resp.error_code) != 0:
            run.note("steady_error", [int(resp.error_code), resp.error_message])
            break
        epoch = int(resp.member_epoch)
        if resp.active_tasks is not None:
            owned = tasks_of(resp)
    return epoch, owned


@scenario("streams-group-heartbeat")
def streams_group_heartbeat(run: Run) -> None:
    source = run.topic()
    create_topic(run, source, partitions=2)
    g, member = run.group(), str(uuid.uuid4())
    topo = topology(g, source)
    heartbeat(run, "empty_group_id", "", member, 0, topo=topo, join_fields=True)
    heartbeat(run, "empty_member_id", g, "", 0, topo=topo, join_fields=True)
    heartbeat(run, "join_without_topology", g, member, 0, join_fields=True)
    heartbeat(run, "bad_epoch", g, member, -3)
    heartbeat(run, "unknown_group", g, member, 3)
    epoch, owned = joined(run, g, member, source)
    run.note("member_epoch_positive", epoch > 0)
    run.note("tasks", owned)
    heartbeat(run, "unknown_member", g, str(uuid.uuid4()), epoch)
    heartbeat(run, "fenced", g, member, epoch + 5)
    run.call("consumer_heartbeat_for_streams_group", CONSUMER_GROUP_HEARTBEAT, group_id=g,
             member_id=str(uuid.uuid4()), member_epoch=0, instance_id=None, rack_id=None,
             rebalance_timeout=datetime.timedelta(milliseconds=30000),
             subscribed_topic_names=[source], server_assignor=None, topic_partitions=[])
    heartbeat(run, "leave", g, member, -1)
    heartbeat(run, "leave_again", g, member, -1)


@scenario("streams-group-describe")
def streams_group_describe(run: Run) -> None:
    source = run.topic()
    create_topic(run, source, partitions=2)
    g, member = run.group(), str(uuid.uuid4())
    epoch, _ = joined(run, g, member, source)
    run.call("describe", STREAMS_GROUP_DESCRIBE, group_ids=[g, run.group("missing")],
             include_authorized_operations=False)
    # v1 (KIP-1331): the description a broker plugin stores, asked for or not.
    run.call("describe_with_description", STREAMS_GROUP_DESCRIBE, group_ids=[g],
             include_authorized_operations=False, include_topology_description=True)
    if STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE in run.common:
        push: dict[str, Any] = dict(group_id=g, topology_epoch=1, topology_description=dict(
            subtopologies=[dict(subtopology_id="0", nodes=[dict(
                name="KSTREAM-SOURCE-0000000000", node_type=1, source_topics=[source],
                sink_topic=None, stores=[], successors=[])])], global_stores=[]))
        run.call("push_description", STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE,
                 member_id=member, **push)
        run.call("push_description_unknown_member", STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE,
                 member_id=str(uuid.uuid4()), **push)
    run.note("epoch_positive", epoch > 0)
    run.call("list", 16, states_filter=[], types_filter=["streams"])
    offset_delete: dict[str, Any] = dict(group_id=g, topics=[
        dict(name=source, partitions=[dict(partition_index=0)])])
    run.call("offset_delete_subscribed", OFFSET_DELETE, **offset_delete)
    heartbeat(run, "leave", g, member, -1, record=False)
    run.call("describe_empty", STREAMS_GROUP_DESCRIBE, group_ids=[g],
             include_authorized_operations=False)
    run.call("offset_delete_empty", OFFSET_DELETE, **offset_delete)


@scenario("streams-group-static-member")
def streams_group_static_member(run: Run) -> None:
    """Static membership (KIP-1071 as Kafka 4.4 runs it): the instance id is held while
    its member is in the group; a member leaving with epoch -2 keeps its tasks, and a new
    member with the same instance id takes its place, its epoch and its tasks."""
    source = run.topic()
    create_topic(run, source, partitions=2)
    g, m1, m2 = run.group(), str(uuid.uuid4()), str(uuid.uuid4())
    epoch, owned = joined(run, g, m1, source, instance="i1")
    run.note("tasks", owned)
    heartbeat(run, "unreleased_instance", g, m2, 0, topo=topology(g, source),
              join_fields=True, instance="i1")
    heartbeat(run, "unknown_instance", g, m2, epoch, owned=owned, instance="i2")
    heartbeat(run, "fenced_instance", g, m2, epoch, owned=owned, instance="i1")
    heartbeat(run, "static_leave", g, m1, -2, instance="i1")
    d = run.call("describe_after_leave", STREAMS_GROUP_DESCRIBE, group_ids=[g],
                 include_authorized_operations=False, record=False)
    (member,) = d.groups[0].members
    run.note("left_member", [member.member_id == m1, int(member.member_epoch),
                             sorted((t.subtopology_id, sorted(t.partitions))
                                    for t in member.assignment.active_tasks)])
    back = heartbeat(run, "replaced", g, m2, 0, topo=topology(g, source), join_fields=True,
                     instance="i1", record=False)
    run.note("replaced", [int(back.error_code), int(back.member_epoch) == epoch,
                          tasks_of(back)])
    d = run.call("describe_replaced", STREAMS_GROUP_DESCRIBE, group_ids=[g],
                 include_authorized_operations=False, record=False)
    run.note("members_after_replace", [(m.member_id == m2, m.instance_id)
                                       for m in d.groups[0].members])
    heartbeat(run, "leave", g, m2, -1, instance="i1")


def _flat(tasks: list[Any]) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in tasks for p in ps}


@scenario("streams-group-standby")
def streams_group_standby(run: Run) -> None:
    """streams.num.standby.replicas 1 (a group config): two members of two processes
    each run half the tasks and hold the other's stateful task as a standby; reached
    through the heartbeats (revocation, demotion to standby) until the group is Stable."""
    source = run.topic()
    create_topic(run, source, partitions=2)
    g, m1, m2 = run.group(), str(uuid.uuid4()), str(uuid.uuid4())
    config = dict(resource_type=32, resource_name=g, configs=[dict(
        name="streams.num.standby.replicas", config_operation=0, value="1")])
    run.call("set_standby_replicas", 44, resources=[config], validate_only=False)
    call_until(run, "described_config", 32, lambda r: any(
        c.value == "1" for res in r.results for c in res.configs),
        resources=[dict(resource_type=32, resource_name=g,
                        configuration_keys=["streams.num.standby.replicas"])],
        include_synonyms=False, include_documentation=False)
    epoch, owned = joined(run, g, m1, source)
    run.note("alone", [owned, "no standby on one process"])
    state = {m1: [epoch, owned, []], m2: [0, [], []]}
    resp = heartbeat(run, "second_join", g, m2, 0, topo=topology(g, source),
                     join_fields=True, process=2, record=False)
    state[m2] = [int(resp.member_epoch), tasks_of(resp), tasks_of(resp, "standby_tasks")]
    deadline = time.monotonic() + 30
    described = None
    while time.monotonic() < deadline:
        for mid in (m1, m2):
            ep, act, sb = state[mid]
            r = heartbeat(run, "steady", g, mid, ep, owned=act, standby=sb, record=False)
            if int(r.error_code) != 0:
                run.note("steady_error", [int(r.error_code)])
                return
            state[mid][0] = int(r.member_epoch)
            if r.active_tasks is not None:
                state[mid][1] = tasks_of(r)
                state[mid][2] = tasks_of(r, "standby_tasks")
        d = run.call("describe", STREAMS_GROUP_DESCRIBE, group_ids=[g],
                     include_authorized_operations=False, record=False)
        if d.groups[0].group_state == "Stable" and all(
                m.assignment == m.target_assignment for m in d.groups[0].members):
            described = d
            break
        time.sleep(0.3)
    run.note("stable", described is not None)
    shapes = []
    for mid in (m1, m2):
        _ep, act, sb = state[mid]
        a, s = _flat(act), _flat(sb)
        shapes.append([len(a), len(s), sorted({t[0] for t in s}), not a & s])
    run.note("members", sorted(shapes))
    every = _flat(state[m1][1]) | _flat(state[m2][1])
    run.note("active_cover", sorted(every))
    run.note("standby_of_other", [_flat(state[m1][2]) <= _flat(state[m2][1]),
                                  _flat(state[m2][2]) <= _flat(state[m1][1])])
    heartbeat(run, "leave_2", g, m2, -1, record=False)
    heartbeat(run, "leave_1", g, m1, -1, record=False)


def _statuses(resp: Any) -> list[Any]:
    """The status codes and details, without Kafka's ASSIGNMENT_DELAYED for its
    streams.assignment.interval.ms, which kafkalite does not apply (it assigns at once;
    docs/compatibility.md). The initial rebalance delay's stays."""
    return [[int(s.status_code), s.status_detail] for s in resp.status or ()
            if not (int(s.status_code) == 5 and "assignment interval" in s.status_detail)]


@scenario("streams-group-status")
def streams_group_status(run: Run) -> None:
    """The group's status as Kafka reports it in the heartbeat: missing source topics,
    then an internal topic that exists with the wrong number of partitions."""
    source = run.topic()
    g, member = run.group(), str(uuid.uuid4())
    topo = topology(g, source)
    resp = heartbeat(run, "join_missing_source", g, member, 0, topo=topo, join_fields=True,
                     record=False)
    run.note("missing_source", _statuses(resp))
    epoch = int(resp.member_epoch)
    create_topic(run, source, partitions=2)
    create_topic(run, f"{g}-counts-changelog", partitions=3)
    seen: list[Any] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        time.sleep(0.3)
        resp = heartbeat(run, "steady", g, member, epoch, owned=[], record=False)
        if int(resp.error_code) != 0:
            run.note("steady_error", [int(resp.error_code)])
            break
        epoch = int(resp.member_epoch)
        seen = _statuses(resp)
        if seen and seen[0][0] == 2:  # INCORRECTLY_PARTITIONED_TOPICS
            break
    run.note("wrong_partitions", seen)
    run.note("no_tasks", tasks_of(resp))
    heartbeat(run, "leave", g, member, -1, record=False)


@scenario("streams-group-shutdown")
def streams_group_shutdown(run: Run) -> None:
    """A member asks the whole application to shut down: every member's heartbeat carries
    SHUTDOWN_APPLICATION naming it until the group is empty; a later run starts clean."""
    source = run.topic()
    create_topic(run, source, partitions=2)
    g, first, second = run.group(), str(uuid.uuid4()), str(uuid.uuid4())
    epoch, _owned = joined(run, g, first, source)
    other = heartbeat(run, "second_join", g, second, 0, topo=topology(g, source),
                      join_fields=True, process=2, record=False)
    names = {first: "<first>", second: "<second>"}

    def named(resp: Any) -> list[Any]:
        out = _statuses(resp)
        for s in out:
            for mid, name in names.items():
                s[1] = (s[1] or "").replace(mid, name)
        return out

    asked = heartbeat(run, "shutdown", g, first, epoch, shutdown=True, record=False)
    run.note("requester", [int(asked.error_code), named(asked)])
    told = heartbeat(run, "other", g, second, int(other.member_epoch), record=False)
    run.note("other_member", [int(told.error_code), named(told)])
    heartbeat(run, "leave_first", g, first, -1, record=False)
    heartbeat(run, "leave_second", g, second, -1, record=False)
    third = str(uuid.uuid4())
    names[third] = "<third>"
    again = heartbeat(run, "next_run", g, third, 0, topo=topology(g, source),
                      join_fields=True, process=3, record=False)
    run.note("next_run", [int(again.error_code), named(again)])
    heartbeat(run, "leave_third", g, third, -1, record=False)


@scenario("streams-group-source-regex")
def streams_group_source_regex(run: Run) -> None:
    """A topology whose subtopology reads its sources by a regular expression."""
    source = run.topic()
    create_topic(run, source, partitions=2)
    g, member = run.group(), str(uuid.uuid4())
    topo = topology(g, source)
    topo["subtopologies"][0].update(source_topics=[], source_topic_regex=[f"{source}.*"])
    heartbeat(run, "join_regex", g, member, 0, topo=topo, join_fields=True)
    heartbeat(run, "leave", g, member, -1, record=False)


def _iq(resp: Any) -> Any:
    if resp.partitions_by_user_endpoint is None:
        return None
    return sorted([e.user_endpoint.port,
                   sorted((t.topic, sorted(t.partitions)) for t in e.active_partitions),
                   sorted((t.topic, sorted(t.partitions)) for t in e.standby_partitions)]
                  for e in resp.partitions_by_user_endpoint)


@scenario("streams-group-endpoints")
def streams_group_endpoints(run: Run) -> None:
    """Interactive Queries: a member with a user endpoint gets every member's endpoint and
    the partitions of its tasks while its endpoint epoch is behind the group's."""
    source = run.topic()
    create_topic(run, source, partitions=2)
    g, member = run.group(), str(uuid.uuid4())
    # The endpoint comes after the join: Kafka 4.4 can fail a join with an endpoint
    # (UNKNOWN_SERVER_ERROR) while its coordinator has not seen the new source topic yet.
    epoch, owned = joined(run, g, member, source)
    behind = heartbeat(run, "behind", g, member, epoch, owned=owned, record=False,
                       endpoint=("localhost", 8080))
    run.note("behind", [int(behind.endpoint_information_epoch), _iq(behind)])
    current = heartbeat(run, "current", g, member, epoch, owned=owned, record=False,
                        endpoint=("localhost", 8080),
                        endpoint_epoch=int(behind.endpoint_information_epoch))
    run.note("current", [int(current.endpoint_information_epoch), _iq(current)])
    heartbeat(run, "leave", g, member, -1, record=False)


@scenario("streams-group-offset-commit")
def streams_group_offset_commit(run: Run) -> None:
    """OffsetCommit by a streams group member: its current epoch, a newer one, an older
    one (before its tasks were assigned), an unknown member."""
    source = run.topic()
    tid = create_topic(run, source, partitions=2)
    g, member = run.group(), str(uuid.uuid4())
    epoch, _owned = joined(run, g, member, source)

    def commit(step: str, mid: str, at: int) -> None:
        run.call(step, 8, group_id=g, generation_id_or_member_epoch=at, member_id=mid,
                 group_instance_id=None, retention_time=-1, topics=[
                     {"name": source, "topic_id": tid, "partitions": [
                         {"partition_index": 0, "committed_offset": 1,
                          "committed_leader_epoch": -1, "committed_metadata": "",
                          "commit_timestamp": -1}]}])

    commit("current_epoch", member, epoch)
    commit("newer_epoch", member, epoch + 5)
    commit("older_epoch", member, epoch - 1)
    commit("unknown_member", str(uuid.uuid4()), epoch)
    heartbeat(run, "leave", g, member, -1, record=False)


def _set_group_config(run: Run, group: str, name: str, value: str) -> None:
    config = dict(resource_type=32, resource_name=group, configs=[dict(
        name=name, config_operation=0, value=value)])
    run.call(f"set_{name}", 44, resources=[config], validate_only=False, record=False)
    call_until(run, f"described_{name}", 32, lambda r: any(
        c.value == value for res in r.results for c in res.configs),
        resources=[dict(resource_type=32, resource_name=group, configuration_keys=[name])],
        include_synonyms=False, include_documentation=False)


@scenario("streams-group-assignment-delayed")
def streams_group_assignment_delayed(run: Run) -> None:
    """streams.initial.rebalance.delay.ms (a group config, 4 s): the first member's join
    starts the delay; until it ends every heartbeat answers ASSIGNMENT_DELAYED with no
    tasks (the members at the new group's assignment epoch, 1), and a second member joining
    meanwhile shares the first assignment, which both get at their next heartbeat."""
    source = run.topic()
    create_topic(run, source, partitions=2)
    g, m1, m2 = run.group(), str(uuid.uuid4()), str(uuid.uuid4())
    _set_group_config(run, g, "streams.initial.rebalance.delay.ms", "4000")
    started = time.monotonic()
    join = heartbeat(run, "join", g, m1, 0, topo=topology(g, source), join_fields=True)
    epoch = int(join.member_epoch)
    # The coordinator creates the internal topics; the delay still runs once it sees them.
    wait_for_leaders(run, f"{g}-words-repartition", 2)
    wait_for_leaders(run, f"{g}-counts-changelog", 2)
    for _ in range(20):
        resp = heartbeat(run, "delayed", g, m1, epoch, record=False)
        if [int(s.status_code) for s in resp.status or ()] == [5]:
            break
        time.sleep(0.1)
    heartbeat(run, "delayed", g, m1, epoch)
    # Its owned tasks sent again, unchanged (none): no task lists in the answer.
    heartbeat(run, "delayed_owned_unchanged", g, m1, epoch, owned=[])
    second = heartbeat(run, "second_join", g, m2, 0, topo=topology(g, source),
                       join_fields=True, process=2)
    run.note("within_delay", time.monotonic() - started < 3.5)
    time.sleep(max(0.0, 4.3 - (time.monotonic() - started)))
    state = {m1: [epoch, []], m2: [int(second.member_epoch), []]}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (state[m1][1] and state[m2][1]):
        for mid in (m1, m2):
            ep, owned = state[mid]
            resp = heartbeat(run, "after_delay", g, mid, ep, owned=owned, record=False)
            state[mid][0] = int(resp.member_epoch)
            if resp.active_tasks is not None:
                state[mid][1] = tasks_of(resp)
        time.sleep(0.2)
    a, b = _flat(state[m1][1]), _flat(state[m2][1])
    # Both were members when the delay ended: the tasks split at once, none moved twice.
    run.note("after_delay", [len(a), len(b), sorted(a | b), not a & b,
                             state[m1][0] == state[m2][0] > epoch])
    # A steady member sending the tasks it owns, unchanged: Kafka answers no task lists.
    resp = heartbeat(run, "owned_unchanged", g, m1, state[m1][0], owned=state[m1][1],
                     record=False)
    run.note("owned_unchanged", [int(resp.error_code), int(resp.member_epoch) == state[m1][0],
                                 resp.active_tasks, resp.standby_tasks, resp.warmup_tasks])
    heartbeat(run, "leave_2", g, m2, -1, record=False)
    heartbeat(run, "leave_1", g, m1, -1, record=False)
