"""Streams groups' topology configuration (internal topics to create, task counts, the
group's status) and the sticky task assignor (active and standby tasks), as plain
functions."""

from __future__ import annotations

from kafkalite.coordinator.streams.assignor import AssignorMember, assign
from kafkalite.coordinator.streams.topology import (
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    Subtopology,
    TaskTuple,
    Topology,
    configure,
)

from .test_streams_group import NONE, WORD_COUNT, tasks


def test_topology_sizes_internal_topics_from_their_sources() -> None:
    c = configure(WORD_COUNT, {"lines": 3})
    assert [(t.name, t.partitions) for t in c.to_create] == [
        ("app-words-repartition", 3), ("app-counts-changelog", 3)]
    assert [s.code for s in c.status] == [MISSING_INTERNAL_TOPICS]
    # Named in java.util.HashMap order, as Kafka's InternalTopicManager lists them.
    assert c.status[0].detail == ("Internal topics are missing: "
                                  "app-counts-changelog, app-words-repartition")
    done = configure(WORD_COUNT, {"lines": 3, "app-words-repartition": 3,
                                  "app-counts-changelog": 3})
    assert done.ready and done.task_counts == {"0": 3, "1": 3}
    assert len(done.tasks()) == 6
    missing = configure(WORD_COUNT, {})
    assert [s.code for s in missing.status] == [MISSING_SOURCE_TOPICS]
    wrong = configure(WORD_COUNT, {"lines": 3, "app-words-repartition": 2,
                                   "app-counts-changelog": 3})
    assert not wrong.ready and not wrong.task_counts
    assert [(x.code, x.detail) for x in wrong.status] == [(
        INCORRECTLY_PARTITIONED_TOPICS, "Existing topic app-words-repartition has different "
        "number of partitions: expected 3, found 2")]
    # Kafka names three topics, then counts the rest.
    many = Topology(1, tuple(Subtopology(str(i), source_topics=(f"in{i}",)) for i in range(5)))
    assert configure(many, {}).status[0].detail == (
        "Source topics in0, in1, in2 and 2 additional topics are missing.")


# --- the assignor ---------------------------------------------------------------------


def _members(*specs: tuple[str, str, frozenset[tuple[str, int]]]) -> list[AssignorMember]:
    return [AssignorMember(m, p, TaskTuple(active)) for m, p, active in specs]


def test_assignor_balances_and_keeps_tasks_where_they_are() -> None:
    counts = {"0": 3, "1": 3}
    all_tasks = tasks("0_0", "0_1", "0_2", "1_0", "1_1", "1_2")
    one = assign(_members(("a", "p1", NONE)), counts)
    assert one == {"a": TaskTuple(all_tasks)}
    two = assign(_members(("a", "p1", all_tasks), ("b", "p2", NONE)), counts)
    assert len(two["a"].active) == len(two["b"].active) == 3
    assert two["a"].active | two["b"].active == all_tasks
    # Sticky: a third member takes from both, and nobody's kept task moves.
    three = assign(_members(("a", "p1", two["a"].active), ("b", "p2", two["b"].active),
                            ("c", "p3", NONE)), counts)
    assert [len(three[m].active) for m in "abc"] == [2, 2, 2]
    assert three["a"].active <= two["a"].active and three["b"].active <= two["b"].active
    # A process with two members takes twice the tasks of a process with one.
    procs = assign(_members(("a", "p1", NONE), ("b", "p1", NONE), ("c", "p2", NONE)), counts)
    assert sorted(len(v.active) for v in procs.values()) == [2, 2, 2]
    assert assign([], counts) == {}
    # No standby without the setting, and none for stateless subtopologies.
    assert all(not v.standby and not v.warmup for v in procs.values())


def test_assignor_places_standbys_on_other_processes() -> None:
    counts = {"0": 2, "1": 2}  # subtopology 1 has state
    first = assign(_members(("a", "p1", NONE), ("b", "p2", NONE)), counts,
                   frozenset({"1"}), num_standby_replicas=1)
    stateful = tasks("1_0", "1_1")
    for m in ("a", "b"):
        # Every stateful task has one standby, never where its active task runs.
        assert first[m].standby <= stateful
        assert not first[m].standby & first[m].active
    assert first["a"].standby | first["b"].standby == stateful
    assert first["a"].standby == first["b"].active & stateful
    # Two members of one process cannot hold a task twice: no process to put it on.
    same = assign(_members(("a", "p1", NONE), ("b", "p1", NONE)), counts, frozenset({"1"}), 1)
    assert not same["a"].standby and not same["b"].standby
    # The active owner leaves: the member that had its standby takes it as active.
    three = assign(_members(("a", "p1", NONE), ("b", "p2", NONE), ("c", "p3", NONE)),
                   {"1": 3}, frozenset({"1"}), 1)
    a_task = next(iter(three["a"].active))
    holder = next(m for m in "bc" if a_task in three[m].standby)
    after = assign([AssignorMember(m, f"p-{m}", three[m]) for m in "bc"], {"1": 3},
                   frozenset({"1"}), 1)
    assert a_task in after[holder].active
    assert three["b"].active <= after["b"].active and three["c"].active <= after["c"].active
    # Stickiness of standbys: with the targets unchanged the assignment is the same.
    again = assign([AssignorMember(m, p, first[m]) for m, p in (("a", "p1"), ("b", "p2"))],
                   counts, frozenset({"1"}), 1)
    assert again == first


def test_assignor_uses_reported_offsets_for_a_new_member() -> None:
    """A member rejoining with a new id and no target, whose task offsets show the
    state of a task on its disk, gets that task back (Kafka's weaker standby candidate)."""
    counts = {"0": 4}
    fresh = [AssignorMember("new", "p1", TaskTuple(), {("0", 3): 500, ("0", 2): 10}),
             AssignorMember("other", "p2", TaskTuple())]
    out = assign(fresh, counts, frozenset({"0"}))
    assert tasks("0_2", "0_3") <= out["new"].active


def test_missing_internal_topics_in_java_hash_map_order() -> None:
    from kafkalite.coordinator.streams.topology import _hash_map_order

    # What java.util.HashMap's keySet() lists for these insertions (16 names: a resized
    # table of 32 buckets), read from a JVM.
    names = [f"t{i}" for i in range(14)] + ["x-repartition", "y-changelog"]
    assert ",".join(_hash_map_order(names)) == (
        "t4,t5,t6,t7,t8,t9,x-repartition,t10,t12,t11,t13,t0,t1,t2,t3,y-changelog")
