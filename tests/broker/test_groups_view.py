"""``kafkalite groups`` pieces without a broker: a ConsumerGroupDescribe answer (KIP-848
consumer groups) read into the group view, and the tables printed for it."""

from __future__ import annotations

from kafkalite.broker.cli.group_view import MemberRow, PartitionLag, consumer_group_view
from kafkalite.broker.cli.groups import as_json, assignment_text, render, table
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import nested
from kafkalite.protocol.errors import ErrorCode

CONSUMER_GROUP_DESCRIBE = 69


def described_group() -> object:
    resp_t = codecs.codec(CONSUMER_GROUP_DESCRIBE, 1).response_type
    group_t, member_t = nested(resp_t, "DescribedGroup"), nested(resp_t, "Member")
    assignment_t, tps_t = nested(resp_t, "Assignment"), nested(resp_t, "TopicPartitions")

    def assignment(parts: tuple[int, ...]) -> object:
        return assignment_t(topic_partitions=(tps_t(topic_id=None, topic_name="t",
                                                    partitions=parts),))

    return group_t(
        error_code=ErrorCode.none, group_id="cg", group_state="Reconciling", group_epoch=7,
        assignment_epoch=7, assignor_name="uniform", members=(
            member_t(member_id="m1", instance_id="i1", member_epoch=7, client_id="c1",
                     client_host="/127.0.0.1", subscribed_topic_names=("t",),
                     assignment=assignment((2, 0)), target_assignment=assignment((0,))),
            member_t(member_id="m2", member_epoch=6, client_id="c2", client_host="/127.0.0.1",
                     subscribed_topic_regex="t.*", assignment=assignment(()),
                     target_assignment=assignment((1, 2)))))


def test_consumer_group_view_and_tables() -> None:
    view = consumer_group_view(described_group(), (1, "127.0.0.1", 9092))
    assert (view.group_type, view.state, view.assignor, view.group_epoch,
            view.assignment_epoch) == ("consumer", "Reconciling", "uniform", 7, 7)
    m1, m2 = view.members
    assert (m1.epoch, m1.instance_id, m1.assignment, m1.target, m1.subscription) == (
        7, "i1", {"t": [0, 2]}, {"t": [0]}, ["t"])
    assert (m2.epoch, m2.assignment, m2.target, m2.subscription) == (
        6, {"t": []}, {"t": [1, 2]}, ["t.*"])
    view.partitions = [PartitionLag("t", 0, 5, 9, m1), PartitionLag("t", 1, None, 3, None)]
    lines = render(view).splitlines()
    assert lines[1].split() == ["cg", "127.0.0.1:9092", "(1)", "Consumer", "uniform",
                                "Reconciling", "7", "7", "2"]
    assert lines[4].split() == ["m1", "i1", "/127.0.0.1", "c1", "7", "2", "t(0,2)", "t(0)"]
    assert lines[5].split() == ["m2", "-", "/127.0.0.1", "c2", "6", "0", "t()", "t(1,2)"]
    assert lines[8].split() == ["t", "0", "5", "9", "4", "m1", "/127.0.0.1", "c1"]
    assert lines[9].split() == ["t", "1", "-", "3", "-", "-", "-", "-"]
    doc = as_json(view)
    assert [(p["partition"], p["lag"], p["consumer_id"]) for p in doc["partitions"]] == [
        (0, 4, "m1"), (1, None, None)]


def test_helpers() -> None:
    assert assignment_text({"b": [1], "a": [0, 2]}) == "a(0,2),b(1)"
    assert assignment_text({}) == "-"
    assert table(["A", "BB"], [["xxx", "y"]]) == "A   BB\nxxx y"
    assert PartitionLag("t", 0, 12, 10, None).lag == 0  # a commit past the end: no lag
    assert PartitionLag("t", 0, 3, -1, MemberRow("m", None, "c", "h", {})).lag is None
