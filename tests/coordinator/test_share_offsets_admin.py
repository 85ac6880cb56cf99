"""The share-group offsets APIs' decisions (coordinator.share.offsets_admin), as Kafka's
GroupCoordinatorService and GroupMetadataManager make them."""

from __future__ import annotations

import uuid

from kafkalite.coordinator.share import offsets_admin as oa
from kafkalite.coordinator.share.group import ShareGroup, ShareMember
from kafkalite.coordinator.share.state_store import ShareState
from kafkalite.protocol import share_state_records as ss
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import ZERO_UUID

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
BY_NAME = {"a": oa.TopicMeta(T1, 2), "b": oa.TopicMeta(T2, 1)}
NAMES = {T1: "a", T2: "b"}


def state(start: int, *batches: tuple[int, int, int]) -> ShareState:
    return ShareState(0, 0, 3, start, 0, 0, tuple(
        ss.StateBatch(f, last, st, 1) for f, last, st in batches))


def hwm(_t: uuid.UUID, _p: int) -> int:
    return 10


def test_lag_counts_records_not_yet_acknowledged_or_archived() -> None:
    # 4..9 in flight: 5-6 acknowledged, 8 archived, 7 available -> 6 - 3 = 3.
    s = state(4, (5, 6, 2), (7, 7, 0), (8, 8, 4))
    assert oa.lag(s, 10) == 3
    assert oa.lag(state(-1), 10) == oa.NO_LAG
    assert oa.lag(state(10), 10) == 0


def test_describe_named_topics_unknown_topic_and_missing_state_answer_minus_one() -> None:
    states = {("g", T1, 0): state(4)}
    got = oa.describe("g", [("a", (0, 1)), ("nope", (0,))], states, BY_NAME, NAMES, hwm)
    assert [(t.name, t.topic_id) for t in got] == [("a", T1), ("nope", ZERO_UUID)]
    assert [(p.partition, p.start_offset, p.leader_epoch, p.lag, p.error)
            for p in got[0].partitions] == [(0, 4, 3, 6, NO_ERROR), (1, -1, 0, -1, NO_ERROR)]
    assert [(p.partition, p.start_offset) for p in got[1].partitions] == [(0, -1)]


def test_describe_all_topics_lists_the_share_partitions_with_state() -> None:
    states = {("g", T2, 0): state(1), ("g", T1, 1): state(2), ("other", T1, 0): state(0),
              ("g", uuid.UUID(int=9), 0): state(0)}  # a deleted topic's state: left out
    got = oa.describe("g", None, states, BY_NAME, NAMES, hwm)
    # Every partition of a topic with state: the others at -1, as Kafka lists them.
    assert [(t.name, [(p.partition, p.start_offset) for p in t.partitions]) for t in got] == [
        ("a", [(0, -1), (1, 2)]), ("b", [(0, 1)])]


def test_alter_needs_an_empty_share_group() -> None:
    assert oa.alter("", None, None, [], BY_NAME).error is ErrorCode.invalid_group_id
    other = oa.alter("g", "consumer", None, [], BY_NAME)
    assert (other.error, other.message) == (ErrorCode.group_id_not_found,
                                            "Group g is not a share group.")
    busy = ShareGroup("g", members={"m": ShareMember("m")})
    assert oa.alter("g", "share", busy, [], BY_NAME).error is ErrorCode.non_empty_group


def test_alter_resets_existing_partitions_at_the_group_epoch() -> None:
    group = ShareGroup("g", group_epoch=7)
    change = oa.alter("g", "share", group, [("a", [(0, 5), (2, 9)]), ("zz", [(0, 1)])],
                      BY_NAME)
    assert change.error is NO_ERROR and change.state_epoch == 7
    assert change.resets == ((("g", T1, 0), 5),)
    a, zz = change.topics
    assert [(p.partition, p.error) for p in a.partitions] == [
        (0, NO_ERROR), (2, ErrorCode.unknown_topic_or_partition)]
    assert zz.topic_id is None and zz.partitions[0].error is ErrorCode.unknown_topic_or_partition


def test_delete_removes_every_partition_of_a_topic_with_state() -> None:
    group = ShareGroup("g")
    states = {("g", T1, 0): state(1), ("g", T1, 1): state(1), ("h", T1, 0): state(1)}
    change = oa.delete("g", "share", group, ["a", "b", "zz"], states, BY_NAME)
    assert change.error is NO_ERROR
    assert set(change.deletes) == {("g", T1, 0), ("g", T1, 1)}
    assert [(t.name, t.topic_id, t.error, t.message) for t in change.topics] == [
        ("a", T1, NO_ERROR, None),
        ("b", None, ErrorCode.unknown_topic_or_partition, oa.NO_OFFSETS_MESSAGE),
        ("zz", None, ErrorCode.unknown_topic_or_partition, oa.UNKNOWN_TOPIC_MESSAGE)]
    busy = ShareGroup("g", members={"m": ShareMember("m")})
    assert oa.delete("g", "share", busy, ["a"], states, BY_NAME).error \
        is ErrorCode.non_empty_group


def test_alter_of_a_group_id_naming_no_group_makes_an_empty_share_group() -> None:
    change = oa.alter("new", None, None, [("a", [(1, 4)])], BY_NAME)
    assert change.error is NO_ERROR and change.state_epoch == 1
    assert change.resets == ((("new", T1, 1), 4),)
    assert [type(k).__name__ for k, _v in change.new_group] == [
        "ShareGroupMetadataKey", "ShareGroupTargetAssignmentMetadataKey"]
    # Nothing to reset (no partition of the topics exists): no group is made.
    assert oa.alter("new", None, None, [("a", [(5, 4)])], BY_NAME).new_group == ()
