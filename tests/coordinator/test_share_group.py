"""Share group membership (coordinator/share/group.py): ShareGroupHeartbeat's records and
answers for joining, heartbeats, subscription changes and leaving, Kafka's errors, and
replay rebuilding the group from the records (written through the real codecs)."""

from __future__ import annotations

import uuid

from kafkalite.coordinator.share.group import (
    AssignableTopic,
    ShareGroup,
    ShareHeartbeat,
    heartbeat,
    leave,
    replay,
)
from kafkalite.protocol import share_group_records as sg
from kafkalite.protocol.consumer_group_records import TopicIdPartitions
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.schema_io import Reader

T, U = uuid.UUID(int=1), uuid.UUID(int=2)
TOPICS = {"t": AssignableTopic(T, 4), "u": AssignableTopic(U, 1)}
HB = 5000


class Coordinator:
    """Heartbeats applied as the coordinator applies them: records through the codecs,
    then replayed."""

    def __init__(self, max_size: int = 10) -> None:
        self.groups: dict[str, ShareGroup] = {}
        self.written: list[tuple[sg.ShareGroupKey, sg.ShareGroupValue | None]] = []
        self.max_size = max_size
        self.topics = dict(TOPICS)

    def apply(self, records: list[tuple[sg.ShareGroupKey, sg.ShareGroupValue | None]]) -> None:
        for key, value in records:
            # Through the bytes, as the log holds them.
            k = sg.decode_key_fields(key.record_type, _reader(sg.encode_key(key)))
            v = None if value is None else sg.decode_value(k, sg.encode_value(value))
            self.written.append((k, v))
            replay(self.groups, k, v)

    def hb(self, member: str, epoch: int, topics: tuple[str, ...] | None = None,
           group: str = "g") -> object:
        records, result = heartbeat(self.groups.get(group),
                                    ShareHeartbeat(group, member, epoch, None, topics, "cli",
                                                   "/127.0.0.1"),
                                    self.topics, HB, self.max_size)
        self.apply(records)
        return result


def _reader(data: bytes) -> Reader:
    r = Reader(data)
    r.i16()
    return r


def parts(result: object) -> set[tuple[uuid.UUID, int]]:
    a = result.assignment  # type: ignore[attr-defined]
    assert a is not None
    return {(tp.topic_id, p) for tp in a for p in tp.partitions}


def test_join_heartbeat_and_share_the_partitions() -> None:
    c = Coordinator()
    r1 = c.hb("a", 0, ("t",))
    assert (r1.error, r1.member_id, r1.member_epoch, r1.heartbeat_interval_ms) == (  # type: ignore[attr-defined]
        ErrorCode.none, "a", 1, HB)
    assert parts(r1) == {(T, p) for p in range(4)}
    assert [type(k).__name__ for k, _ in c.written] == [
        "ShareGroupMemberMetadataKey", "ShareGroupMetadataKey",
        "ShareGroupTargetAssignmentMemberKey", "ShareGroupTargetAssignmentMetadataKey",
        "ShareGroupCurrentMemberAssignmentKey"]
    g = c.groups["g"]
    assert (g.group_epoch, g.assignment_epoch, g.members["a"].member_epoch) == (1, 1, 1)
    # A steady heartbeat writes nothing and sends no assignment.
    c.written.clear()
    steady = c.hb("a", 1)
    assert (steady.member_epoch, steady.assignment, c.written) == (1, None, [])  # type: ignore[attr-defined]
    # A second member: epoch 2, the four partitions split two and two.
    r2 = c.hb("b", 0, ("t",))
    assert r2.member_epoch == 2 and len(parts(r2)) == 2  # type: ignore[attr-defined]
    ra = c.hb("a", 1)
    assert ra.member_epoch == 2 and parts(ra) == {(T, p) for p in range(4)} - parts(r2)  # type: ignore[attr-defined]
    # Five members on a one-partition topic all share it.
    for m in "vwxyz":
        assert c.hb(m, 0, ("u",), group="h").error == ErrorCode.none  # type: ignore[attr-defined]
    for m in "vwxyz":
        assert parts(c.hb(m, c.groups["h"].members[m].member_epoch, ("u",), group="h")) == {
            (U, 0)}


