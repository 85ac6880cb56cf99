"""Streams groups (KIP-1071) as a part of the group coordinator, through the real runtime
on the manual clock: the topology's configuration (internal topics to create, task counts),
the sticky active task assignor, each member's reconciliation (revoking before the others
take its tasks, member epochs as Kafka's streams CurrentAssignmentBuilder moves them), the
session and rebalance deadlines, and the group's kind against the other kinds' requests."""

from __future__ import annotations

from typing import Any

from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit
from kafkalite.coordinator.results import ConsumerHeartbeatResult
from kafkalite.coordinator.streams.assignor import AssignorMember, assign
from kafkalite.coordinator.streams.group import (
    UNRELEASED_TASKS,
    UNREVOKED_TASKS,
    StreamsHeartbeat,
    StreamsHeartbeatResult,
)
from kafkalite.coordinator.streams.topology import (
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    Subtopology,
    TopicInfo,
    Topology,
    configure,
)
from kafkalite.protocol.errors import ErrorCode as E

from .harness import Harness

SESSION = 45_000
REBALANCE = 60_000
APP = "app"

#: Word count: subtopology 0 reads "lines" and writes the repartition topic, which
#: subtopology 1 reads, counting into a store with a changelog.
WORD_COUNT = Topology(1, (
    Subtopology("0", source_topics=("lines",), repartition_sink_topics=("app-words-repartition",)),
    Subtopology("1", repartition_source_topics=(TopicInfo("app-words-repartition", 0, 0, (
        ("cleanup.policy", "delete"),)),),
        state_changelog_topics=(TopicInfo("app-counts-changelog", 0, 0, (
            ("cleanup.policy", "compact"),)),)),
))


def tasks(*names: str) -> frozenset[tuple[str, int]]:
    return frozenset((n.split("_")[0], int(n.split("_")[1])) for n in names)


def make(**kw: Any) -> Harness:
    return Harness.make(topics={"lines": 2}, streams_session_timeout_ms=SESSION,
                        streams_heartbeat_interval_ms=5000, **kw)


def hb(h: Harness, member: str, epoch: int, owned: frozenset[tuple[str, int]] | None = None,
       group: str = APP, process: str | None = None, topology: Topology | None = None
       ) -> StreamsHeartbeatResult:
    join = epoch == 0
    req = StreamsHeartbeat(
        group, member, epoch, rebalance_timeout_ms=REBALANCE if join else -1,
        topology=(topology or WORD_COUNT) if join else None,
        active_tasks=frozenset() if join else owned,
        standby_tasks=frozenset() if join else None,
        warmup_tasks=frozenset() if join else None,
        process_id=(process or f"p-{member}") if join else None,
        client_id="client", client_host="/127.0.0.1")
    res: StreamsHeartbeatResult = h.runtime.groups.write(
        lambda g, now: g.streams_group_heartbeat(now, req))
    return res


def ready(h: Harness) -> None:
    """The coordinator created the internal topics the first heartbeat asked for."""
    h.create_topic("app-words-repartition", 2)
    h.create_topic("app-counts-changelog", 2)


# --- the topology ---------------------------------------------------------------------


def test_topology_sizes_internal_topics_from_their_sources() -> None:
    c = configure(WORD_COUNT, {"lines": 3})
    assert [(t.name, t.partitions) for t in c.to_create] == [
        ("app-words-repartition", 3), ("app-counts-changelog", 3)]
    assert [s.code for s in c.status] == [MISSING_INTERNAL_TOPICS]
    assert c.status[0].detail == ("Internal topics are missing: "
                                  "app-words-repartition, app-counts-changelog")
    done = configure(WORD_COUNT, {"lines": 3, "app-words-repartition": 3,
                                  "app-counts-changelog": 3})
    assert done.ready and done.task_counts == {"0": 3, "1": 3}
    assert len(done.tasks()) == 6
    missing = configure(WORD_COUNT, {})
    assert [s.code for s in missing.status] == [MISSING_SOURCE_TOPICS]
    wrong = configure(WORD_COUNT, {"lines": 3, "app-words-repartition": 2,
                                   "app-counts-changelog": 3})
    assert not wrong.ready and not wrong.task_counts


