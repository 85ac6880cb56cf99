"""The share group records, byte for byte as Kafka 4.4 writes them: a small Java program
(java_oracle/ShareRecordsOracle.java) serializes records through Kafka's generated
``ShareGroup*`` and ``ShareSnapshot``/``ShareUpdate`` classes, and kafkalite's codecs must
write the same bytes for the same records and read them back."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from kafkalite.protocol import share_group_records as sg
from kafkalite.protocol import share_state_records as ss
from kafkalite.protocol.consumer_group_records import TopicIdPartitions
from kafkalite.protocol.schema_io import Reader

from .java_support import full_classpath

T1 = uuid.UUID(bytes=bytes(range(1, 17)))
T2 = uuid.UUID(bytes=(-2).to_bytes(8, "big", signed=True) + (42).to_bytes(8, "big"))

GROUP_RECORDS: dict[str, tuple[sg.ShareGroupKey, sg.ShareGroupValue]] = {
    "member_metadata": (sg.ShareGroupMemberMetadataKey("g", "m-1"),
                        sg.ShareGroupMemberMetadataValue(None, "client", "/127.0.0.1",
                                                         ("a", "b"))),
    "member_metadata_rack": (sg.ShareGroupMemberMetadataKey("g", "m-2"),
                             sg.ShareGroupMemberMetadataValue("r1", "c", "h", ())),
    "metadata": (sg.ShareGroupMetadataKey("group-ü"),
                 sg.ShareGroupMetadataValue(7, -1234567890123)),
    "target_metadata": (sg.ShareGroupTargetAssignmentMetadataKey("g"),
                        sg.ShareGroupTargetAssignmentMetadataValue(3)),
    "target_metadata_stamp": (sg.ShareGroupTargetAssignmentMetadataKey("g"),
                              sg.ShareGroupTargetAssignmentMetadataValue(4, 1700000000000)),
    "target_member": (sg.ShareGroupTargetAssignmentMemberKey("g", "m-1"),
                      sg.ShareGroupTargetAssignmentMemberValue((
                          TopicIdPartitions(T1, (0, 2)), TopicIdPartitions(T2, ())))),
    "current_member": (sg.ShareGroupCurrentMemberAssignmentKey("g", "m-1"),
                       sg.ShareGroupCurrentMemberAssignmentValue(
                           5, 4, 0, (TopicIdPartitions(T1, (1,)),))),
    "state_partition_metadata": (
        sg.ShareGroupStatePartitionMetadataKey("g"),
        sg.ShareGroupStatePartitionMetadataValue(
            (sg.TopicPartitionsInfo(T1, "a", (0, 1)),),
            (sg.TopicPartitionsInfo(T2, "b", (3,)),),
            (sg.TopicIdAndName(T1, "gone"),))),
}

STATE_RECORDS: dict[str, tuple[ss.ShareStateKey, ss.ShareStateValue]] = {
    "snapshot": (ss.ShareStateKey(ss.SHARE_SNAPSHOT, "g", T1, 3),
                 ss.ShareSnapshotValue(2, 1, 0, 100, 1700000000000, 1700000000500, (
                     ss.StateBatch(100, 104, ss.AVAILABLE, 1),
                     ss.StateBatch(105, 105, ss.ARCHIVED, 5)))),
    "snapshot_count": (ss.ShareStateKey(ss.SHARE_SNAPSHOT, "g", T2, 0),
                       ss.ShareSnapshotValue(0, 0, -1, 0, 1, 2, (), delivery_complete_count=12)),
    "update": (ss.ShareStateKey(ss.SHARE_UPDATE, "g", T1, 3),
               ss.ShareUpdateValue(2, 0, -1, (ss.StateBatch(106, 110, ss.ACKNOWLEDGED, 2),))),
    "update_count": (ss.ShareStateKey(ss.SHARE_UPDATE, "g", T1, 3),
                     ss.ShareUpdateValue(3, 1, 111, (), delivery_complete_count=0)),
}


@pytest.fixture(scope="module")
def kafka_bytes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, bytes]]:
    out_dir = tmp_path_factory.mktemp("oracle")
    source = Path(__file__).parent / "java_oracle" / "ShareRecordsOracle.java"
    subprocess.run(["javac", "-nowarn", "-d", str(out_dir), "-cp", full_classpath(),
                    str(source)], check=True, timeout=300)
    run = subprocess.run(["java", "-cp", f"{out_dir}:{full_classpath()}", "ShareRecordsOracle"],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    found: dict[str, tuple[bytes, bytes]] = {}
    for line in run.stdout.splitlines():
        name, key, value = line.split()
        found[name] = (bytes.fromhex(key), bytes.fromhex(value))
    return found


def test_every_record_has_its_kafka_bytes(kafka_bytes: dict[str, tuple[bytes, bytes]]) -> None:
    assert sorted(kafka_bytes) == sorted([*GROUP_RECORDS, *STATE_RECORDS])


@pytest.mark.parametrize("name", sorted(GROUP_RECORDS))
def test_share_group_records_match_kafka(name: str,
                                         kafka_bytes: dict[str, tuple[bytes, bytes]]) -> None:
    key, value = GROUP_RECORDS[name]
    key_bytes, value_bytes = kafka_bytes[name]
    assert sg.encode_key(key).hex() == key_bytes.hex()
    assert sg.encode_value(value).hex() == value_bytes.hex()
    r = Reader(key_bytes)
    assert sg.decode_key_fields(r.i16(), r) == key
    assert sg.decode_value(key, value_bytes) == value


@pytest.mark.parametrize("name", sorted(STATE_RECORDS))
def test_share_state_records_match_kafka(name: str,
                                         kafka_bytes: dict[str, tuple[bytes, bytes]]) -> None:
    key, value = STATE_RECORDS[name]
    key_bytes, value_bytes = kafka_bytes[name]
    assert ss.encode_key(key).hex() == key_bytes.hex()
    assert ss.encode_value(value).hex() == value_bytes.hex()
    assert ss.decode_key(key_bytes) == key
    assert ss.decode_value(key, value_bytes) == value
