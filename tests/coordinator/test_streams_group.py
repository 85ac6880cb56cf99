"""Streams groups (KIP-1071) as a part of the group coordinator, through the real runtime
on the manual clock (the topology's configuration and the assignor alone are in
test_streams_assignor.py): each member's reconciliation (revoking before the others
take its tasks, member epochs as Kafka's streams CurrentAssignmentBuilder moves them), the
session and rebalance deadlines, and the group's kind against the other kinds' requests."""

from __future__ import annotations

from typing import Any

from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit
from kafkalite.coordinator.results import ConsumerHeartbeatResult
from kafkalite.coordinator.streams.group import (
    UNRELEASED_TASKS,
    UNREVOKED_TASKS,
    StreamsHeartbeat,
    StreamsHeartbeatResult,
)
from kafkalite.coordinator.streams.topology import (
    MISSING_INTERNAL_TOPICS,
    SHUTDOWN_APPLICATION,
    Subtopology,
    TopicInfo,
    Topology,
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


NONE: frozenset[tuple[str, int]] = frozenset()


def make(**kw: Any) -> Harness:
    """No initial rebalance delay unless asked (test_streams_delay.py runs it)."""
    kw.setdefault("streams_initial_rebalance_delay_ms", 0)
    return Harness.make(topics={"lines": 2}, streams_session_timeout_ms=SESSION,
                        streams_heartbeat_interval_ms=5000, **kw)


def hb(h: Harness, member: str, epoch: int, owned: frozenset[tuple[str, int]] | None = None,
       group: str = APP, process: str | None = None, topology: Topology | None = None,
       standby: frozenset[tuple[str, int]] | None = None, instance: str | None = None,
       endpoint: tuple[str, int] | None = None, endpoint_epoch: int = 0,
       ) -> StreamsHeartbeatResult:
    join = epoch == 0
    req = StreamsHeartbeat(
        group, member, epoch, rebalance_timeout_ms=REBALANCE if join else -1,
        topology=(topology or WORD_COUNT) if join else None,
        active_tasks=frozenset() if join else owned,
        standby_tasks=frozenset() if join else (
            None if owned is None else standby or frozenset()),
        warmup_tasks=frozenset() if join else (None if owned is None else frozenset()),
        instance_id=instance, user_endpoint=endpoint,
        endpoint_information_epoch=endpoint_epoch,
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


# --- members and reconciliation --------------------------------------------------------


def test_join_waits_for_internal_topics_then_gets_every_task() -> None:
    h = make()
    a = hb(h, "a", 0)
    assert (a.error, a.member_epoch, a.heartbeat_interval_ms) == (E.none, 2, 5000)
    assert a.active_tasks == frozenset()
    assert [s.code for s in a.status or ()] == [MISSING_INTERNAL_TOPICS]
    assert {t.name for t in a.to_create} == {"app-words-repartition", "app-counts-changelog"}
    ready(h)
    a = hb(h, "a", 2, frozenset())
    assert a.status == () and a.member_epoch == 3
    assert a.active_tasks == tasks("0_0", "0_1", "1_0", "1_1")
    group = h.core.streams_group(APP)
    assert group is not None and group.state == "Stable"
    steady = hb(h, "a", 3)
    assert (steady.member_epoch, steady.active_tasks) == (3, None)


def test_task_lists_are_sent_to_a_joining_member_and_when_they_change() -> None:
    h = make()
    a = hb(h, "a", 0)
    assert (a.active_tasks, a.standby_tasks, a.warmup_tasks) == (NONE, NONE, NONE)
    ready(h)
    a = hb(h, "a", 2, NONE)
    all4 = tasks("0_0", "0_1", "1_0", "1_1")
    assert a.active_tasks == all4
    # Owned tasks sent again unchanged, or not sent: no task lists, as Kafka 4.4 answers.
    for owned in (all4, None):
        a = hb(h, "a", 3, owned)
        assert (a.member_epoch, a.active_tasks, a.standby_tasks, a.warmup_tasks) == (
            3, None, None, None)


def test_second_member_waits_until_the_first_revokes() -> None:
    h = make()
    hb(h, "a", 0)
    ready(h)
    a = hb(h, "a", 2, frozenset())
    all4 = tasks("0_0", "0_1", "1_0", "1_1")
    assert a.active_tasks == all4
    b = hb(h, "b", 0)
    # b is at the new epoch, but its tasks are a's until a gives them up.
    assert b.member_epoch == 4 and b.active_tasks == frozenset()
    group = h.core.streams_group(APP)
    assert group is not None and group.members["b"].state == UNRELEASED_TASKS
    assert group.state == "Reconciling"
    a = hb(h, "a", 3, all4)
    # a keeps its epoch and half its tasks while it revokes the rest.
    assert a.member_epoch == 3 and a.active_tasks is not None and len(a.active_tasks) == 2
    assert group.members["a"].state == UNREVOKED_TASKS
    kept = a.active_tasks
    # Committing at the old epoch is still a's right.
    commit = CommitRequest(APP, "a", None, 3, topics=[("lines", [PartitionCommit(0, 5)])],
                           api_version=9)
    assert h.runtime.groups.write(lambda g, now: g.commit_offsets(now, commit)) == {
        ("lines", 0): E.none}
    b = hb(h, "b", 4, frozenset())
    assert b.active_tasks is None  # still unreleased: its tasks are unchanged, not sent
    a = hb(h, "a", 3, kept)  # revoked
    # A new epoch with the tasks it already had: Kafka sends no task lists.
    assert a.member_epoch == 4 and a.active_tasks is None
    assert group.members["a"].active == kept
    b = hb(h, "b", 4, frozenset())
    assert b.member_epoch == 4 and b.active_tasks == all4 - kept
    assert group.state == "Stable"
    # At its old epoch, a may still commit for the tasks it has held since then only.
    for p in (0, 1):
        old = CommitRequest(APP, "a", None, 3, topics=[("lines", [PartitionCommit(p, 6)])],
                            api_version=9)
        assert h.runtime.groups.write(lambda g, now, r=old: g.commit_offsets(now, r)) == {
            ("lines", p): E.none if ("0", p) in kept else E.stale_member_epoch}


def test_fenced_unknown_and_leave() -> None:
    h = make()
    hb(h, "a", 0)
    assert hb(h, "a", 8).error is E.fenced_member_epoch
    assert hb(h, "x", 2).error is E.unknown_member_id
    assert hb(h, "x", 2, group="nope").error is E.group_id_not_found
    left = hb(h, "a", -1)
    assert (left.error, left.member_epoch) == (E.none, -1)
    group = h.core.streams_group(APP)
    assert group is not None and group.state == "Empty" and not group.members


def test_shutdown_request_reaches_every_member_until_the_group_is_empty() -> None:
    h = make()
    hb(h, "a", 0)
    ready(h)
    hb(h, "a", 2, frozenset())
    hb(h, "b", 0)
    detail = ("Streams group member a encountered a fatal error and requested a shutdown "
              "for the entire application.")
    req = StreamsHeartbeat(APP, "a", 3, shutdown_application=True)
    a = h.runtime.groups.write(lambda g, now: g.streams_group_heartbeat(now, req))
    assert a.error is E.none and a.member_epoch == 3
    assert [(s.code, s.detail) for s in a.status] == [(SHUTDOWN_APPLICATION, detail)]
    # Another member is told, and a later request does not replace the first.
    req = StreamsHeartbeat(APP, "b", 4, shutdown_application=True)
    b = h.runtime.groups.write(lambda g, now: g.streams_group_heartbeat(now, req))
    assert [(s.code, s.detail) for s in b.status] == [(SHUTDOWN_APPLICATION, detail)]
    # The requester leaving does not end it while the group has members.
    hb(h, "a", -1)
    assert [s.code for s in hb(h, "b", 4).status or ()] == [SHUTDOWN_APPLICATION]
    joined = hb(h, "c", 0)
    assert SHUTDOWN_APPLICATION in [s.code for s in joined.status or ()]
    # An empty group forgets it: the application's next run starts clean.
    hb(h, "b", -1)
    hb(h, "c", -1)
    again = hb(h, "d", 0)
    assert again.error is E.none
    assert SHUTDOWN_APPLICATION not in [s.code for s in again.status or ()]
    # Memory only, as Kafka: no record carries it.
    group = h.core.streams_group(APP)
    assert group is not None and group.shutdown_request_member_id is None


def test_session_timeout_removes_the_member_and_its_tasks_move() -> None:
    h = make()
    hb(h, "a", 0)
    ready(h)
    hb(h, "a", 2, frozenset())
    hb(h, "b", 0)
    a = hb(h, "a", 3, tasks("0_0", "0_1", "1_0", "1_1"))
    kept = a.active_tasks
    assert kept is not None
    a = hb(h, "a", 3, kept)
    h.advance(SESSION - 1000)
    hb(h, "a", 4)  # a's session goes on; b's does not
    h.advance(1000)
    group = h.core.streams_group(APP)
    assert group is not None and set(group.members) == {"a"}
    a = hb(h, "a", 4)
    assert a.member_epoch == 5 and a.active_tasks == tasks("0_0", "0_1", "1_0", "1_1")


def test_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    h = make()
    hb(h, "a", 0)
    ready(h)
    hb(h, "a", 2, frozenset())
    hb(h, "b", 0)
    all4 = tasks("0_0", "0_1", "1_0", "1_1")
    hb(h, "a", 3, all4)  # told to revoke half
    for _ in range(REBALANCE // 5000 - 1):
        h.advance(5000)
        hb(h, "a", 3, all4)  # heartbeats, but never gives the tasks up
        hb(h, "b", 4, frozenset())
    h.advance(5000)
    group = h.core.streams_group(APP)
    assert group is not None and set(group.members) == {"b"}
    b = hb(h, "b", 4, frozenset())
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
    # Kafka 4.4 refuses source topics by regular expression.
    pattern = Topology(1, (Subtopology("0", source_topic_regex=("lines.*",)),))
    res = hb(h, "a", 0, topology=pattern)
    assert (res.error, res.error_message) == (
        E.invalid_request, "Regular expressions for source topics are not supported yet.")
    assert h.core.streams_group(APP) is None


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
    hb(h, "a", 2)  # nothing changed: nothing written
    assert len(h.written) == before
    hb(h, "a", -1)
    kinds = [type(k).__name__ for k, v in h.written[-1] if v is None]
    assert kinds == ["StreamsGroupCurrentMemberAssignmentKey",
                     "StreamsGroupTargetAssignmentMemberKey", "StreamsGroupMemberMetadataKey"]


def test_a_restarted_coordinator_resumes_the_group_from_its_records() -> None:
    h = make()
    hb(h, "a", 0)
    ready(h)
    hb(h, "a", 2, frozenset())
    hb(h, "b", 0)
    all4 = tasks("0_0", "0_1", "1_0", "1_1")
    a = hb(h, "a", 3, all4)
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
    a = hb(again, "a", 3, kept)
    assert (a.error, a.member_epoch, a.active_tasks) == (E.none, 4, None)
    assert group.members["a"].active == kept
    b = hb(again, "b", 4, frozenset())
    assert (b.member_epoch, b.active_tasks) == (4, all4 - kept)
    assert group.state == "Stable"
    # The loaded members' sessions run from the load: b stops heartbeating and goes.
    again.advance(SESSION - 1)
    hb(again, "a", 4)
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
    hb(h, "a", 2, frozenset())
    group = h.core.streams_group(APP)
    assert group is not None
    before = _persisted(group)
    # A second member's join, then a's revocation, each failing: nothing moves.
    h.fail_with = E.not_coordinator
    assert hb(h, "b", 0).error is E.not_coordinator
    assert _persisted(group) == before and "b" not in group.members
    h.fail_with = None
    b = hb(h, "b", 0)
    assert b.member_epoch == 4
    at_join = _persisted(group)
    h.fail_with = E.not_coordinator
    assert hb(h, "a", 3, tasks("0_0", "0_1", "1_0", "1_1")).error is E.not_coordinator
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


# --- standby tasks ----------------------------------------------------------------------


def test_standby_tasks_through_the_heartbeat() -> None:
    h = make(streams_num_standby_replicas_default=1)
    hb(h, "a", 0)
    ready(h)
    a = hb(h, "a", 2, frozenset())
    all4 = tasks("0_0", "0_1", "1_0", "1_1")
    # One process: nowhere to put a standby (a process never holds a task twice).
    assert (a.active_tasks, a.standby_tasks) == (all4, frozenset())
    b = hb(h, "b", 0)
    # b's standby is a stateful task a keeps: granted at once; its active tasks wait.
    assert b.active_tasks == frozenset() and b.standby_tasks is not None
    assert len(b.standby_tasks) == 1 and b.standby_tasks <= tasks("1_0", "1_1")
    a = hb(h, "a", 3, all4)
    kept = a.active_tasks
    assert kept is not None and len(kept) == 2 and b.standby_tasks <= kept
    # a demotes the stateful task going to b to a standby in the same heartbeat, while
    # it revokes the active ones.
    moving_stateful = (all4 - kept) & tasks("1_0", "1_1")
    assert a.standby_tasks == moving_stateful and a.member_epoch == 3
    group = h.core.streams_group(APP)
    assert group is not None and group.members["a"].state == UNREVOKED_TASKS
    a = hb(h, "a", 3, kept, standby=moving_stateful)
    assert (a.member_epoch, a.active_tasks, a.standby_tasks) == (4, None, None)
    assert (group.members["a"].active, group.members["a"].standby) == (kept, moving_stateful)
    b = hb(h, "b", 4, frozenset(), standby=b.standby_tasks)
    assert b.active_tasks == all4 - kept
    assert group.state == "Stable"
    for m in group.members.values():
        assert not m.active & m.standby
    # Described and reloaded with them.
    again = h.reload().core.streams_group(APP)
    assert again is not None and again.members == group.members
    assert again.target == group.target


def test_num_standby_replicas_group_config_wins() -> None:
    from kafkalite.coordinator.config import CoreConfig

    cfg = CoreConfig(streams_num_standby_replicas_default=2)
    assert cfg.streams_num_standby_replicas("g") == 2

    class Overrides:
        def int_value(self, group: str, name: str) -> int | None:
            return 0 if name == "streams.num.standby.replicas" else None

    cfg.group_overrides = Overrides()
    assert cfg.streams_num_standby_replicas("g") == 0


# --- static membership ------------------------------------------------------------------


def test_static_member_replaced_takes_the_tasks_of_the_one_it_replaces() -> None:
    h = make()
    hb(h, "a", 0, instance="i1", process="p1")
    ready(h)
    a = hb(h, "a", 2, frozenset(), instance="i1")
    all4 = tasks("0_0", "0_1", "1_0", "1_1")
    assert a.active_tasks == all4 and a.member_epoch == 3
    # The instance id is held: another member cannot join with it.
    taken = hb(h, "a2", 0, instance="i1", process="p1")
    assert taken.error is E.unreleased_instance_id
    assert hb(h, "zz", 3, frozenset(), instance="nope").error is E.unknown_member_id
    assert hb(h, "a2", 3, frozenset(), instance="i1").error is E.fenced_instance_id
    # Leaving with epoch -2 keeps the member and its tasks.
    left = hb(h, "a", -2, instance="i1")
    assert (left.error, left.member_epoch) == (E.none, -2)
    group = h.core.streams_group(APP)
    assert group is not None and group.members["a"].active == all4
    assert group.members["a"].member_epoch == -2
    # The same instance comes back under a new member id: it takes a's place, its tasks
    # and its target, with no new group epoch (nothing the assignment uses changed).
    epoch = group.group_epoch
    back = hb(h, "a2", 0, instance="i1", process="p1")
    assert (back.error, back.member_epoch, back.active_tasks) == (E.none, epoch, all4)
    assert set(group.members) == {"a2"} and group.group_epoch == epoch
    assert group.target["a2"].active == all4 and "a" not in group.target
    assert h.reload().core.streams_group(APP).members == group.members  # type: ignore[union-attr]


def test_static_member_left_is_removed_when_its_session_ends() -> None:
    h = make()
    hb(h, "a", 0, instance="i1")
    ready(h)
    hb(h, "a", 2, frozenset(), instance="i1")
    hb(h, "b", 0)
    group = h.core.streams_group(APP)
    assert group is not None
    h.advance(SESSION - 10)
    hb(h, "b", 4, frozenset())
    hb(h, "a", -2, instance="i1")
    h.advance(9)
    hb(h, "b", 4, frozenset())
    assert group.members["a"].member_epoch == -2  # still there, its tasks kept
    h.advance(1)  # a's session, from its last heartbeat before the leave
    assert set(group.members) == {"b"}
    b = hb(h, "b", group.members["b"].member_epoch, frozenset())
    assert b.active_tasks == tasks("0_0", "0_1", "1_0", "1_1")


# --- Interactive Queries endpoints -------------------------------------------------------


def test_endpoints_and_their_partitions_in_the_heartbeat() -> None:
    h = make()
    first = hb(h, "a", 0, endpoint=("host-a", 7001))
    # A group the heartbeat creates answers endpoint epoch 0, as Kafka's.
    assert first.endpoint_information_epoch == 0
    ready(h)
    a = hb(h, "a", 2, frozenset())
    all4 = tasks("0_0", "0_1", "1_0", "1_1")
    assert a.active_tasks == all4 and a.endpoints is not None
    # a owns every task: the partitions of the source and repartition topics.
    assert [(e.endpoint, e.active) for e in a.endpoints] == [(("host-a", 7001), (
        ("app-words-repartition", (0, 1)), ("lines", (0, 1))))]
    current = a.endpoint_information_epoch
    assert current > 0
    steady = hb(h, "a", 3, all4, endpoint_epoch=current)
    assert steady.endpoints is None  # the member is up to date
    b = hb(h, "b", 0, endpoint=("host-b", 7002), endpoint_epoch=current)
    assert b.endpoint_information_epoch > current and b.endpoints is not None
    assert {e.endpoint: e.active for e in b.endpoints}[("host-b", 7002)] == ()


def test_member_commits_need_offset_commit_v9_and_the_current_epoch() -> None:
    h = make()
    hb(h, "a", 0)
    ready(h)
    a = hb(h, "a", 2, frozenset())

    def commit(epoch: int, version: int = 9) -> E:
        req = CommitRequest(APP, "a", None, epoch, topics=[("lines", [PartitionCommit(0, 5)])],
                            api_version=version)
        out: dict[tuple[str, int], E] = h.runtime.groups.write(
            lambda g, now: g.commit_offsets(now, req))
        return out[("lines", 0)]

    assert commit(a.member_epoch) is E.none
    assert commit(a.member_epoch, version=8) is E.unsupported_version
    assert commit(a.member_epoch + 3) is E.stale_member_epoch  # newer: stale, as Kafka 4.4


def test_an_older_epoch_commits_for_tasks_held_since_then() -> None:
    """Kafka 4.4's assignment epochs: each active task remembers the epoch it was
    assigned at, and a commit at an older member epoch is accepted for the partitions of
    tasks held since that epoch or before."""
    h = make()
    hb(h, "a", 0)
    ready(h)
    a = hb(h, "a", 2, frozenset())
    at = a.member_epoch
    all4 = tasks("0_0", "0_1", "1_0", "1_1")
    hb(h, "b", 0)
    kept = hb(h, "a", at, all4).active_tasks
    assert kept is not None
    a = hb(h, "a", at, kept)  # revoked: a moves to the new epoch with what it kept
    assert a.member_epoch > at
    group = h.core.streams_group(APP)
    assert group is not None
    assert set(group.members["a"].task_epochs.items()) == {(t, at) for t in kept}

    def commit(partition: int) -> E:
        req = CommitRequest(APP, "a", None, at, api_version=9,
                            topics=[("lines", [PartitionCommit(partition, 5)])])
        out: dict[tuple[str, int], E] = h.runtime.groups.write(
            lambda g, now: g.commit_offsets(now, req))
        return out[("lines", partition)]

    held = {p for s, p in kept if s == "0"}
    for p in (0, 1):
        assert commit(p) is (E.none if p in held else E.stale_member_epoch)
    # The epochs are in the records: a reload has them.
    again = h.reload().core.streams_group(APP)
    assert again is not None and again.members["a"].task_epochs == group.members["a"].task_epochs