# --- the assignor ---------------------------------------------------------------------


def test_assignor_balances_and_keeps_tasks_where_they_are() -> None:
    all_tasks = sorted(tasks("0_0", "0_1", "0_2", "1_0", "1_1", "1_2"))
    one = assign([AssignorMember("a", "p1", frozenset())], all_tasks)
    assert one == {"a": frozenset(all_tasks)}
    two = assign([AssignorMember("a", "p1", frozenset(all_tasks)),
                  AssignorMember("b", "p2", frozenset())], all_tasks)
    assert len(two["a"]) == len(two["b"]) == 3
    assert two["a"] | two["b"] == frozenset(all_tasks)
    # Sticky: a third member takes from both, and nobody's kept task moves.
    three = assign([AssignorMember("a", "p1", two["a"]), AssignorMember("b", "p2", two["b"]),
                    AssignorMember("c", "p3", frozenset())], all_tasks)
    assert [len(three[m]) for m in "abc"] == [2, 2, 2]
    assert three["a"] <= two["a"] and three["b"] <= two["b"]
    # A process with two members takes twice the tasks of a process with one.
    procs = assign([AssignorMember("a", "p1", frozenset()), AssignorMember("b", "p1", frozenset()),
                    AssignorMember("c", "p2", frozenset())], all_tasks)
    assert sorted(len(v) for v in procs.values()) == [2, 2, 2]
    assert assign([], all_tasks) == {}


# --- members and reconciliation --------------------------------------------------------


def test_join_waits_for_internal_topics_then_gets_every_task() -> None:
    h = make()
    a = hb(h, "a", 0)
    assert (a.error, a.member_epoch, a.heartbeat_interval_ms) == (E.none, 1, 5000)
    assert a.active_tasks == frozenset()
    assert [s.code for s in a.status or ()] == [MISSING_INTERNAL_TOPICS]
    assert {t.name for t in a.to_create} == {"app-words-repartition", "app-counts-changelog"}
    ready(h)
    a = hb(h, "a", 1, frozenset())
    assert a.status == () and a.member_epoch == 2
    assert a.active_tasks == tasks("0_0", "0_1", "1_0", "1_1")
    group = h.core.streams_group(APP)
    assert group is not None and group.state == "Stable"
    steady = hb(h, "a", 2)
    assert (steady.member_epoch, steady.active_tasks) == (2, None)


def test_second_member_waits_until_the_first_revokes() -> None:
    h = make()
    hb(h, "a", 0)
    ready(h)
    a = hb(h, "a", 1, frozenset())
    all4 = tasks("0_0", "0_1", "1_0", "1_1")
    assert a.active_tasks == all4
    b = hb(h, "b", 0)
    # b is at the new epoch, but its tasks are a's until a gives them up.
    assert b.member_epoch == 3 and b.active_tasks == frozenset()
    group = h.core.streams_group(APP)
    assert group is not None and group.members["b"].state == UNRELEASED_TASKS
    assert group.state == "Reconciling"
    a = hb(h, "a", 2, all4)
    # a keeps its epoch and half its tasks while it revokes the rest.
    assert a.member_epoch == 2 and a.active_tasks is not None and len(a.active_tasks) == 2
    assert group.members["a"].state == UNREVOKED_TASKS
    kept = a.active_tasks
    # Committing at the old epoch is still a's right.
    commit = CommitRequest(APP, "a", None, 2, topics=[("lines", [PartitionCommit(0, 5)])],
                           api_version=9)
    assert h.runtime.groups.write(lambda g, now: g.commit_offsets(now, commit)) == {
        ("lines", 0): E.none}
    b = hb(h, "b", 3, frozenset())
    assert b.active_tasks == frozenset()  # still unreleased
    a = hb(h, "a", 2, kept)  # revoked
    assert a.member_epoch == 3 and a.active_tasks == kept
    b = hb(h, "b", 3, frozenset())
    assert b.member_epoch == 3 and b.active_tasks == all4 - kept
    assert group.state == "Stable"
    stale = CommitRequest(APP, "a", None, 2, topics=[("lines", [PartitionCommit(0, 6)])],
                          api_version=9)
    assert h.runtime.groups.write(lambda g, now: g.commit_offsets(now, stale)) == {
        ("lines", 0): E.stale_member_epoch}


