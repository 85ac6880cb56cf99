"""One group namespace for both protocols (Kafka 4.0): empty groups replaced by the other
type, classic-protocol members inside a consumer group, and the online upgrade and
downgrade of ``group.consumer.migration.policy``; exact records of each conversion."""

from __future__ import annotations

from kafkalite.coordinator.classic.states import GroupState
from kafkalite.coordinator.consumer.group import ConsumerGroupState, MemberState
from kafkalite.coordinator.partitions import member_join_key, member_sync_key, session_key
from kafkalite.protocol import consumer_group_records as cg
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ErrorCode as E

from .consumer_helpers import current, epoch, metadata, removed, sub, target
from .consumer_helpers import target_epoch as tepoch
from .harness import GROUP, Harness, check_replay, topic_id

S, R = MemberState.STABLE, MemberState.UNRELEASED_PARTITIONS
SUB = co.encode_subscription(co.ConsumerProtocolSubscription(("foo",), None))
PROTOCOLS = [("range", SUB)]


def make(**kw: object) -> Harness:
    cfg: dict[str, object] = {"consumer_session_timeout_ms": 60_000, **kw}
    return Harness.make(topics={"foo": 4}, **cfg)  # type: ignore[arg-type]


def assignment(*parts: int) -> bytes:
    return co.encode_assignment(co.ConsumerProtocolAssignment(
        (co.TopicPartitions("foo", parts),) if parts else ()))


def classic_meta(session: int = 1000) -> cg.ClassicMemberMetadata:
    return cg.ClassicMemberMetadata(session, (cg.ClassicProtocol("range", SUB),))


def stable_classic_group(h: Harness) -> list[str]:
    b1, b2 = h.join(protocols=PROTOCOLS), h.join(protocols=PROTOCOLS)
    h.settle([b1, b2])
    ids = [b1.value.member_id, b2.value.member_id]
    g = h.group()
    plan = {ids[0]: assignment(0, 1), ids[1]: assignment(2, 3)}
    for m in ids:
        h.sync(m, g.generation, plan if m == g.leader_id else None)
    assert g.state is GroupState.STABLE
    return ids


def test_an_empty_classic_group_gives_way_to_a_consumer_group() -> None:
    h = make()
    b = h.join(protocols=PROTOCOLS)
    h.settle([b])
    h.leave((b.value.member_id, None))
    assert h.group().state is GroupState.EMPTY
    h.cg("m1", 0, names=["foo"])
    assert h.written[-1][0] == (co.GroupMetadataKey(GROUP), None)
    assert h.written[-1][1] == sub("m1", ["foo"])
    assert h.group() is None and h.cgroup() is not None
    check_replay(h)


def test_an_empty_consumer_group_gives_way_to_a_classic_group() -> None:
    h = make()
    h.cg("m1", 0, names=["foo"])
    h.cg("m1", -1)
    n = len(h.written)
    b = h.join(protocols=PROTOCOLS)
    h.settle([b])
    assert b.value.error is E.none
    assert h.written[n] == [
        (cg.ConsumerGroupTargetAssignmentMetadataKey(GROUP), None),
        (cg.ConsumerGroupPartitionMetadataKey(GROUP), None),
        (cg.ConsumerGroupMetadataKey(GROUP), None),
    ]
    assert h.cgroup() is None and h.group() is not None
    check_replay(h)


def test_consumer_heartbeat_to_a_classic_group_when_upgrades_are_off() -> None:
    h = make(migration_policy="disabled")
    stable_classic_group(h)
    r = h.cg("m1", 0, names=["foo"])
    assert (r.error, r.message) == (E.group_id_not_found, "Group g is not a consumer group.")
    r = h.cg("m1", 3)
    assert r.error is E.group_id_not_found


def test_upgrade_of_a_stable_classic_group() -> None:
    h = make()
    a, b = stable_classic_group(h)
    gen = h.group().generation
    n = len(h.written)
    r = h.cg("m1", 0, names=["foo"])
    assert (r.error, r.member_epoch, r.assignment) == (E.none, gen + 1, {})
    # The classic group's record goes; the members come over at its generation with
    # their assignments; then the consumer member joins and a new target is computed.
    assert h.written[n] == [
        (co.GroupMetadataKey(GROUP), None),
        sub(a, ["foo"], rebalance=5000, classic=classic_meta()),
        sub(b, ["foo"], rebalance=5000, classic=classic_meta()),
        epoch(gen),
        target(a, {"foo": [0, 1]}),
        target(b, {"foo": [2, 3]}),
        tepoch(gen),
        current(a, gen, gen, S, {"foo": [0, 1]}),
        current(b, gen, gen, S, {"foo": [2, 3]}),
        sub("m1", ["foo"]),
        metadata({"foo": 4}),
        epoch(gen + 1),
        target(b, {"foo": [2]}),
        target("m1", {"foo": [3]}),
        tepoch(gen + 1),
        current("m1", gen + 1, 0, R, {}),
    ]
    assert h.group() is None
    g = h.cgroup()
    assert g.state is ConsumerGroupState.RECONCILING
    assert h.core.timers.deadline(session_key(GROUP, a)) == h.now + 1000
    # The classic members learn of the new epoch through their heartbeats.
    assert h.heartbeat(a, gen) is E.rebalance_in_progress
    assert member_join_key(GROUP, a) in h.core.timers
    check_replay(h)


