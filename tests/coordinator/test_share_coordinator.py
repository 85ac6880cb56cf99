"""Share groups as a part of the group coordinator, through the real runtime over
in-memory logs on the manual clock: heartbeats written and replayed, the session timer
removing a member, reload from the log, one group namespace across the three kinds,
ShareGroupDescribe, ListGroups and DeleteGroups."""

from __future__ import annotations

from typing import Any

from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit
from kafkalite.coordinator.share.group import ShareHeartbeat, ShareHeartbeatResult
from kafkalite.protocol import share_group_records as sg
from kafkalite.protocol.errors import ErrorCode as E

from .harness import Harness, topic_id

SESSION = 45_000


def make(**kw: Any) -> Harness:
    return Harness.make(topics={"t": 4}, share_session_timeout_ms=SESSION,
                        share_heartbeat_interval_ms=5000, **kw)


def hb(h: Harness, member: str, epoch: int, names: tuple[str, ...] | None = ("t",),
       group: str = "sg") -> ShareHeartbeatResult:
    req = ShareHeartbeat(group, member, epoch, None, names, "client", "/127.0.0.1")
    res: ShareHeartbeatResult = h.runtime.groups.write(
        lambda g, now: g.share_group_heartbeat(now, req))
    return res


def assigned(res: ShareHeartbeatResult) -> set[tuple[str, int]]:
    assert res.assignment is not None
    return {("t", p) for tp in res.assignment for p in tp.partitions
            if tp.topic_id == topic_id("t")}


def test_two_members_split_the_partitions_and_the_records_are_kafkas() -> None:
    h = make()
    a = hb(h, "a", 0)
    assert (a.error, a.member_epoch, a.heartbeat_interval_ms) == (E.none, 1, 5000)
    assert assigned(a) == {("t", p) for p in range(4)}
    kinds = [type(k).__name__ for k, _v in h.written[-1]]
    assert kinds == ["ShareGroupMemberMetadataKey", "ShareGroupMetadataKey",
                     "ShareGroupTargetAssignmentMemberKey",
                     "ShareGroupTargetAssignmentMetadataKey",
                     "ShareGroupCurrentMemberAssignmentKey"]
    b = hb(h, "b", 0)
    assert b.member_epoch == 2
    a2 = hb(h, "a", 1, None)
    assert a2.member_epoch == 2
    # The simple assignor splits four partitions between two members.
    assert assigned(a2) | assigned(b) == {("t", p) for p in range(4)}
    assert len(assigned(a2)) == len(assigned(b)) == 2
    # A steady heartbeat writes nothing and carries no assignment.
    before = len(h.written)
    steady = hb(h, "a", 2, None)
    assert (steady.error, steady.member_epoch, steady.assignment) == (E.none, 2, None)
    assert len(h.written) == before


def test_session_timeout_removes_the_member_and_the_other_takes_its_partitions() -> None:
    h = make()
    hb(h, "a", 0)
    hb(h, "b", 0)
    hb(h, "a", 1, None)
    h.advance(SESSION - 1000)
    hb(h, "a", 2, None)  # a's session goes on; b's does not
    h.advance(1000)
    group = h.core.share_group("sg")
    assert group is not None and set(group.members) == {"a"}
    back = hb(h, "a", 2, None)
    assert back.member_epoch == 3 and assigned(back) == {("t", p) for p in range(4)}
    stale = hb(h, "b", 2, None)
    assert stale.error is E.unknown_member_id


def test_leave_and_fenced_epochs() -> None:
    h = make()
    hb(h, "a", 0)
    assert hb(h, "a", 7, None).error is E.fenced_member_epoch
    left = hb(h, "a", -1, None)
    assert (left.error, left.member_epoch) == (E.none, -1)
    group = h.core.share_group("sg")
    assert group is not None and not group.members
    h.advance(SESSION * 2)  # the cancelled session timer writes nothing
    assert hb(h, "a", -1, None).error is E.unknown_member_id
    assert hb(h, "", 0).error is E.invalid_request


def test_reload_restores_the_group_and_restarts_sessions() -> None:
    h = make()
    hb(h, "a", 0)
    hb(h, "b", 0)
    again = h.reload()
    group = again.core.share_group("sg")
    assert group is not None and set(group.members) == {"a", "b"}
    assert group.group_epoch == 2
    again.advance(SESSION - 1)
    assert hb(again, "b", 2, None).error is E.none
    again.advance(1)
    group = again.core.share_group("sg")
    assert group is not None and set(group.members) == {"b"}


def test_one_namespace_across_the_three_kinds() -> None:
    h = make()
    hb(h, "a", 0)
    join = h.join(group="sg")
    assert join.value.error is E.group_id_not_found
    cg = h.cg("m", 0, group="sg", names=["t"])
    assert cg.error is E.group_id_not_found
    # A classic group's id is not a share group's.
    h.join(group="classic")
    other = hb(h, "x", 0, group="classic")
    assert (other.error, other.error_message) == (
        E.group_id_not_found, "Group classic is not a share group.")
    described = {d.group_id: d for d in h.core.describe_share_groups(["sg", "classic", "no"])}
    assert described["classic"].error is E.group_id_not_found
    assert described["no"].message == "Group no not found."
    d = described["sg"].group
    assert d is not None and (d.state, d.group_epoch, d.assignor_name) == ("Stable", 1, "simple")
    assert [m.member_id for m in d.members] == ["a"]
    consumer = h.core.describe_consumer_groups(["sg"])[0]
    assert (consumer.error, consumer.message) == (E.group_id_not_found,
                                                  "Group sg is not a consumer group.")
    commit = h.run(h.core.commit_offsets(h.now, CommitRequest(
        "sg", "a", None, 1, topics=[("t", [PartitionCommit(0, 5)])])))
    assert commit == {("t", 0): E.group_id_not_found}
    listed = {g.group_id: g for g in h.core.list_groups()}
    assert (listed["sg"].protocol_type, listed["sg"].state, listed["sg"].group_type) == (
        "share", "Stable", "share")