def test_fenced_unknown_and_leave() -> None:
    h = make()
    hb(h, "a", 0)
    assert hb(h, "a", 7).error is E.fenced_member_epoch
    assert hb(h, "x", 1).error is E.unknown_member_id
    assert hb(h, "x", 1, group="nope").error is E.group_id_not_found
    left = hb(h, "a", -1)
    assert (left.error, left.member_epoch) == (E.none, -1)
    group = h.core.streams_group(APP)
    assert group is not None and group.state == "Empty" and not group.members


def test_session_timeout_removes_the_member_and_its_tasks_move() -> None:
    h = make()
    hb(h, "a", 0)
    ready(h)
    hb(h, "a", 1, frozenset())
    hb(h, "b", 0)
    a = hb(h, "a", 2, tasks("0_0", "0_1", "1_0", "1_1"))
    kept = a.active_tasks
    assert kept is not None
    a = hb(h, "a", 2, kept)
    h.advance(SESSION - 1000)
    hb(h, "a", 3)  # a's session goes on; b's does not
    h.advance(1000)
    group = h.core.streams_group(APP)
    assert group is not None and set(group.members) == {"a"}
    a = hb(h, "a", 3)
    assert a.member_epoch == 4 and a.active_tasks == tasks("0_0", "0_1", "1_0", "1_1")


