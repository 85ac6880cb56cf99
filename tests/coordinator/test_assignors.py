"""Server-side assignors ``uniform`` and ``range``: Kafka's answers and Kafka's promises."""

from __future__ import annotations

import base64
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.coordinator.consumer import assignors as a
from kafkalite.coordinator.consumer.assignors import GroupSpec, MemberSpec, SubscriptionType


def kafka_uuid(s: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString`` (URL-safe base64 without padding)."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(s + "=="))


# The topic ids of Kafka's UniformHeterogeneousAssignmentBuilderTest.
T1 = kafka_uuid("T1-A4s3VTwiI5CTbEp6POw")
T2 = kafka_uuid("T2-B4s3VTwiI5YHbPp6YUe")
T3 = kafka_uuid("T3-CU8fVTLCz5YMkLoDQsa")


def member(topics: set[uuid.UUID], assignment: dict[uuid.UUID, set[int]] | None = None,
           instance: str | None = None) -> MemberSpec:
    return MemberSpec(frozenset(topics),
                      {t: frozenset(p) for t, p in (assignment or {}).items()}, instance)


def spec(members: dict[str, MemberSpec], partitions: dict[uuid.UUID, int]) -> GroupSpec:
    return GroupSpec(members, a.subscription_type(
        [m.subscribed_topic_ids for m in members.values()]), partitions)


def fs(d: dict[uuid.UUID, set[int]]) -> dict[uuid.UUID, frozenset[int]]:
    return {t: frozenset(p) for t, p in d.items()}


# --- Kafka's own expected assignments (members iterated in sorted order there too) --------


def test_heterogeneous_first_assignment_two_members_two_topics() -> None:
    s = spec({"A": member({T1, T3}), "B": member({T3})}, {T1: 3, T3: 6})
    assert s.subscription_type is SubscriptionType.HETEROGENEOUS
    assert a.assign(a.UNIFORM, s) == {
        "A": fs({T1: {0, 1, 2}, T3: {4}}),
        "B": fs({T3: {0, 1, 2, 3, 5}}),
    }


def test_heterogeneous_more_members_than_partitions() -> None:
    s = spec({"A": member({T3}), "B": member({T3}), "C": member({T1})}, {T3: 1, T1: 2})
    assert a.assign(a.UNIFORM, s) == {"A": fs({T3: {0}}), "B": {}, "C": fs({T1: {0, 1}})}


def test_heterogeneous_reassignment_of_an_unbalanced_previous_assignment() -> None:
    s = spec({
        "A": member({T1}, {T1: {0, 1, 2}}),
        "B": member({T1, T2}, {T1: {3}, T2: {0}}),
        "C": member({T1, T2, T3}, {T1: {4, 5}, T2: {1, 2, 3}, T3: {0, 1, 2, 3}}),
    }, {T1: 6, T2: 4, T3: 4})
    assert a.assign(a.UNIFORM, s) == {
        "A": fs({T1: {0, 1, 2, 5}}),
        "B": fs({T1: {3}, T2: {0, 1, 2, 3}}),
        "C": fs({T1: {4}, T3: {0, 1, 2, 3}}),
    }


def test_unknown_topic_is_an_assignor_error() -> None:
    with pytest.raises(a.PartitionAssignorError):
        a.assign(a.UNIFORM, spec({"A": member({T3}), "B": member({T2})}, {T1: 3}))
    with pytest.raises(a.PartitionAssignorError):
        a.assign(a.RANGE, spec({"A": member({T2})}, {T1: 3}))


def test_no_subscriptions_assign_nothing() -> None:
    s = spec({"A": member(set()), "B": member(set())}, {T1: 3})
    assert a.assign(a.UNIFORM, s) == {"A": {}, "B": {}}
    assert a.assign(a.RANGE, s) == {"A": {}, "B": {}}
    assert a.assign(a.UNIFORM, spec({}, {T1: 3})) == {}


def test_range_co_partitions_as_in_kafkas_javadoc() -> None:
    # Two members, T1 and T2 with 3 partitions each: M0 gets 0-1 of both, M1 gets 2 of both.
    s = spec({"M0": member({T1, T2}), "M1": member({T1, T2})}, {T1: 3, T2: 3})
    assert a.assign(a.RANGE, s) == {"M0": fs({T1: {0, 1}, T2: {0, 1}}),
                                    "M1": fs({T1: {2}, T2: {2}})}


def test_range_puts_static_members_first_by_instance_id() -> None:
    s = spec({"a": member({T1}), "m-late": member({T1}, instance="i0"),
              "m-early": member({T1}, instance="i1")}, {T1: 5})
    assert a.assign(a.RANGE, s) == {"m-late": fs({T1: {0, 1}}), "m-early": fs({T1: {2, 3}}),
                                    "a": fs({T1: {4}})}
    # A rolling restart gives new member ids; the instance ids keep the same ranges.
    s2 = spec({"b": member({T1}), "x": member({T1}, instance="i0"),
               "y": member({T1}, instance="i1")}, {T1: 5})
    assert a.assign(a.RANGE, s2) == {"x": fs({T1: {0, 1}}), "y": fs({T1: {2, 3}}),
                                     "b": fs({T1: {4}})}


def test_range_heterogeneous_counts_only_subscribers() -> None:
    s = spec({"A": member({T1, T2}), "B": member({T1}), "C": member({T2})}, {T1: 4, T2: 3})
    assert a.assign(a.RANGE, s) == {"A": fs({T1: {0, 1}, T2: {0, 1}}), "B": fs({T1: {2, 3}}),
                                    "C": fs({T2: {2}})}


def test_uniform_homogeneous_keeps_partitions_up_to_quota() -> None:
    # B held 4 partitions; with a new member C the quota is 2: B keeps its two lowest.
    s = spec({"A": member({T1}, {T1: {0, 1}}), "B": member({T1}, {T1: {2, 3, 4, 5}}),
              "C": member({T1})}, {T1: 6})
    assert a.assign(a.UNIFORM, s) == {"A": fs({T1: {0, 1}}), "B": fs({T1: {2, 3}}),
                                      "C": fs({T1: {4, 5}})}


def test_java_uuid_order_is_signed() -> None:
    low = uuid.UUID(int=1)
    high_bit = uuid.UUID(int=1 << 127)  # negative most significant half in Java
    assert sorted([low, high_bit], key=a.java_uuid_key) == [high_bit, low]


# --- properties ---------------------------------------------------------------------------

TOPICS = [uuid.UUID(int=i + 1) for i in range(4)]


@st.composite
def groups(draw: st.DrawFn, homogeneous: bool | None = None) -> GroupSpec:
    partitions = {t: draw(st.integers(0, 7)) for t in TOPICS[: draw(st.integers(1, 4))]}
    topics = sorted(partitions, key=a.java_uuid_key)
    n = draw(st.integers(1, 6))
    same = draw(st.booleans()) if homogeneous is None else homogeneous
    shared = frozenset(draw(st.sets(st.sampled_from(topics), min_size=1)))
    members: dict[str, MemberSpec] = {}
    owned: set[tuple[uuid.UUID, int]] = set()
    for i in range(n):
        subs = shared if same else frozenset(draw(st.sets(st.sampled_from(topics))))
        # A current target assignment: any partitions not held by another member.
        current: dict[uuid.UUID, set[int]] = {}
        for t in topics:
            for p in range(partitions[t]):
                if (t, p) not in owned and draw(st.integers(0, 3)) == 0:
                    owned.add((t, p))
                    current.setdefault(t, set()).add(p)
        members[f"m{i}"] = member(set(subs), current,
                                  draw(st.none() | st.sampled_from(["i1", "i2", "i3"]))
                                  if i < 3 else None)
    return spec(members, partitions)


def check_valid(s: GroupSpec, out: a.GroupAssignment) -> None:
    assert set(out) == set(s.members)
    owners: dict[tuple[uuid.UUID, int], str] = {}
    for m, assignment in out.items():
        for t, parts in assignment.items():
            assert t in s.members[m].subscribed_topic_ids, "assigned an unsubscribed topic"
            assert parts, "empty partition sets are left out"
            for p in parts:
                assert (t, p) not in owners, "a partition assigned twice"
                owners[(t, p)] = m
    subscribed = set().union(*(m.subscribed_topic_ids for m in s.members.values()))
    expected = {(t, p) for t in subscribed for p in range(s.partitions[t])}
    assert set(owners) == expected, "every partition of a subscribed topic is assigned"


def size(assignment: dict[uuid.UUID, frozenset[int]]) -> int:
    return sum(len(p) for p in assignment.values())


@settings(max_examples=150, deadline=None)
@given(groups())
def test_uniform_is_valid_balanced_and_stable(s: GroupSpec) -> None:
    out = a.assign(a.UNIFORM, s)
    check_valid(s, out)
    if s.subscription_type is SubscriptionType.HOMOGENEOUS:
        sizes = [size(x) for x in out.values()]
        assert max(sizes) - min(sizes) <= 1
    else:
        # No partition could move to a subscriber with two or more fewer partitions.
        for m1, x1 in out.items():
            for m2, x2 in out.items():
                if size(x1) - size(x2) >= 2:
                    assert not set(x1) & s.members[m2].subscribed_topic_ids, (m1, m2)
    # Fed back as the current assignment, the result is a fixed point.
    again = GroupSpec({m: MemberSpec(ms.subscribed_topic_ids, out[m], ms.instance_id)
                       for m, ms in s.members.items()}, s.subscription_type, s.partitions)
    assert a.assign(a.UNIFORM, again) == out


@settings(max_examples=150, deadline=None)
@given(groups())
def test_range_is_valid_balanced_per_topic_and_deterministic(s: GroupSpec) -> None:
    out = a.assign(a.RANGE, s)
    check_valid(s, out)
    for t, n in s.partitions.items():
        counts = [len(x.get(t, ())) for m, x in out.items()
                  if t in s.members[m].subscribed_topic_ids]
        if counts:
            assert max(counts) - min(counts) <= 1
            assert sum(counts) == n
        for x in out.values():
            parts = sorted(x.get(t, ()))
            assert parts == list(range(parts[0], parts[0] + len(parts))) if parts else True
    # The current assignment is not an input of range.
    blank = GroupSpec({m: MemberSpec(ms.subscribed_topic_ids, {}, ms.instance_id)
                       for m, ms in s.members.items()}, s.subscription_type, s.partitions)
    assert a.assign(a.RANGE, blank) == out


@settings(max_examples=150, deadline=None)
@given(groups(homogeneous=True))
def test_uniform_adding_a_member_moves_only_its_share(s: GroupSpec) -> None:
    before = a.assign(a.UNIFORM, s)
    topics = next(iter(s.members.values())).subscribed_topic_ids
    grown = {m: MemberSpec(ms.subscribed_topic_ids, before[m], ms.instance_id)
             for m, ms in s.members.items()}
    grown["new"] = MemberSpec(topics, {})
    after = a.assign(a.UNIFORM, GroupSpec(grown, SubscriptionType.HOMOGENEOUS, s.partitions))
    moved = {(t, p) for m, x in before.items() for t, ps in x.items() for p in ps
             if p not in after[m].get(t, frozenset())}
    # Only the partitions the new member takes move, and it takes its fair share.
    assert len(moved) == size(after["new"])
    total = sum(s.partitions[t] for t in topics)
    assert size(after["new"]) in (total // len(grown), -(-total // len(grown)))
