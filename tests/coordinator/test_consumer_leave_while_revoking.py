"""A KIP-848 member whose application subscribes, unsubscribes and subscribes again within
a millisecond while the coordinator revokes a topic it dropped (issue: librdkafka
consumers that change their subscription quickly). The exact answers and records of each
step, as Kafka 4.4 gives them (tests/differential: consumer-group-resubscribe-while-revoking).
"""

from __future__ import annotations

from kafkalite.coordinator.consumer.group import ConsumerGroupState, MemberState
from kafkalite.coordinator.partitions import rebalance_key, session_key
from kafkalite.protocol.errors import ErrorCode as E

from .consumer_helpers import current, epoch, held, metadata, owned, removed, sub, target
from .consumer_helpers import target_epoch as tepoch
from .harness import GROUP, Harness, topic_id

S, U = MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS
A, B, C, D = (topic_id(t) for t in "abcd")
ALL = frozenset(range(4))


def make() -> Harness:
    return Harness.make(topics={t: 4 for t in "abcd"}, consumer_session_timeout_ms=1000,
                        consumer_heartbeat_interval_ms=100)


def stable_on_a_and_b(h: Harness) -> None:
    r = h.cg("m1", 0, names=["a", "b"])
    assert (r.member_epoch, r.assignment) == (1, {A: ALL, B: ALL})
    r = h.cg("m1", 1, owned=owned({"a": ALL, "b": ALL}))
    assert (r.error, r.member_epoch, r.assignment) == (E.none, 1, None)


def test_new_subscription_revokes_the_dropped_topic_at_the_same_epoch() -> None:
    """librdkafka sends a new subscription without the partitions it owns: the dropped
    topic is revoked in that answer, the member stays at its epoch until it has let go,
    and the partitions of the added topic wait for the revocation."""
    h = make()
    stable_on_a_and_b(h)
    h.now += 1
    r = h.cg("m1", 1, names=["b", "c"])
    assert (r.error, r.member_epoch, r.assignment) == (E.none, 1, {B: ALL})
    assert h.written[-1] == [
        sub("m1", ["b", "c"]),
        metadata({"b": 4, "c": 4}),
        epoch(2),
        target("m1", {"b": ALL, "c": ALL}),
        tepoch(2),
        current("m1", 1, 1, U, {"b": ALL}, pending={"a": ALL}),
    ]
    assert h.core.timers.deadline(rebalance_key(GROUP, "m1")) is not None
    assert held(h) == {"m1": {(t, p) for t in "ab" for p in ALL}}


def test_leave_while_revoking_then_the_same_member_id_joins_again_at_once() -> None:
    """The interleaving the consumer produced: subscription change (revocation pending),
    unsubscribe (a leave at epoch -1, the revocation never acknowledged), subscribe again
    in the same millisecond (a join at epoch 0 with the member id it had). The leave
    frees everything the member held, revoking or not; the join is a new member under the
    old id, with the whole of its new subscription at once."""
    h = make()
    stable_on_a_and_b(h)
    h.now += 1
    assert h.cg("m1", 1, names=["b", "c"]).assignment == {B: ALL}

    left = h.cg("m1", -1)
    assert (left.error, left.member_id, left.member_epoch, left.assignment) == (
        E.none, "m1", -1, None)
    assert h.written[-1] == [*removed("m1"), metadata({}), epoch(3)]
    assert h.cgroup().members == {}
    assert h.cgroup().state is ConsumerGroupState.EMPTY
    for key in (session_key(GROUP, "m1"), rebalance_key(GROUP, "m1")):
        assert h.core.timers.deadline(key) is None

    back = h.cg("m1", 0, names=["c", "d"])
    assert (back.error, back.member_id, back.member_epoch) == (E.none, "m1", 4)
    assert back.assignment == {C: ALL, D: ALL}
    assert h.written[-1] == [
        sub("m1", ["c", "d"]),
        metadata({"c": 4, "d": 4}),
        epoch(4),
        target("m1", {"c": ALL, "d": ALL}),
        tepoch(4),
        current("m1", 4, 0, S, {"c": ALL, "d": ALL}),
    ]
    assert h.cg("m1", 4, owned=owned({"c": ALL, "d": ALL})).assignment is None
    assert held(h) == {"m1": {(t, p) for t in "cd" for p in ALL}}
    # What was written gives back the same group.
    again = h.reload()
    assert held(again) == held(h)
    assert again.cgroup().group_epoch == 4


def test_a_stale_heartbeat_after_the_leave_is_unknown_and_a_second_leave_too() -> None:
    """A heartbeat of the old epoch still in flight when the leave was answered (librdkafka
    sends the leave without waiting for it) finds no member: UNKNOWN_MEMBER_ID, nothing
    written; so does a second leave."""
    h = make()
    stable_on_a_and_b(h)
    h.cg("m1", -1)
    n = len(h.written)
    assert h.cg("m1", 1, names=["b", "c"]).error is E.unknown_member_id
    assert h.cg("m1", -1).error is E.unknown_member_id
    assert len(h.written) == n
