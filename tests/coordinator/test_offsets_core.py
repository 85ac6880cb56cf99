"""The pure offset logic: every commit validation branch, fetch, delete, retention, with a
fake clock (plain integers) and the exact records written."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkalite.coordinator.classic.states import (
    COMPLETING,
    DEAD,
    EMPTY,
    PREPARING,
    STABLE,
    GroupState,
)
from kafkalite.coordinator.offsets.store import (
    CommitRequest,
    OffsetStore,
    PartitionCommit,
    subscribed_topics_of,
)
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ErrorCode as E

DAY = 86_400_000


@dataclass
class FakeGroup:
    """A ``GroupForOffsets``: the part of a group the offset logic reads."""

    state: GroupState = STABLE
    generation: int = 3
    protocol_type: str | None = "consumer"
    current_state_timestamp: int = 0
    members: dict[str, str | None] = field(default_factory=lambda: {"m1": None, "m2": "i2"})
    topics: set[str] | None = field(default_factory=lambda: {"t"})

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def static_member_id(self, instance_id: str | None) -> str | None:
        for m, i in self.members.items():
            if i == instance_id:
                return m
        return None

    def subscribed_topics(self) -> set[str] | None:
        return self.topics


def req(**kw: object) -> CommitRequest:
    base: dict[str, object] = dict(group_id="g", member_id="m1", generation_id=3,
                                   topics=[("t", [PartitionCommit(0, 10, 2, "md")])])
    base.update(kw)
    return CommitRequest(**base)  # type: ignore[arg-type]


def apply(store: OffsetStore, records: list[tuple[co.Key, co.Value | None]]) -> None:
    for k, v in records:
        store.replay_record(k, v)


def test_member_commit_writes_v3_record_and_rearms_heartbeat() -> None:
    store = OffsetStore()
    r = store.commit(FakeGroup(), req(), now=1000)
    assert r.errors == {("t", 0): E.none}
    assert r.heartbeat_member == "m1"
    assert r.records == [(co.OffsetCommitKey("g", "t", 0), co.OffsetCommitValue(10, "md", 1000, 2))]
    k, v = r.records[0]
    assert co.encode_key(k)[:2] == b"\x00\x01"
    assert co.encode_value(v)[:2] == b"\x00\x03"
    assert store.get("g", "t", 0) is None  # only replay changes state
    apply(store, r.records)
    assert store.fetch(FakeGroup(), "g", [("t", [0, 1])]) == [
        ("t", [(0, 10, 2, "md", E.none), (1, -1, -1, "", E.none)])]


def test_retention_time_writes_v1_with_expire_timestamp() -> None:
    r = OffsetStore().commit(FakeGroup(), req(retention_time_ms=5000), now=1000)
    v = r.records[0][1]
    assert isinstance(v, co.OffsetCommitValue) and v.expire_timestamp == 6000
    assert co.encode_value(v)[:2] == b"\x00\x01"


def test_simple_commit_to_missing_group_is_accepted() -> None:
    # The simple group itself is made when the record is replayed (test_group_admin.py).
    r = OffsetStore().commit(None, req(member_id="", generation_id=-1), now=5)
    assert r.errors == {("t", 0): E.none} and len(r.records) == 1
    assert r.heartbeat_member is None


def test_member_commit_to_missing_group() -> None:
    assert OffsetStore().commit(None, req(api_version=8), 0).errors == {
        ("t", 0): E.illegal_generation}
    assert OffsetStore().commit(None, req(api_version=9), 0).errors == {
        ("t", 0): E.group_id_not_found}


def test_simple_commit_to_empty_group_is_accepted() -> None:
    r = OffsetStore().commit(FakeGroup(state=EMPTY, members={}),
                             req(member_id="", generation_id=-1), 0)
    assert r.errors == {("t", 0): E.none}


def test_validation_errors() -> None:
    s = OffsetStore()
    cases = [
        (FakeGroup(state=DEAD), req(), E.coordinator_not_available),
        (FakeGroup(), req(member_id="nobody"), E.unknown_member_id),
        (FakeGroup(), req(generation_id=2), E.illegal_generation),
        (FakeGroup(), req(member_id="m1", instance_id="i2"), E.fenced_instance_id),
        (FakeGroup(), req(member_id="m2", instance_id="i9"), E.unknown_member_id),
        (FakeGroup(state=COMPLETING), req(), E.rebalance_in_progress),
        (FakeGroup(), req(member_id="", generation_id=-1), E.unknown_member_id),
    ]
    for group, request, error in cases:
        r = s.commit(group, request, 0)
        assert r.errors == {("t", 0): error}, (group, request)
        assert r.records == [] and r.heartbeat_member is None
    ok = s.commit(FakeGroup(), req(member_id="m2", instance_id="i2"), 0)
    assert ok.errors == {("t", 0): E.none}
    pr = s.commit(FakeGroup(state=PREPARING), req(), 0)
    assert pr.errors == {("t", 0): E.none} and pr.heartbeat_member == "m1"


def test_metadata_too_large_per_partition() -> None:
    s = OffsetStore(max_metadata_bytes=4)
    r = s.commit(FakeGroup(), req(topics=[("t", [PartitionCommit(0, 1, -1, "12345"),
                                                 PartitionCommit(1, 2, -1, "1234")])]), 0)
    assert r.errors == {("t", 0): E.offset_metadata_too_large, ("t", 1): E.none}
    assert [k for k, _ in r.records] == [co.OffsetCommitKey("g", "t", 1)]


def test_fetch_all_topics_and_dead_group() -> None:
    s = OffsetStore()
    apply(s, s.commit(FakeGroup(), req(topics=[("b", [PartitionCommit(1, 7)]),
                                               ("a", [PartitionCommit(0, 3)])]), 0).records)
    assert s.fetch(FakeGroup(), "g", None) == [
        ("a", [(0, 3, -1, "", E.none)]), ("b", [(1, 7, -1, "", E.none)])]
    assert s.fetch(None, "g", None)[0][0] == "a"
    assert s.fetch(FakeGroup(state=DEAD), "g", None) == []
    assert s.fetch(None, "other", None) == []


def test_delete_offsets_respects_subscription() -> None:
    s = OffsetStore()
    apply(s, s.commit(FakeGroup(), req(topics=[("t", [PartitionCommit(0, 1)]),
                                               ("u", [PartitionCommit(0, 1)])]), 0).records)
    err, topics, records = s.delete_offsets(FakeGroup(), "g", [("t", [0]), ("u", [0, 5])])
    assert err == E.none
    assert topics == [("t", [(0, E.group_subscribed_to_topic)]), ("u", [(0, E.none), (5, E.none)])]
    assert records == [(co.OffsetCommitKey("g", "u", 0), None)]
    assert s.delete_offsets(None, "g", [("t", [0])])[0] == E.group_id_not_found
    assert s.delete_offsets(FakeGroup(protocol_type="other"), "g", [])[0] == E.non_empty_group


def test_delete_group() -> None:
    s = OffsetStore()
    apply(s, s.commit(FakeGroup(), req(), 0).records)
    assert s.validate_delete_group(None) == E.group_id_not_found
    assert s.validate_delete_group(FakeGroup()) == E.non_empty_group
    assert s.validate_delete_group(FakeGroup(state=EMPTY)) == E.none
    assert s.delete_group_records("g") == [(co.OffsetCommitKey("g", "t", 0), None),
                                           (co.GroupMetadataKey("g"), None)]


def test_retention_of_an_empty_group_counts_from_when_it_became_empty() -> None:
    s = OffsetStore(retention_ms=DAY)
    apply(s, s.commit(FakeGroup(), req(), now=0).records)
    empty = FakeGroup(state=EMPTY, members={}, topics=set(), current_state_timestamp=10 * DAY)
    assert s.expire("g", empty, now=10 * DAY + DAY - 1) == ([], False)
    records, remove = s.expire("g", empty, now=11 * DAY)
    assert records == [(co.OffsetCommitKey("g", "t", 0), None)] and remove
    apply(s, records)
    assert not s.has_offsets("g")
    # A Stable group keeps offsets of topics its members subscribe to.
    apply(s, s.commit(FakeGroup(), req(), now=0).records)
    assert s.expire("g", FakeGroup(), now=100 * DAY) == ([], False)


def test_retention_of_a_simple_group_counts_from_commit_time() -> None:
    s = OffsetStore(retention_ms=DAY)
    simple = FakeGroup(state=EMPTY, protocol_type=None, members={}, topics=None,
                       current_state_timestamp=0)
    apply(s, s.commit(simple, req(member_id="", generation_id=-1), now=5 * DAY).records)
    apply(s, s.commit(simple, req(member_id="", generation_id=-1,
                                  topics=[("t", [PartitionCommit(1, 1)])]), now=6 * DAY).records)
    records, remove = s.expire("g", simple, now=6 * DAY)
    assert records == [(co.OffsetCommitKey("g", "t", 0), None)] and not remove
    apply(s, records)
    records, remove = s.expire("g", simple, now=7 * DAY)
    assert records == [(co.OffsetCommitKey("g", "t", 1), None)] and remove


def test_explicit_expire_timestamp_wins() -> None:
    s = OffsetStore(retention_ms=100 * DAY)
    simple = FakeGroup(state=EMPTY, protocol_type=None, members={}, topics=None)
    apply(s, s.commit(simple, req(member_id="", generation_id=-1, retention_time_ms=1000),
                      now=0).records)
    assert s.expire("g", simple, now=999) == ([], False)
    assert s.expire("g", simple, now=1000)[0] == [(co.OffsetCommitKey("g", "t", 0), None)]


def test_subscribed_topics_parsing() -> None:
    sub = co.encode_subscription(co.ConsumerProtocolSubscription(("a", "b"), version=3))
    assert subscribed_topics_of("consumer", "range", [sub]) == {"a", "b"}
    assert subscribed_topics_of("consumer", None, []) == set()
    assert subscribed_topics_of("consumer", "range", [b"\x00"]) is None
    assert subscribed_topics_of("connect", "x", [sub]) is None