def test_leave_and_replay_from_the_records() -> None:
    c = Coordinator()
    c.hb("a", 0, ("t",))
    c.hb("b", 0, ("t",))
    c.hb("a", 1)
    left = c.hb("b", 2, None)
    assert left.error == ErrorCode.none  # type: ignore[attr-defined]
    r = c.hb("b", -1)
    assert (r.error, r.member_epoch) == (ErrorCode.none, -1)  # type: ignore[attr-defined]
    g = c.groups["g"]
    assert set(g.members) == {"a"} and "b" not in g.target and g.group_epoch == 3
    assert parts(c.hb("a", 2)) == {(T, p) for p in range(4)}
    # The records alone rebuild the same group.
    again: dict[str, ShareGroup] = {}
    for k, v in c.written:
        replay(again, k, v)
    assert again == c.groups
    # A session timeout removes a member the same way.
    c.apply(leave(c.groups["g"], "a", TOPICS))
    assert c.groups["g"].members == {} and c.groups["g"].group_epoch == 4


def test_errors() -> None:
    c = Coordinator(max_size=1)
    bad = ErrorCode.invalid_request
    assert (c.hb("a", 0, None).error, c.hb("a", 0, None).error_message) == (  # type: ignore[attr-defined]
        bad, "SubscribedTopicNames must be set in first request.")
    assert c.hb("", 0, ("t",)).error_message == "MemberId can't be empty."  # type: ignore[attr-defined]
    assert c.hb("a", 0, ("t",), group="").error_message == "GroupId can't be empty."  # type: ignore[attr-defined]
    assert c.hb("a", -2).error_message == "MemberEpoch is invalid."  # type: ignore[attr-defined]
    # No group yet: Kafka looks the group up before the member.
    assert c.hb("a", 1).error == ErrorCode.group_id_not_found  # type: ignore[attr-defined]
    assert c.hb("a", -1).error == ErrorCode.group_id_not_found  # type: ignore[attr-defined]
    c.hb("a", 0, ("t",))
    assert c.hb("z", 1).error == ErrorCode.unknown_member_id  # type: ignore[attr-defined]
    assert c.hb("z", -1).error == ErrorCode.unknown_member_id  # type: ignore[attr-defined]
    assert c.hb("b", 0, ("t",)).error == ErrorCode.group_max_size_reached  # type: ignore[attr-defined]
    fenced = c.hb("a", 7)
    assert fenced.error == ErrorCode.fenced_member_epoch  # type: ignore[attr-defined]
    assert "greater member epoch (7)" in fenced.error_message  # type: ignore[attr-defined]
    assert c.written[-1][0] == sg.ShareGroupCurrentMemberAssignmentKey("g", "a")


def test_subscription_change_moves_partitions() -> None:
    c = Coordinator()
    c.hb("a", 0, ("t",))
    r = c.hb("a", 1, ("t", "u"))
    assert r.member_epoch == 2  # type: ignore[attr-defined]
    assert parts(r) == {(T, p) for p in range(4)} | {(U, 0)}
    assert r.assignment == (TopicIdPartitions(T, (0, 1, 2, 3)), TopicIdPartitions(U, (0,)))  # type: ignore[attr-defined]


def test_new_partitions_move_the_group_epoch() -> None:
    c = Coordinator()
    c.hb("a", 0, ("t",))
    c.hb("b", 0, ("t",))
    assert c.hb("a", 1).member_epoch == 2  # type: ignore[attr-defined]
    c.topics["t"] = AssignableTopic(T, 6)
    r = c.hb("a", 2)
    assert r.member_epoch == 3 and len(parts(r)) == 3  # type: ignore[attr-defined]
    assert c.groups["g"].group_epoch == 3
    # A topic nobody subscribes to changes nothing.
    c.topics["other"] = AssignableTopic(uuid.UUID(int=3), 1)
    assert c.hb("b", 2).member_epoch == 3  # type: ignore[attr-defined]


def test_describe() -> None:
    from kafkalite.coordinator.share.group import describe

    c = Coordinator()
    c.hb("b", 0, ("t",))
    c.hb("a", 0, ("t",))
    d = describe(c.groups["g"])
    assert (d.group_id, d.state, d.group_epoch, d.assignment_epoch, d.assignor_name) == (
        "g", "Stable", 2, 2, "simple")
    assert [m.member_id for m in d.members] == ["a", "b"]
    assert d.members[0].client_host == "/127.0.0.1" and d.members[0].member_epoch == 2
    c.hb("a", -1)
    c.hb("b", -1)
    assert describe(c.groups["g"]).state == "Empty"
