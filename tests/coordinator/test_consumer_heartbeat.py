"""KIP-848 consumer groups through the real runtime on a manual clock: the exact records of
every transition (join, reconciliation with revocation before assignment, leave, session
and rebalance timeouts, static members, fencing) and a reload that gives back the state."""

from __future__ import annotations

from kafkalite.coordinator.consumer.group import ConsumerGroupState, MemberState
from kafkalite.coordinator.partitions import rebalance_key, session_key
from kafkalite.protocol.errors import ErrorCode as E

from .consumer_helpers import current, epoch, held, metadata, owned, removed, sub, target
from .consumer_helpers import target_epoch as tepoch
from .harness import GROUP, REBALANCE, Harness, check_replay, topic_id

S, U, R = MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS
SESSION = 1000
FOO = topic_id("foo")


def make(**kw: object) -> Harness:
    cfg: dict[str, object] = {"consumer_session_timeout_ms": SESSION,
                              "consumer_heartbeat_interval_ms": 100, **kw}
    return Harness.make(topics={"foo": 4, "bar": 2}, **cfg)  # type: ignore[arg-type]


def exclusive(h: Harness) -> None:
    seen: dict[tuple[str, int], str] = {}
    for mid, tps in held(h).items():
        for tp in tps:
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {mid}"
            seen[tp] = mid


def two_members(h: Harness) -> None:
    """m1 alone owns foo 0-3, then m2 joins and the partitions move over (revocation
    first): both Stable at epoch 2."""
    h.cg("m1", 0, names=["foo"])
    h.cg("m2", 0, names=["foo"])
    h.cg("m1", 1, owned=owned({"foo": [0, 1, 2, 3]}))
    h.cg("m1", 1, owned=owned({"foo": [0, 1]}))
    h.cg("m2", 2, owned=[])


def test_first_member_joins_and_gets_every_partition() -> None:
    h = make()
    r = h.cg("m1", 0, names=["foo"])
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (E.none, "m1", 1,
                                                                                100)
    assert r.assignment == {FOO: frozenset({0, 1, 2, 3})}
    assert h.written == [[
        sub("m1", ["foo"]),
        metadata({"foo": 4}),
        epoch(1),
        target("m1", {"foo": [0, 1, 2, 3]}),
        tepoch(1),
        current("m1", 1, 0, S, {"foo": [0, 1, 2, 3]}),
    ]]
    assert h.core.timers.deadline(session_key(GROUP, "m1")) == h.now + SESSION
    assert h.cgroup().state is ConsumerGroupState.STABLE
    # A heartbeat with nothing new writes nothing and leaves the assignment out.
    h.now += 50
    r = h.cg("m1", 1)
    assert (r.error, r.member_epoch, r.assignment) == (E.none, 1, None)
    assert len(h.written) == 1
    assert h.core.timers.deadline(session_key(GROUP, "m1")) == h.now + SESSION
    check_replay(h)


def test_partitions_move_to_a_new_member_only_after_revocation() -> None:
    h = make()
    h.cg("m1", 0, names=["foo"])
    r2 = h.cg("m2", 0, names=["foo"])
    # The newcomer's partitions are still m1's: it waits, with nothing, at the new epoch.
    assert (r2.member_epoch, r2.assignment) == (2, {})
    assert h.written[-1] == [
        sub("m2", ["foo"]),
        epoch(2),
        target("m1", {"foo": [0, 1]}),
        target("m2", {"foo": [2, 3]}),
        tepoch(2),
        current("m2", 2, 0, R, {}),
    ]
    assert h.cgroup().state is ConsumerGroupState.RECONCILING
    # m1 is told to give up 2 and 3, and stays at epoch 1 until it has.
    r1 = h.cg("m1", 1, owned=owned({"foo": [0, 1, 2, 3]}))
    assert (r1.member_epoch, r1.assignment) == (1, {FOO: frozenset({0, 1})})
    assert h.written[-1] == [current("m1", 1, 1, U, {"foo": [0, 1]}, {"foo": [2, 3]})]
    assert h.core.timers.deadline(rebalance_key(GROUP, "m1")) == h.now + REBALANCE
    exclusive(h)
    # m2 asks again: 2 and 3 are still being revoked; it stays waiting (Kafka's builder
    # moves its previous epoch up, hence a record) and gets no assignment field.
    r2 = h.cg("m2", 2, owned=[])
    assert (r2.member_epoch, r2.assignment) == (2, None)
    assert h.written[-1] == [current("m2", 2, 2, R, {})]
    h.cg("m2", 2, owned=[])
    assert len(h.written) == 4  # nothing changed this time
    # m1 reports it let them go: it moves to epoch 2, its rebalance timer is cancelled.
    r1 = h.cg("m1", 1, owned=owned({"foo": [0, 1]}))
    assert (r1.member_epoch, r1.assignment) == (2, None)
    assert h.written[-1] == [current("m1", 2, 1, S, {"foo": [0, 1]})]
    assert rebalance_key(GROUP, "m1") not in h.core.timers
    # Now m2 gets them.
    r2 = h.cg("m2", 2, owned=[])
    assert (r2.member_epoch, r2.assignment) == (2, {FOO: frozenset({2, 3})})
    assert h.written[-1] == [current("m2", 2, 2, S, {"foo": [2, 3]})]
    exclusive(h)
    assert h.cgroup().state is ConsumerGroupState.STABLE
    check_replay(h)


