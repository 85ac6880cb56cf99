"""Offsets and administration of consumer groups: OffsetCommit/OffsetFetch with member
epochs, OffsetDelete, DeleteGroups, retention, ListGroups and ConsumerGroupDescribe."""

from __future__ import annotations

from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit
from kafkalite.coordinator.results import DescribedTopicPartitions
from kafkalite.protocol import consumer_group_records as cg
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ErrorCode as E

from .harness import GROUP, Harness, check_replay, topic_id

RETENTION = 10_000


def make() -> Harness:
    h = Harness.make(topics={"foo": 4, "bar": 2}, consumer_session_timeout_ms=60_000,
                     offsets_retention_ms=RETENTION)
    h.cg("m1", 0, names=["foo"])
    return h


def commit(h: Harness, member: str, epoch: int, topic: str = "foo", partition: int = 0,
           offset: int = 10, version: int = 9, group: str = GROUP) -> object:
    return h.run(h.core.commit_offsets(h.now, CommitRequest(
        group, member, None, epoch, topics=[(topic, [PartitionCommit(partition, offset)])],
        api_version=version)))


def test_offset_commit_checks_the_member_epoch() -> None:
    h = make()
    assert commit(h, "m1", 1) == {("foo", 0): E.none}
    assert h.written[-1] == [(co.OffsetCommitKey(GROUP, "foo", 0),
                              co.OffsetCommitValue(10, "", h.now, -1, -1))]
    assert commit(h, "m1", 0) == {("foo", 0): E.stale_member_epoch}
    assert commit(h, "m1", 0, version=8) == {("foo", 0): E.unsupported_version}
    assert commit(h, "m1", 1, version=8) == {("foo", 0): E.unsupported_version}
    assert commit(h, "zz", 1) == {("foo", 0): E.unknown_member_id}
    assert commit(h, "", -1) == {("foo", 0): E.unknown_member_id}  # the group has members
    h.cg("m1", -1)
    assert commit(h, "", -1, offset=12) == {("foo", 0): E.none}  # empty: admin commits
    check_replay(h)


def test_offset_fetch_checks_the_member_epoch() -> None:
    h = make()
    commit(h, "m1", 1)

    def fetch(member: str | None, epoch: int) -> object:
        return h.run(h.core.fetch_offsets(GROUP, [("foo", [0])], False, member, epoch))

    assert fetch(None, -1) == (E.none, [("foo", [(0, 10, -1, "", E.none)])])
    assert fetch("m1", 1) == (E.none, [("foo", [(0, 10, -1, "", E.none)])])
    assert fetch("m1", 0) == (E.stale_member_epoch, [])
    assert fetch("zz", 1) == (E.unknown_member_id, [])


def test_offset_delete_refuses_subscribed_topics() -> None:
    h = make()
    commit(h, "m1", 1)
    commit(h, "m1", 1, topic="bar")
    out = h.run(h.core.delete_offsets(h.now, GROUP, [("foo", [0]), ("bar", [0])]))
    assert out == (E.none, [("foo", [(0, E.group_subscribed_to_topic)]),
                            ("bar", [(0, E.none)])])
    assert h.written[-1] == [(co.OffsetCommitKey(GROUP, "bar", 0), None)]


def test_delete_group_only_when_empty() -> None:
    h = make()
    commit(h, "m1", 1)
    assert h.run(h.core.delete_group(h.now, GROUP)) is E.non_empty_group
    h.cg("m1", -1)
    assert h.run(h.core.delete_group(h.now, GROUP)) is E.none
    assert h.written[-1] == [
        (co.OffsetCommitKey(GROUP, "foo", 0), None),
        (cg.ConsumerGroupTargetAssignmentMetadataKey(GROUP), None),
        (cg.ConsumerGroupPartitionMetadataKey(GROUP), None),
        (cg.ConsumerGroupMetadataKey(GROUP), None),
    ]
    assert h.cgroup() is None and h.core.offsets.offsets(GROUP) == {}
    check_replay(h)


def test_retention_expires_unsubscribed_offsets_from_their_commit() -> None:
    h = make()
    commit(h, "m1", 1, topic="foo")
    commit(h, "m1", 1, topic="bar")
    h.now += RETENTION
    h.run(h.core.expire_offsets(h.now))
    # foo is subscribed: kept; bar is not: expired.
    assert h.written[-1] == [(co.OffsetCommitKey(GROUP, "bar", 0), None)]
    h.cg("m1", -1)
    h.now += RETENTION
    h.run(h.core.expire_offsets(h.now))
    # Empty and left without offsets: the group goes too.
    assert h.written[-1] == [
        (co.OffsetCommitKey(GROUP, "foo", 0), None),
        (cg.ConsumerGroupTargetAssignmentMetadataKey(GROUP), None),
        (cg.ConsumerGroupPartitionMetadataKey(GROUP), None),
        (cg.ConsumerGroupMetadataKey(GROUP), None),
    ]
    assert h.cgroup() is None
    check_replay(h)


def test_list_describe_groups_and_consumer_group_describe() -> None:
    h = make()
    h.join(group="classic")
    listed = {g.group_id: (g.protocol_type, g.state, g.group_type) for g in h.core.list_groups()}
    assert listed[GROUP] == ("consumer", "Stable", "consumer")
    assert listed["classic"][2] == "classic"
    # DescribeGroups (below v6) describes a consumer group as Dead, as an unknown one.
    d = h.core.describe_group(GROUP)
    assert (d.error, d.state, d.members) == (E.none, "Dead", ())
    [described, missing, classic] = h.core.describe_consumer_groups([GROUP, "nope", "classic"])
    assert (missing.error, missing.message) == (E.group_id_not_found, "Group nope not found.")
    assert (classic.error, classic.message) == (E.group_id_not_found,
                                                "Group classic is not a consumer group.")
    assert (described.state, described.group_epoch, described.assignment_epoch,
            described.assignor) == ("Stable", 1, 1, "uniform")
    [m] = described.members
    foo = (DescribedTopicPartitions(topic_id("foo"), "foo", (0, 1, 2, 3)),)
    assert (m.member_id, m.member_epoch, m.client_id, m.client_host, m.subscribed_topic_names,
            m.assignment, m.target_assignment, m.member_type) == (
        "m1", 1, "c", "/127.0.0.1", ("foo",), foo, foo, 1)
