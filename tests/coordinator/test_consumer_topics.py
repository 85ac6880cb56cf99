"""Consumer groups following the topics: regex subscriptions resolved (and resolved again
when topics are created), partition count increases and topic deletions giving a new
target assignment; the exact records of each step."""

from __future__ import annotations

from kafkalite.coordinator.consumer.group import MemberState
from kafkalite.protocol.errors import ErrorCode as E

from .consumer_helpers import (
    current,
    epoch,
    metadata,
    owned,
    regex_record,
    removed,
    sub,
    target,
)
from .consumer_helpers import target_epoch as tepoch
from .harness import START, Harness, check_replay, topic_id

S, U = MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS
REFRESH = 1000


def make() -> Harness:
    return Harness.make(topics={"foo": 4, "bar": 2}, consumer_session_timeout_ms=60_000,
                        regex_refresh_interval_ms=REFRESH)


def test_regex_is_resolved_then_picks_up_a_topic_created_later() -> None:
    h = make()
    image_version = h.core.topics.version
    r = h.cg("m1", 0, regex="fo.*")
    # The heartbeat writes the member; the resolution follows as its own write (Kafka's
    # executor result): the member sees the topics on its next heartbeat.
    assert (r.error, r.member_epoch, r.assignment) == (E.none, 1, {})
    assert h.written == [
        [sub("m1", regex="fo.*"), epoch(1), target("m1", {}), tepoch(1),
         current("m1", 1, 0, S, {})],
        [regex_record("fo.*", ["foo"], image_version, START), metadata({"foo": 4}), epoch(2)],
    ]
    r = h.cg("m1", 1)
    assert (r.member_epoch, r.assignment) == (2, {topic_id("foo"): frozenset({0, 1, 2, 3})})
    assert h.written[-1] == [target("m1", {"foo": [0, 1, 2, 3]}), tepoch(2),
                             current("m1", 2, 1, S, {"foo": [0, 1, 2, 3]})]
    # A matching topic appears: resolved again once the refresh interval has passed.
    h.now += 10
    h.create_topic("fox", 2)
    created = h.core.topics.version
    assert created > image_version
    n = len(h.written)
    h.cg("m1", 2)
    assert len(h.written) == n  # within the interval: nothing
    h.now += REFRESH
    r = h.cg("m1", 2)
    assert r.member_epoch == 2
    assert h.written[-1] == [regex_record("fo.*", ["foo", "fox"], created, h.now),
                             metadata({"foo": 4, "fox": 2}), epoch(3)]
    r = h.cg("m1", 2)
    assert (r.member_epoch, r.assignment) == (3, {topic_id("foo"): frozenset({0, 1, 2, 3}),
                                                  topic_id("fox"): frozenset({0, 1})})
    check_replay(h)
    # The last subscriber leaving deletes the resolution.
    h.cg("m1", -1)
    assert h.written[-1] == [*removed("m1"),
                             (regex_record("fo.*", [], 0, 0)[0], None),
                             metadata({}), epoch(4)]
    assert h.cgroup().resolved_regexes == {}
    check_replay(h)


def test_regex_resolution_keeps_only_topics_the_principal_may_describe() -> None:
    h = make()
    h.create_topic("foo2", 1)
    h.cg("m1", 0, regex="foo.*", may_describe=lambda t: t != "foo2")
    assert h.cgroup().resolved_regexes["foo.*"].topics == {"foo"}


def test_a_second_member_with_a_resolved_regex_bumps_the_epoch() -> None:
    h = make()
    h.cg("m1", 0, regex="fo.*")
    h.cg("m1", 1)
    h.cg("m2", 0, regex="fo.*")
    assert h.written[-1][:2] == [sub("m2", regex="fo.*"), epoch(3)]