def test_a_member_leaving_gives_its_partitions_to_the_others() -> None:
    h = make()
    two_members(h)
    r = h.cg("m2", -1)
    assert (r.error, r.member_id, r.member_epoch, r.assignment) == (E.none, "m2", -1, None)
    assert h.written[-1] == [*removed("m2"), epoch(3)]
    assert session_key(GROUP, "m2") not in h.core.timers
    r = h.cg("m1", 2)
    assert (r.member_epoch, r.assignment) == (3, {FOO: frozenset({0, 1, 2, 3})})
    assert h.written[-1] == [
        target("m1", {"foo": [0, 1, 2, 3]}),
        tepoch(3),
        current("m1", 3, 2, S, {"foo": [0, 1, 2, 3]}),
    ]
    # The last member leaving leaves an Empty group (its records stay).
    h.cg("m1", -1)
    assert h.written[-1] == [*removed("m1"), metadata({}), epoch(4)]
    assert h.cgroup().state is ConsumerGroupState.EMPTY
    check_replay(h)


def test_session_expiry_fences_the_member() -> None:
    h = make()
    two_members(h)
    h.advance(SESSION // 2)
    h.cg("m1", 2)
    h.advance(SESSION // 2 + 1)
    # m2 sent nothing for a session: fenced; m1 heartbeated and stays.
    assert h.written[-1] == [*removed("m2"), epoch(3)]
    assert set(h.cgroup().members) == {"m1"}
    r = h.cg("m2", 2)
    assert (r.error, r.message) == (E.unknown_member_id, "Member m2 is not a member of group g.")
    check_replay(h)


def test_rebalance_timeout_fences_a_member_that_keeps_its_partitions() -> None:
    h = make(consumer_session_timeout_ms=60_000)
    h.cg("m1", 0, names=["foo"], rebalance=300)
    h.cg("m2", 0, names=["foo"])
    h.cg("m1", 1, owned=owned({"foo": [0, 1, 2, 3]}))
    assert h.cgroup().members["m1"].state is U
    for _ in range(3):
        h.advance(100)
        h.cg("m1", 1, owned=owned({"foo": [0, 1, 2, 3]}))  # heartbeats, never revokes
    assert h.written[-1] == [*removed("m1"), epoch(3)]
    assert set(h.cgroup().members) == {"m2"}
    r = h.cg("m2", 2)
    assert r.assignment == {FOO: frozenset({0, 1, 2, 3})}
    check_replay(h)


def test_static_member_leaves_and_comes_back_without_a_rebalance() -> None:
    h = make(consumer_session_timeout_ms=60_000)
    h.cg("a1", 0, names=["foo"], instance="i1")
    h.cg("b1", 0, names=["foo"], instance="i2")
    h.cg("a1", 1, owned=owned({"foo": [0, 1, 2, 3]}))
    h.cg("a1", 1, owned=owned({"foo": [0, 1]}))
    h.cg("b1", 2, owned=[])
    assert h.cgroup().group_epoch == 2
    # i2 restarts: leaves with -2 (keeping its assignment) ...
    r = h.cg("b1", -2, instance="i2")
    assert (r.error, r.member_epoch) == (E.none, -2)
    assert h.written[-1] == [current("b1", -2, 2, S, {"foo": [2, 3]})]
    assert h.cgroup().members["b1"].member_epoch == -2
    # ... and a new process with the same instance id takes its place and partitions.
    r = h.cg("b2", 0, names=["foo"], instance="i2")
    assert (r.error, r.member_epoch, r.assignment) == (E.none, 2, {FOO: frozenset({2, 3})})
    assert h.written[-1] == [
        *removed("b1"),
        sub("b2", ["foo"], instance="i2"),
        target("b2", {"foo": [2, 3]}),
        current("b2", 0, 0, S, {"foo": [2, 3]}),
        current("b2", 2, 0, S, {"foo": [2, 3]}),
    ]
    assert h.cgroup().group_epoch == 2  # no rebalance
    assert h.cgroup().static_members == {"i1": "a1", "i2": "b2"}
    check_replay(h)


def test_static_instance_still_in_use_is_refused() -> None:
    h = make()
    h.cg("a1", 0, names=["foo"], instance="i1")
    r = h.cg("a2", 0, names=["foo"], instance="i1")
    assert r.error is E.unreleased_instance_id
    assert r.message == ("Static member a2 with instance id i1 cannot join the group because "
                         "the instance id is owned by a1 member.")
    r = h.cg("a2", 1, instance="i1")
    assert r.error is E.fenced_instance_id
    r = h.cg("zz", -2, instance="nope")
    assert (r.error, r.message) == (E.unknown_member_id, "Instance id nope is unknown.")


def test_fenced_member_epoch_and_rejoin_with_epoch_zero() -> None:
    h = make()
    two_members(h)
    r = h.cg("m1", 7)
    assert r.error is E.fenced_member_epoch
    assert r.message is not None and "greater member epoch (7)" in r.message
    r = h.cg("m1", 1)  # the previous epoch without owned partitions: fenced
    assert r.error is E.fenced_member_epoch
    # The previous epoch with a subset of its partitions: its response was lost.
    r = h.cg("m1", 1, owned=owned({"foo": [0]}))
    assert (r.error, r.member_epoch) == (E.none, 2)
    # A fenced client rejoins with epoch 0 and its member id: it gets its state back
    # (KIP-848; Kafka 4.0.0 fenced it again, KAFKA-19233).
    n = len(h.written)
    r = h.cg("m1", 0, names=["foo"])
    assert (r.error, r.member_epoch, r.assignment) == (E.none, 2, {FOO: frozenset({0, 1})})
    assert len(h.written) == n


def test_unknown_members_and_groups() -> None:
    h = make()
    r = h.cg("m1", 3)
    assert (r.error, r.message) == (E.group_id_not_found, "Consumer group g not found.")
    r = h.cg("m1", -1)
    assert (r.error, r.message) == (E.group_id_not_found, "Group g not found.")
    h.cg("m1", 0, names=["foo"])
    r = h.cg("zz", 1)
    assert (r.error, r.message) == (E.unknown_member_id, "Member zz is not a member of group g.")
    r = h.cg("zz", -1)
    assert r.error is E.unknown_member_id


def test_request_validation_as_kafka() -> None:
    h = make(consumer_max_size=1)
    cases = [
        (dict(member_id="", epoch=1), "MemberId can't be empty."),
        (dict(member_id="m", epoch=0, names=["foo"], instance=" "), "InstanceId can't be empty."),
        (dict(member_id="m", epoch=0, names=["foo"], rebalance=-1),
         "RebalanceTimeoutMs must be provided in first request."),
        (dict(member_id="m", epoch=0, names=["foo"], owned=owned({"foo": [1]})),
         "TopicPartitions must be empty when (re-)joining."),
        (dict(member_id="m", epoch=0), "Either SubscribedTopicNames or SubscribedTopicRegex "
                                       "must be non-null when (re-)joining."),
        (dict(member_id="m", epoch=-2), "InstanceId can't be null."),
        (dict(member_id="m", epoch=-3), "MemberEpoch is invalid."),
    ]
    for kw, message in cases:
        mid = kw.pop("member_id")
        ep = kw.pop("epoch")
        r = h.cg(mid, ep, **kw)  # type: ignore[arg-type]
        assert (r.error, r.message) == (E.invalid_request, message), kw
    r = h.cg("", 0, names=["foo"], group=" ")
    assert (r.error, r.message) == (E.invalid_request, "MemberId can't be empty.")
    r = h.cg("m", 0, names=["foo"], group=" ")
    assert (r.error, r.message) == (E.invalid_request, "GroupId can't be empty.")
    r = h.cg("m", 0, names=["foo"], assignor="sticky")
    assert (r.error, r.message) == (E.unsupported_assignor, "ServerAssignor sticky is not "
                                    "supported. Supported assignors: uniform, range.")
    r = h.cg("m", 0, regex="(unclosed")
    assert r.error is E.invalid_regular_expression
    assert r.message is not None and r.message.startswith(
        "SubscribedTopicRegex `(unclosed` is not a valid regular expression: ")
    assert h.cg("m1", 0, names=["foo"]).error is E.none
    r = h.cg("m2", 0, names=["foo"])
    assert (r.error, r.message) == (E.group_max_size_reached, "The consumer group has reached "
                                    "its maximum capacity of 1 members.")
    assert h.written and all(len(w) > 0 for w in h.written)
    # v0: the coordinator names the member.
    r = h.cg("", 0, names=["foo"], version=0, group="g0")
    assert r.error is E.none and r.member_id


def test_server_assignor_range_chosen_by_the_members() -> None:
    h = make()
    h.cg("m1", 0, names=["foo", "bar"], assignor="range")
    assert h.written[-1][0] == sub("m1", ["bar", "foo"], assignor="range")
    h.cg("m2", 0, names=["foo", "bar"], assignor="range")
    # range: contiguous ranges per topic, the same numbers of both topics to one member.
    g = h.cgroup()
    assert g.target_assignment["m1"] == {FOO: frozenset({0, 1}), topic_id("bar"): {0}}
    assert g.target_assignment["m2"] == {FOO: frozenset({2, 3}), topic_id("bar"): {1}}
    assert g.preferred_server_assignor() == "range"


def test_subscription_change_revokes_at_once() -> None:
    h = make()
    h.cg("m1", 0, names=["foo", "bar"])
    r = h.cg("m1", 1, names=["bar"], owned=owned({"foo": [0, 1, 2, 3], "bar": [0, 1]}))
    assert (r.member_epoch, r.assignment) == (1, {topic_id("bar"): frozenset({0, 1})})
    assert h.written[-1] == [
        sub("m1", ["bar"]),
        metadata({"bar": 2}),
        epoch(2),
        target("m1", {"bar": [0, 1]}),
        tepoch(2),
        current("m1", 1, 1, U, {"bar": [0, 1]}, {"foo": [0, 1, 2, 3]}),
    ]
    r = h.cg("m1", 1, owned=owned({"bar": [0, 1]}))
    assert h.written[-1] == [current("m1", 2, 1, S, {"bar": [0, 1]})]
    check_replay(h)


def test_reload_keeps_groups_members_epochs_and_timers() -> None:
    h = make()
    two_members(h)
    h.cg("m3", 0, names=["foo"])
    h.cg("m2", 2, owned=owned({"foo": [2, 3]}))  # m2 now revoking 3 (for m3)
    r = h.reload()
    g = r.cgroup()
    assert {m: (x.member_epoch, x.state) for m, x in g.members.items()} == {
        m: (x.member_epoch, x.state) for m, x in h.cgroup().members.items()}
    for mid in g.members:
        assert r.core.timers.deadline(session_key(GROUP, mid)) == r.now + SESSION
    revoking = [m for m, x in g.members.items() if x.state is U]
    assert revoking
    for mid in revoking:
        assert rebalance_key(GROUP, mid) in r.core.timers
    # Members continue with their epochs on the reloaded coordinator.
    rr = r.cg("m3", 3)
    assert rr.error is E.none and rr.member_epoch == 3