def test_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    h = make()
    hb(h, "a", 0)
    ready(h)
    hb(h, "a", 1, frozenset())
    hb(h, "b", 0)
    all4 = tasks("0_0", "0_1", "1_0", "1_1")
    hb(h, "a", 2, all4)  # told to revoke half
    for _ in range(REBALANCE // 5000 - 1):
        h.advance(5000)
        hb(h, "a", 2, all4)  # heartbeats, but never gives the tasks up
        hb(h, "b", 3, frozenset())
    h.advance(5000)
    group = h.core.streams_group(APP)
    assert group is not None and set(group.members) == {"b"}
    b = hb(h, "b", 3, frozenset())
    assert b.active_tasks == all4


def test_one_namespace_across_group_kinds() -> None:
    h = make()
    hb(h, "a", 0)
    from kafkalite.coordinator.consumer.lifecycle import ConsumerHeartbeatRequest

    creq = ConsumerHeartbeatRequest(APP, "c", 0, rebalance_timeout_ms=45000,
                                    subscribed_topic_names=("lines",), topic_partitions=())
    res: ConsumerHeartbeatResult = h.runtime.groups.write(
        lambda g, now: g.consumer_group_heartbeat(now, creq))
    assert res.error is E.group_id_not_found
    listed = {g.group_id: (g.group_type, g.state) for g in h.core.list_groups()}
    assert listed[APP] == ("streams", "NotReady")
    described = h.core.describe_streams_groups([APP, "missing"])
    assert described[0].group is not None and described[1].error is E.group_id_not_found
    # A member can't be removed by deleting the group.
    assert h.runtime.groups.write(lambda g, now: g.delete_group(now, APP)) is E.non_empty_group
    hb(h, "a", -1)
    assert h.runtime.groups.write(lambda g, now: g.delete_group(now, APP)) is E.none
    assert h.core.streams_group(APP) is None


def test_bad_requests() -> None:
    h = make()
    bad = StreamsHeartbeat(APP, "a", 0, rebalance_timeout_ms=1000, topology=None,
                           active_tasks=frozenset(), standby_tasks=frozenset(),
                           warmup_tasks=frozenset(), process_id="p")
    res = h.runtime.groups.write(lambda g, now: g.streams_group_heartbeat(now, bad))
    assert res.error is E.invalid_request
    empty = StreamsHeartbeat(APP, "", 0)
    res = h.runtime.groups.write(lambda g, now: g.streams_group_heartbeat(now, empty))
    assert (res.error, res.error_message) == (E.invalid_request, "MemberId can't be empty.")


# --- records and restart ---------------------------------------------------------------


def test_heartbeats_write_kafkas_records_before_answering() -> None:
    h = make()
    hb(h, "a", 0)
    kinds = [type(k).__name__ for k, _v in h.written[-1]]
    assert kinds == ["StreamsGroupTopologyKey", "StreamsGroupMemberMetadataKey",
                     "StreamsGroupMetadataKey", "StreamsGroupTargetAssignmentMemberKey",
                     "StreamsGroupTargetAssignmentMetadataKey",
                     "StreamsGroupCurrentMemberAssignmentKey"]
    before = len(h.written)
    hb(h, "a", 1)  # nothing changed: nothing written
    assert len(h.written) == before
    hb(h, "a", -1)
    kinds = [type(k).__name__ for k, v in h.written[-1] if v is None]
    assert kinds == ["StreamsGroupCurrentMemberAssignmentKey",
                     "StreamsGroupTargetAssignmentMemberKey", "StreamsGroupMemberMetadataKey"]


def test_a_restarted_coordinator_resumes_the_group_from_its_records() -> None:
    h = make()
    hb(h, "a", 0)
    ready(h)
    hb(h, "a", 1, frozenset())
    hb(h, "b", 0)
    all4 = tasks("0_0", "0_1", "1_0", "1_1")
    a = hb(h, "a", 2, all4)
    kept = a.active_tasks
    assert kept is not None and len(kept) == 2  # a is revoking the other two
    live = h.core.streams_group(APP)
    assert live is not None

    again = h.reload()
    group = again.core.streams_group(APP)
    assert group is not None
    assert (group.group_epoch, group.target_epoch, group.topology) == (
        live.group_epoch, live.target_epoch, live.topology)
    assert group.members == live.members and group.target == live.target
    assert group.members["a"].state == UNREVOKED_TASKS
    # The members go on where they were: a finishes revoking, b takes the rest, and no
    # epoch moves because of the restart.
    a = hb(again, "a", 2, kept)
    assert (a.error, a.member_epoch, a.active_tasks) == (E.none, 3, kept)
    b = hb(again, "b", 3, frozenset())
    assert (b.member_epoch, b.active_tasks) == (3, all4 - kept)
    assert group.state == "Stable"
    # The loaded members' sessions run from the load: b stops heartbeating and goes.
    again.advance(SESSION - 1)
    hb(again, "a", 3)
    again.advance(1)
    assert set(group.members) == {"a"}
    # A deleted group leaves nothing to load.
    hb(again, "a", -1)
    assert again.runtime.groups.write(lambda g, now: g.delete_group(now, APP)) is E.none
    assert again.reload().core.streams_group(APP) is None


def _persisted(group: Any) -> tuple[Any, ...]:
    return (group.group_epoch, group.metadata_hash, group.topology, group.target_epoch,
            dict(group.members), dict(group.target))


def test_a_failed_append_leaves_the_group_as_its_records_say() -> None:
    h = make()
    h.fail_with = E.not_coordinator
    assert hb(h, "a", 0).error is E.not_coordinator
    assert h.core.streams_group(APP) is None  # the join wrote nothing: no group
    h.fail_with = None
    hb(h, "a", 0)
    ready(h)
    hb(h, "a", 1, frozenset())
    group = h.core.streams_group(APP)
    assert group is not None
    before = _persisted(group)
    # A second member's join, then a's revocation, each failing: nothing moves.
    h.fail_with = E.not_coordinator
    assert hb(h, "b", 0).error is E.not_coordinator
    assert _persisted(group) == before and "b" not in group.members
    h.fail_with = None
    b = hb(h, "b", 0)
    assert b.member_epoch == 3
    at_join = _persisted(group)
    h.fail_with = E.not_coordinator
    assert hb(h, "a", 2, tasks("0_0", "0_1", "1_0", "1_1")).error is E.not_coordinator
    assert _persisted(group) == at_join
    # A session expiring while appends fail keeps the member until one succeeds.
    h.advance(SESSION)
    assert "b" in group.members
    h.fail_with = None
    h.advance(499)
    assert "b" in group.members
    h.advance(1)  # the timer's retry, after Kafka's backoff
    assert "b" not in group.members
    # What the live group holds is what its records rebuild.
    assert _persisted(h.reload().core.streams_group(APP)) == _persisted(group)
