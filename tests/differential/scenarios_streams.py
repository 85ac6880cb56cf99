"""Scenarios: KIP-1071 streams groups: StreamsGroupHeartbeat's validation and errors, the
join of a member whose topology needs internal topics (which the coordinator creates), its
tasks once they exist, fencing and leaving, and StreamsGroupDescribe."""

from __future__ import annotations

import datetime
import time
import uuid
from typing import Any

from .registry import Run, create_topic, scenario

STREAMS_GROUP_HEARTBEAT, STREAMS_GROUP_DESCRIBE = 88, 89
CONSUMER_GROUP_HEARTBEAT = 68


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
              join_fields: bool = False, record: bool = True) -> Any:
    fields: dict[str, Any] = dict(group_id=group, member_id=member, member_epoch=epoch,
                                  endpoint_information_epoch=0)
    if join_fields:
        fields.update(rebalance_timeout=datetime.timedelta(milliseconds=30000),
                      process_id=str(uuid.UUID(int=1)), active_tasks=(), standby_tasks=(),
                      warmup_tasks=(), client_tags=())
    else:
        # The client sends its three task lists together when they changed.
        fields.update(active_tasks=None if owned is None else [
            dict(subtopology_id=s, partitions=ps) for s, ps in owned],
            standby_tasks=None if owned is None else [],
            warmup_tasks=None if owned is None else [], client_tags=None)
    fields.update(topology=topo, task_offsets=None, task_end_offsets=None)
    return run.call(step, STREAMS_GROUP_HEARTBEAT, record=record, **fields)


def tasks_of(resp: Any) -> list[Any]:
    return sorted((t.subtopology_id, sorted(int(p) for p in t.partitions))
                  for t in resp.active_tasks or ())


def joined(run: Run, group: str, member: str, source: str) -> tuple[int, list[Any]]:
    """Join, then heartbeat until the coordinator has created the internal topics and the
    member has its tasks; its epoch and tasks."""
    resp = heartbeat(run, "join", group, member, 0, topo=topology(group, source),
                     join_fields=True)
    epoch, owned = int(resp.member_epoch), tasks_of(resp)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not owned:
        time.sleep(0.3)
        resp = heartbeat(run, "steady", group, member, epoch, owned=owned, record=False)
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
    joined(run, g, member, source)
    run.call("describe", STREAMS_GROUP_DESCRIBE, group_ids=[g, run.group("missing")],
             include_authorized_operations=False)
    run.call("list", 16, states_filter=[], types_filter=["streams"])
    heartbeat(run, "leave", g, member, -1, record=False)
    run.call("describe_empty", STREAMS_GROUP_DESCRIBE, group_ids=[g],
             include_authorized_operations=False)
