"""The share groups' simple assignor (coordinator/share/assignor.py): every partition
assigned, shared by ceil(members / partitions) members when members outnumber partitions,
counts balanced within one, sticky across member changes; Hypothesis checks those
properties over random groups."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.coordinator.share.assignor import assign


def counts(a: dict[str, frozenset[tuple[str, int]]]) -> list[int]:
    return sorted(len(ps) for ps in a.values())


def test_fewer_members_than_partitions() -> None:
    a = assign({"m1": frozenset({"t"}), "m2": frozenset({"t"})}, {"t": 4})
    assert counts(a) == [2, 2]
    assert a["m1"] | a["m2"] == {("t", p) for p in range(4)}
    assert not a["m1"] & a["m2"]


def test_more_members_than_partitions_share_them() -> None:
    members = {f"m{i}": frozenset({"t"}) for i in range(5)}
    a = assign(members, {"t": 2})
    # ceil(5 / 2) = 3 members per partition, 6 pairs over 5 members.
    per_partition = Counter(p for ps in a.values() for p in ps)
    assert per_partition == {("t", 0): 3, ("t", 1): 3}
    assert counts(a) == [1, 1, 1, 1, 2]


def test_sticky_when_a_member_joins_and_leaves() -> None:
    subs = {"a": frozenset({"t"}), "b": frozenset({"t"})}
    first = assign(subs, {"t": 6})
    grown = assign({**subs, "c": frozenset({"t"})}, {"t": 6}, first)
    assert counts(grown) == [2, 2, 2]
    assert grown["a"] <= first["a"] and grown["b"] <= first["b"]
    shrunk = assign(subs, {"t": 6}, grown)
    assert grown["a"] <= shrunk["a"] and grown["b"] <= shrunk["b"]
    assert assign(subs, {"t": 6}, shrunk) == shrunk


def test_missing_topics_and_different_subscriptions() -> None:
    a = assign({"a": frozenset({"t", "u"}), "b": frozenset({"u"})}, {"t": 2, "u": 2})
    assert a["a"] >= {("t", 0), ("t", 1)}
    assert {p for ps in a.values() for p in ps} == {("t", 0), ("t", 1), ("u", 0), ("u", 1)}
    assert assign({"a": frozenset({"nope"})}, {}) == {"a": frozenset()}
    assert assign({}, {"t": 3}) == {}


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7), st.integers(1, 9), st.integers(0, 7))
def test_properties(members: int, partitions: int, extra: int) -> None:
    subs = {f"m{i}": frozenset({"t"}) for i in range(members)}
    a = assign(subs, {"t": partitions})
    sharing = -(-members // partitions)
    per_partition = Counter(p for ps in a.values() for p in ps)
    assert set(per_partition) == {("t", p) for p in range(partitions)}
    assert all(n == sharing for n in per_partition.values())
    assert max(counts(a)) - min(counts(a)) <= 1
    # Sticky: recomputing changes nothing; a new member takes only from others' surplus.
    assert assign(subs, {"t": partitions}, a) == a
    more = {**subs, **{f"n{i}": frozenset({"t"}) for i in range(extra)}}
    b = assign(more, {"t": partitions}, a)
    per_partition = Counter(p for ps in b.values() for p in ps)
    assert set(per_partition) == {("t", p) for p in range(partitions)}
    assert max(counts(b)) - min(counts(b)) <= 1
    kept = sum(len(a[m] & b[m]) for m in subs)
    assert kept >= min(sum(len(ps) for ps in a.values()),
                       sum(len(b[m]) for m in subs)) - len(subs)
