"""Kafka 4.4's ``kafka-streams-groups`` tool (StreamsGroupCommand, run as bin/ runs it)
against a streams group on kafkalite: list, describe (state, members, offsets, the
topology description), delete offsets, reset offsets and delete. The tool works through
the Java Admin's streams-group calls (listGroups with type streams, describeStreamsGroups,
alterStreamsGroupOffsets, deleteStreamsGroupOffsets, deleteStreamsGroups). The group is
one member driven by raw StreamsGroupHeartbeats over TCP (word count's topology: a
repartition topic, a store); the expected output is what the same steps printed against
Kafka 4.4 itself, with member and process ids, the coordinator's port and the epochs
taken out (kafkalite's epochs are lower: docs/compatibility.md, "Streams groups")"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_tool, tools_log_config
from .streams_member import APP, SOURCE, StreamsMember

STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"


def _normalised(text: str, member: StreamsMember) -> list[str]:
    text = text.replace(member.member_id, "<member>")
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<process>",
                  text)
    text = re.sub(r"127\.0\.0\.1:\d+", "<host>", text)
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def test_streams_groups_tool(make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    b = make_broker().bootstrap
    admin = AdminClient({"bootstrap.servers": b})
    admin.create_topics([NewTopic(SOURCE, 2, 1)])[SOURCE].result(10)
    producer = Producer({"bootstrap.servers": b})
    for i in range(10):
        producer.produce(SOURCE, value=b"hello", partition=i % 2)
    producer.flush(10)
    member = StreamsMember(b)
    assert member.join() == [dict(subtopology_id="0", partitions=[0, 1]),
                             dict(subtopology_id="1", partitions=[0, 1])]
    log = tools_log_config(tmp_path)

    def tool(*args: str, code: int = 0) -> list[str]:
        if member.epoch > 0:
            member.heartbeat()  # the session stays alive across the tool's JVM starts
        out = run_tool(STREAMS_GROUPS, "--bootstrap-server", b, *args, log_config=log,
                       check=False)
        assert out.returncode == code, out.stdout + out.stderr[-3000:]
        return _normalised(out.stdout, member)

    assert tool("--list") == [APP]
    assert tool("--list", "--state") == ["GROUP STATE", f"{APP} Stable"]
    assert tool("--describe", "--group", APP, "--state") == [
        "GROUP COORDINATOR (ID) ASSIGNOR STATE #MEMBERS",
        f"{APP} <host> (1) sticky Stable 1"]
    assert tool("--describe", "--group", APP, "--members") == [
        "GROUP MEMBER PROCESS CLIENT-ID ASSIGNMENTS",
        f"{APP} <member> <process> streams-member ACTIVE: 0:[0,1]; 1:[0,1];"]
    verbose = tool("--describe", "--group", APP, "--members", "--verbose")
    assert verbose[0] == ("GROUP TARGET-ASSIGNMENT-EPOCH TOPOLOGY-EPOCH MEMBER MEMBER-PROTOCOL "
                          "MEMBER-EPOCH PROCESS CLIENT-ID ASSIGNMENTS")
    e = str(member.epoch)
    assert verbose[1:] == [f"{APP} {e} 1 <member> streams {e} <process> streams-member "
                           "ACTIVE: 0:[0,1]; 1:[0,1]; TARGET-ACTIVE: 0:[0,1]; 1:[0,1];"]
    # --topology asks StreamsGroupDescribe v1 for the description a broker plugin keeps;
    # there is none (as on a Kafka without group.streams.topology.description.plugin.class).
    assert tool("--describe", "--group", APP, "--topology", code=1) == [
        f"Error: No topology description is stored for streams group '{APP}'."]
    assert tool("--describe", "--group", APP) == [
        "GROUP TOPIC PARTITION OFFSET-LAG", f"{APP} {APP}-rep 0 0", f"{APP} {APP}-rep 1 0",
        f"{APP} {SOURCE} 1 5", f"{APP} {SOURCE} 0 5"]

    # The member commits (its id and epoch checked), then the offsets and their lag.
    commit = member.call(8, 9, group_id=APP, generation_id_or_member_epoch=member.epoch,
                         member_id=member.member_id, group_instance_id=None,
                         retention_time_ms=-1, topics=[dict(name=SOURCE, partitions=[
                             dict(partition_index=p, committed_offset=o,
                                  committed_leader_epoch=-1, committed_metadata="")
                             for p, o in ((0, 2), (1, 4))])])
    assert [int(p.error_code) for t in commit.topics for p in t.partitions] == [0, 0]
    assert tool("--describe", "--group", APP, "--offsets", "--verbose") == [
        "GROUP TOPIC PARTITION CURRENT-OFFSET LEADER-EPOCH LOG-END-OFFSET OFFSET-LAG",
        f"{APP} {APP}-rep 0 - - 0 0", f"{APP} {APP}-rep 1 - - 0 0",
        f"{APP} {SOURCE} 1 4 - 5 1", f"{APP} {SOURCE} 0 2 - 5 3"]
    subscribed = ("Error: org.apache.kafka.common.errors.GroupSubscribedToTopicException: "
                  "Deleting offsets of a topic is forbidden while the consumer group is "
                  "actively subscribed to it.")
    assert tool("--delete-offsets", "--group", APP, "--input-topic", SOURCE) == [
        "Error: Encountered some partition-level error, see the follow-up details.",
        "TOPIC PARTITION STATUS", f"{SOURCE} 0 {subscribed}", f"{SOURCE} 1 {subscribed}"]
    assert tool("--describe", "--group", "nope", code=1)[0] == (
        "Error: Executing streams group command failed due to "
        "org.apache.kafka.common.errors.GroupIdNotFoundException: Group nope not found.")

    # The member leaves: the group stays, Empty, with its offsets.
    member.heartbeat(-1)
    assert tool("--describe", "--group", APP, "--state") == [
        f"Error: Streams group '{APP}' has no active members.",
        "GROUP COORDINATOR (ID) ASSIGNOR STATE #MEMBERS", f"{APP} <host> (1) sticky Empty 0"]
    assert tool("--reset-offsets", "--group", APP, "--to-offset", "1", "--input-topic",
                f"{SOURCE}:0", "--dry-run") == [
        "GROUP TOPIC PARTITION NEW-OFFSET", f"{APP} {SOURCE} 0 1"]
    assert tool("--reset-offsets", "--group", APP, "--to-earliest", "--all-input-topics",
                "--execute") == [
        "GROUP TOPIC PARTITION NEW-OFFSET", f"{APP} {SOURCE} 1 0", f"{APP} {SOURCE} 0 0"]
    fetched = member.call(9, 9, groups=[dict(group_id=APP, member_id=None, member_epoch=-1,
                                             topics=None)], require_stable=False)
    assert sorted((t.name, p.partition_index, p.committed_offset)
                  for t in fetched.groups[0].topics for p in t.partitions) == [
        (SOURCE, 0, 0), (SOURCE, 1, 0)]
    assert tool("--delete-offsets", "--group", APP, "--input-topic", SOURCE) == [
        f"Request succeeded for deleting offsets from group {APP}.",
        "TOPIC PARTITION STATUS", f"{SOURCE} 0 Successful", f"{SOURCE} 1 Successful"]
    assert tool("--delete", "--group", APP) == [
        f"Deletion of requested streams groups ('{APP}') was successful."]
    assert tool("--list") == []
