"""``kafkalite offsets dump`` prints records in the offsets decoder's JSON shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.records import NewRecord, build_batch


def test_dump_shapes(tmp_path: Path) -> None:
    sub = co.encode_subscription(co.ConsumerProtocolSubscription(("t",), None, (), -1, None, 1))
    assignment = co.encode_assignment(co.ConsumerProtocolAssignment(
        (co.TopicPartitions("t", (0, 1)),), None, 0))
    group = co.GroupMetadataValue("consumer", 3, "range", "m1", 77, (
        co.MemberMetadata("m1", "cli", "/127.0.0.1", 300, 100, sub, assignment, None),))
    recs = [
        NewRecord(co.encode_key(co.GroupMetadataKey("g")), co.encode_value(group)),
        NewRecord(co.encode_key(co.OffsetCommitKey("g", "t", 1)),
                  co.encode_value(co.OffsetCommitValue(42, "meta", 1000, 5))),
        NewRecord(co.encode_key(co.OffsetCommitKey("g", "t", 0)),
                  co.encode_value(co.OffsetCommitValue(7, "", 1000, -1, 2000))),
        NewRecord(co.encode_key(co.OffsetCommitKey("g", "t", 1)), None),
    ]
    part = tmp_path / "__consumer_offsets-3"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(build_batch(recs, timestamp=1000))
    out = subprocess.run(
        [sys.executable, "-m", "kafkalite", "offsets", "dump", "--data-dir", str(tmp_path)],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["offset"] for r in rows] == [0, 1, 2, 3]
    assert all(r["partition"] == 3 for r in rows)
    assert rows[0]["key"] == {"type": "2", "data": {"group": "g"}}
    assert rows[0]["value"] == {"version": "3", "data": {
        "protocolType": "consumer", "generation": 3, "protocol": "range", "leader": "m1",
        "currentStateTimestamp": 77, "members": [{
            "memberId": "m1", "groupInstanceId": None, "clientId": "cli",
            "clientHost": "/127.0.0.1", "rebalanceTimeout": 300, "sessionTimeout": 100,
            "subscription": {"topics": ["t"], "userData": None, "ownedPartitions": []},
            "assignment": {"assignedPartitions": [{"topic": "t", "partitions": [0, 1]}],
                           "userData": None},
        }]}}
    assert rows[1]["key"] == {"type": "1", "data": {"group": "g", "topic": "t", "partition": 1}}
    assert rows[1]["value"] == {"version": "3", "data": {
        "offset": 42, "leaderEpoch": 5, "metadata": "meta", "commitTimestamp": 1000}}
    assert rows[2]["value"] == {"version": "1", "data": {
        "offset": 7, "metadata": "", "commitTimestamp": 1000, "expireTimestamp": 2000}}
    assert rows[3]["value"] is None


def test_dump_consumer_group_records(tmp_path: Path) -> None:
    import uuid

    from kafkalite.broker.cli.offsets_dump import iter_dump, uuid_json
    from kafkalite.protocol import consumer_group_records as cg

    t = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    tps = (cg.TopicIdPartitions(t, (0, 1)),)
    recs = [
        (cg.ConsumerGroupMetadataKey("g"), cg.ConsumerGroupMetadataValue(4)),
        (cg.ConsumerGroupPartitionMetadataKey("g"),
         cg.ConsumerGroupPartitionMetadataValue((cg.PartitionMetadataTopic(t, "foo", 2),))),
        (cg.ConsumerGroupMemberMetadataKey("g", "m1"), cg.ConsumerGroupMemberMetadataValue(
            None, None, "cli", "/127.0.0.1", ("foo",), "", 45000, "uniform")),
        (cg.ConsumerGroupTargetAssignmentMemberKey("g", "m1"),
         cg.ConsumerGroupTargetAssignmentMemberValue(tps)),
        (cg.ConsumerGroupTargetAssignmentMetadataKey("g"),
         cg.ConsumerGroupTargetAssignmentMetadataValue(4)),
        (cg.ConsumerGroupCurrentMemberAssignmentKey("g", "m1"),
         cg.ConsumerGroupCurrentMemberAssignmentValue(4, 3, 0, tps, ())),
        (cg.ConsumerGroupRegularExpressionKey("g", "fo.*"),
         cg.ConsumerGroupRegularExpressionValue(("foo",), 7, 1000)),
        (cg.ConsumerGroupCurrentMemberAssignmentKey("g", "m1"), None),
    ]
    part = tmp_path / "__consumer_offsets-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(build_batch(
        [NewRecord(co.encode_key(k), co.encode_value(v)) for k, v in recs], timestamp=1000))
    rows = list(iter_dump(tmp_path))
    # Kafka's Uuid.toString: URL-safe base64 without padding.
    tid = uuid_json(t)
    assert tid == "ABEiM0RVZneImaq7zN3u_w"
    assert [(r["key"]["type"], r["key"]["data"]) for r in rows] == [
        ("3", {"groupId": "g"}),
        ("4", {"groupId": "g"}),
        ("5", {"groupId": "g", "memberId": "m1"}),
        ("7", {"groupId": "g", "memberId": "m1"}),
        ("6", {"groupId": "g"}),
        ("8", {"groupId": "g", "memberId": "m1"}),
        ("16", {"groupId": "g", "regularExpression": "fo.*"}),
        ("8", {"groupId": "g", "memberId": "m1"}),
    ]
    assert [r["value"] for r in rows] == [
        {"version": "0", "data": {"epoch": 4}},
        {"version": "0", "data": {"topics": [{"topicId": tid, "topicName": "foo",
                                              "numPartitions": 2, "partitionMetadata": []}]}},
        {"version": "0", "data": {
            "instanceId": None, "rackId": None, "clientId": "cli", "clientHost": "/127.0.0.1",
            "subscribedTopicNames": ["foo"], "subscribedTopicRegex": "",
            "rebalanceTimeoutMs": 45000, "serverAssignor": "uniform"}},
        {"version": "0", "data": {"topicPartitions": [{"topicId": tid, "partitions": [0, 1]}]}},
        {"version": "0", "data": {"assignmentEpoch": 4}},
        {"version": "0", "data": {
            "memberEpoch": 4, "previousMemberEpoch": 3, "state": 0,
            "assignedPartitions": [{"topicId": tid, "partitions": [0, 1]}],
            "partitionsPendingRevocation": []}},
        {"version": "0", "data": {"topics": ["foo"], "version": 7, "timestamp": 1000}},
        None,
    ]


def test_dump_share_group_records(tmp_path: Path) -> None:
    import uuid

    from kafkalite.broker.cli.offsets_dump import iter_dump, uuid_json
    from kafkalite.protocol import share_group_records as sg
    from kafkalite.protocol import share_state_records as ss
    from kafkalite.protocol.consumer_group_records import TopicIdPartitions

    tid = uuid.UUID(int=7)
    recs = [
        NewRecord(sg.encode_key(sg.ShareGroupMetadataKey("s")),
                  sg.encode_value(sg.ShareGroupMetadataValue(2, 99))),
        NewRecord(sg.encode_key(sg.ShareGroupCurrentMemberAssignmentKey("s", "m")),
                  sg.encode_value(sg.ShareGroupCurrentMemberAssignmentValue(
                      2, 1, 0, (TopicIdPartitions(tid, (0,)),)))),
        NewRecord(sg.encode_key(sg.ShareGroupMemberMetadataKey("s", "m")), None),
    ]
    part = tmp_path / "__consumer_offsets-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(build_batch(recs, timestamp=1000))
    rows = list(iter_dump(tmp_path))
    assert [(r["key"], r["value"]) for r in rows] == [
        ({"type": "11", "data": {"groupId": "s"}},
         {"version": "0", "data": {"epoch": 2, "metadataHash": 99}}),
        ({"type": "14", "data": {"groupId": "s", "memberId": "m"}},
         {"version": "0", "data": {"memberEpoch": 2, "previousMemberEpoch": 1, "state": 0,
                                   "assignedPartitions": [{"topicId": uuid_json(tid),
                                                           "partitions": [0]}]}}),
        ({"type": "10", "data": {"groupId": "s", "memberId": "m"}}, None),
    ]

    state = tmp_path / "__share_group_state-1"
    state.mkdir()
    key = ss.ShareStateKey(ss.SHARE_SNAPSHOT, "s", tid, 0)
    snap = ss.ShareSnapshotValue(1, 0, 0, 10, 5, 6, (ss.StateBatch(10, 12, ss.ARCHIVED, 5),),
                                 delivery_complete_count=3)
    (state / "00000000000000000000.log").write_bytes(build_batch(
        [NewRecord(ss.encode_key(key), ss.encode_value(snap))], timestamp=1000))
    out = subprocess.run(
        [sys.executable, "-m", "kafkalite", "offsets", "dump", "--data-dir", str(tmp_path),
         "--topic", "__share_group_state"],
        check=True, capture_output=True, text=True, timeout=60).stdout
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert row["partition"] == 1
    assert row["key"] == {"type": "0", "data": {"groupId": "s", "topicId": uuid_json(tid),
                                                "partition": 0}}
    assert row["value"] == {"version": "0", "data": {
        "snapshotEpoch": 1, "stateEpoch": 0, "leaderEpoch": 0, "startOffset": 10,
        "deliveryCompleteCount": 3, "createTimestamp": 5, "writeTimestamp": 6,
        "stateBatches": [{"firstOffset": 10, "lastOffset": 12, "deliveryState": 4,
                          "deliveryCount": 5}]}}