def test_delete_only_an_empty_share_group() -> None:
    h = make()
    hb(h, "a", 0)
    assert h.runtime.groups.write(lambda g, now: g.delete_group(now, "sg")) is E.non_empty_group
    hb(h, "a", -1, None)
    assert h.runtime.groups.write(lambda g, now: g.delete_group(now, "sg")) is E.none
    assert h.core.share_group("sg") is None
    last = h.written[-1]
    assert last[-1] == (sg.ShareGroupMetadataKey("sg"), None)
    assert h.reload().core.share_group("sg") is None


def _initialized(h: Harness, gid: str = "sg") -> dict[str, set[int]]:
    group = h.core.share_group(gid)
    assert group is not None
    return {name: set(parts) for name, parts in group.initialized.values()}


def test_state_partition_metadata_follows_initialization_and_deletion() -> None:
    """Record 15 names the share-partitions whose state is initialized, once each; it
    reloads, and a deleted topic's or group's state leaves it."""
    h = make()
    h.create_topic("u", 2)
    hb(h, "a", 0, ("t", "u"))
    tid, uid = topic_id("t"), topic_id("u")

    def init(t: str, p: int) -> None:
        h.runtime.groups.write(lambda g, now: g.share.partition_initialized(
            now, "sg", topic_id(t), t, p))

    init("t", 1)
    init("t", 0)
    init("u", 1)
    before = len(h.written)
    init("t", 0)
    assert len(h.written) == before  # already initialized: nothing written
    assert _initialized(h) == {"t": {0, 1}, "u": {1}}
    (key, value), = h.written[-1]
    assert key == sg.ShareGroupStatePartitionMetadataKey("sg")
    assert value == sg.ShareGroupStatePartitionMetadataValue(
        initializing_topics=(),
        initialized_topics=(sg.TopicPartitionsInfo(tid, "t", (0, 1)),
                            sg.TopicPartitionsInfo(uid, "u", (1,))),
        deleting_topics=())
    # A group that is not here writes nothing.
    h.runtime.groups.write(lambda g, now: g.share.partition_initialized(
        now, "nobody", tid, "t", 0))
    assert len(h.written) == before

    again = h.reload()
    assert _initialized(again) == {"t": {0, 1}, "u": {1}}
    # Topic deletion (every group), then DeleteShareGroupOffsets of a topic (one group).
    again.runtime.groups.write(lambda g, now: g.share.state_deleted(now, None, {uid}))
    assert _initialized(again) == {"t": {0, 1}}
    again.runtime.groups.write(lambda g, now: g.share.state_deleted(now, "sg", {tid}))
    assert _initialized(again) == {}
    assert again.written[-1] == [(sg.ShareGroupStatePartitionMetadataKey("sg"),
                                  sg.ShareGroupStatePartitionMetadataValue((), (), ()))]
    assert _initialized(again.reload()) == {}


def test_state_partition_metadata_names_initializing_and_deleting_in_between() -> None:
    """As Kafka's coordinator: a share-partition is initializing until its first state is
    written, then initialized; a topic whose state is being deleted is deleting, then
    gone. Each step reloads."""
    h = make()
    hb(h, "a", 0, ("t",))
    tid = topic_id("t")
    write = h.runtime.groups.write
    value = sg.ShareGroupStatePartitionMetadataValue
    info = sg.TopicPartitionsInfo

    write(lambda g, now: g.share.partition_initializing(now, "sg", tid, "t", 0))
    assert h.written[-1][0][1] == value((info(tid, "t", (0,)),), (), ())
    before = len(h.written)
    write(lambda g, now: g.share.partition_initializing(now, "sg", tid, "t", 0))
    assert len(h.written) == before  # initializing already
    write(lambda g, now: g.share.partition_initialized(now, "sg", tid, "t", 0))
    assert h.written[-1][0][1] == value((), (info(tid, "t", (0,)),), ())
    write(lambda g, now: g.share.partition_initializing(now, "sg", tid, "t", 1))
    assert h.written[-1][0][1] == value((info(tid, "t", (1,)),), (info(tid, "t", (0,)),), ())
    again = h.reload()
    group = again.core.share_group("sg")
    assert group is not None and group.initializing == {tid: ("t", frozenset({1}))}
    again.runtime.groups.write(lambda g, now: g.share.state_deleting(now, None, {tid}))
    assert again.written[-1][0][1] == value((), (), (sg.TopicIdAndName(tid, "t"),))
    group = again.reload().core.share_group("sg")
    assert group is not None and group.deleting == {tid: "t"} and group.initialized == {}
    again.runtime.groups.write(lambda g, now: g.share.state_deleted(now, None, {tid}))
    assert again.written[-1][0][1] == value((), (), ())