def test_classic_members_in_a_consumer_group() -> None:
    h = make()
    h.cg("m1", 0, names=["foo"])
    # JoinGroup v4+: first a member id.
    first = h.join(protocols=PROTOCOLS, require_known=True)
    assert first.value.error is E.member_id_required
    mid = first.value.member_id
    j = h.join(mid, protocols=PROTOCOLS, session=3000)
    res = j.value
    assert (res.error, res.member_id, res.generation, res.protocol_type, res.protocol_name,
            res.leader, res.members) == (E.none, mid, 2, "consumer", "range", "", [])
    assert h.written[-1] == [
        sub(mid, ["foo"], classic=classic_meta(3000)),
        epoch(2),
        target(mid, {"foo": [2, 3]}),
        target("m1", {"foo": [0, 1]}),
        tepoch(2),
        current(mid, 2, 0, R, {}),
    ]
    assert member_sync_key(GROUP, mid) in h.core.timers
    # Its partitions are still m1's: SyncGroup hands out nothing yet.
    s = h.sync(mid, 2, protocol_type="consumer", protocol_name="range")
    assert s.value.error is E.none
    assert co.decode_assignment(s.value.assignment).assigned_partitions == ()
    assert member_sync_key(GROUP, mid) not in h.core.timers
    assert h.heartbeat(mid, 2) is E.none  # still waiting on m1
    assert h.heartbeat(mid, 1) is E.illegal_generation
    # m1 gives 2 and 3 up: the classic member is told to rejoin to collect them.
    h.cg("m1", 1, owned=[(topic_id("foo"), [0, 1, 2, 3])])
    h.cg("m1", 1, owned=[(topic_id("foo"), [0, 1])])
    assert h.heartbeat(mid, 2) is E.rebalance_in_progress
    j = h.join(mid, protocols=PROTOCOLS, session=3000)
    assert (j.value.error, j.value.generation) == (E.none, 2)
    s = h.sync(mid, 2)
    assert co.decode_assignment(s.value.assignment).assigned_partitions == (
        co.TopicPartitions("foo", (2, 3)),)
    assert h.heartbeat(mid, 2) is E.none
    # A consumer-protocol member is not a classic member.
    assert h.heartbeat("m1", 2) is E.unknown_member_id
    # LeaveGroup removes it like a consumer member's leave.
    res = h.leave((mid, None))
    assert res.members == [(mid, None, E.none)]
    assert h.written[-1] == [*removed(mid), epoch(3)]
    check_replay(h)


def test_downgrade_when_the_last_consumer_member_leaves() -> None:
    h = make()
    a, b = stable_classic_group(h)
    h.cg("m1", 0, names=["foo"])
    g = h.cgroup()
    group_epoch = g.group_epoch
    members = sorted(g.members)
    r = h.cg("m1", -1)
    assert (r.error, r.member_epoch) == (E.none, -1)
    tombstones = [
        *((cg.ConsumerGroupCurrentMemberAssignmentKey(GROUP, m), None) for m in members),
        *((cg.ConsumerGroupTargetAssignmentMemberKey(GROUP, m), None) for m in members),
        (cg.ConsumerGroupTargetAssignmentMetadataKey(GROUP), None),
        *((cg.ConsumerGroupMemberMetadataKey(GROUP, m), None) for m in members),
        (cg.ConsumerGroupPartitionMetadataKey(GROUP), None),
        (cg.ConsumerGroupMetadataKey(GROUP), None),
    ]
    assert h.written[-1][:-1] == tombstones
    key, value = h.written[-1][-1]
    assert key == co.GroupMetadataKey(GROUP)
    assert isinstance(value, co.GroupMetadataValue)
    assert (value.protocol_type, value.generation, value.protocol, value.leader) == (
        "consumer", group_epoch, "range", a)
    assert [m.member_id for m in value.members] == [a, b]
    # Each classic member's assignment is its target: a keeps 0-1, b keeps 2-3 (the
    # partition meant for m1 goes nowhere until the classic rebalance).
    assert co.decode_assignment(value.members[0].assignment).assigned_partitions == (
        co.TopicPartitions("foo", (0, 1)),)
    assert co.decode_assignment(value.members[1].assignment).assigned_partitions == (
        co.TopicPartitions("foo", (2,)),)
    assert h.cgroup() is None
    classic = h.group()
    assert classic.state is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(a, group_epoch) is E.rebalance_in_progress
    check_replay(h)


def test_no_downgrade_when_the_policy_forbids_it() -> None:
    h = make(migration_policy="upgrade")
    stable_classic_group(h)
    h.cg("m1", 0, names=["foo"])
    h.cg("m1", -1)
    assert h.group() is None and len(h.cgroup().members) == 2