def test_a_member_without_subscription_joining_after_a_regex_resolved() -> None:
    """The epoch moved for the regex, not for the new member: the assignment it computes
    is still for the group with that member in it (heterogeneous), so the regex's member
    gets the regex's topics and the new member none."""
    h = make()
    h.cg("m1", 0, regex="fo.*")  # resolved in its own write: epoch 2, no target yet
    r = h.cg("m2", 0, names=[])
    assert (r.error, r.member_epoch, r.assignment) == (E.none, 2, {})
    assert h.written[-1] == [
        sub("m2"),
        target("m1", {"foo": range(4)}),
        target("m2", {}),
        tepoch(2),
        current("m2", 2, 0, S, {}),
    ]
    r = h.cg("m1", 1)
    assert (r.member_epoch, r.assignment) == (2, {topic_id("foo"): frozenset(range(4))})
    assert h.written[-1] == [current("m1", 2, 1, S, {"foo": range(4)})]
    check_replay(h)


def test_partition_count_increase_gives_a_new_target_assignment() -> None:
    h = make()
    h.cg("m1", 0, names=["foo"])
    h.grow_topic("foo", 6)
    assert len(h.written) == 1  # learnt, written on the next heartbeat
    r = h.cg("m1", 1)
    assert (r.member_epoch, r.assignment) == (2, {topic_id("foo"): frozenset(range(6))})
    assert h.written[-1] == [
        metadata({"foo": 6}),
        epoch(2),
        target("m1", {"foo": range(6)}),
        tepoch(2),
        current("m1", 2, 1, S, {"foo": range(6)}),
    ]
    check_replay(h)


def test_topic_deletion_revokes_its_partitions() -> None:
    h = make()
    h.cg("m1", 0, names=["foo", "bar"])
    h.delete_topic("bar")
    r = h.cg("m1", 1, owned=owned({"foo": [0, 1, 2, 3], "bar": [0, 1]}))
    # bar is gone from the metadata and the target; the member is asked to give it up.
    assert (r.member_epoch, r.assignment) == (1, {topic_id("foo"): frozenset({0, 1, 2, 3})})
    assert h.written[-1] == [
        metadata({"foo": 4}),
        epoch(2),
        target("m1", {"foo": [0, 1, 2, 3]}),
        tepoch(2),
        current("m1", 1, 1, U, {"foo": [0, 1, 2, 3]}, {"bar": [0, 1]}),
    ]
    r = h.cg("m1", 1, owned=owned({"foo": [0, 1, 2, 3]}))
    assert h.written[-1] == [current("m1", 2, 1, S, {"foo": [0, 1, 2, 3]})]
    check_replay(h)


def test_a_topic_created_after_a_name_subscription_is_assigned() -> None:
    h = make()
    r = h.cg("m1", 0, names=["later"])
    assert (r.member_epoch, r.assignment) == (1, {})
    h.create_topic("later", 3)
    r = h.cg("m1", 1)
    assert (r.member_epoch, r.assignment) == (2, {topic_id("later"): frozenset({0, 1, 2})})


def test_a_deleted_topic_leaves_a_regex_subscription() -> None:
    h = make()
    h.create_topic("fox", 2)
    h.cg("m1", 0, regex="fo.*")
    h.cg("m1", 1)
    assert h.cgroup().target_assignment["m1"] == {topic_id("foo"): {0, 1, 2, 3},
                                                  topic_id("fox"): {0, 1}}
    h.now += 10
    h.delete_topic("fox")
    # As Kafka: no new resolution for a deletion; the topic leaves the metadata, so the
    # group epoch moves and the target loses it.
    r = h.cg("m1", 2, owned=owned({"foo": [0, 1, 2, 3], "fox": [0, 1]}))
    assert (r.member_epoch, r.assignment) == (2, {topic_id("foo"): frozenset({0, 1, 2, 3})})
    assert h.written[-1] == [
        metadata({"foo": 4}),
        epoch(3),
        target("m1", {"foo": [0, 1, 2, 3]}),
        tepoch(3),
        current("m1", 2, 2, U, {"foo": [0, 1, 2, 3]}, {"fox": [0, 1]}),
    ]
    assert h.cgroup().resolved_regexes["fo.*"].topics == {"foo", "fox"}
    check_replay(h)
