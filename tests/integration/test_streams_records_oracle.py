"""The streams group records (KIP-1071), byte for byte as Kafka 4.4 writes them: a small
Java program (java_oracle/StreamsRecordsOracle.java) serializes records through Kafka's
generated ``StreamsGroup*`` classes, and kafkalite's codecs must write the same bytes for
the same records and read them back."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kafkalite.protocol import streams_group_records as st
from kafkalite.protocol.schema_io import Reader

from .java_support import full_classpath

RECORDS: dict[str, tuple[st.StreamsGroupKey, st.StreamsGroupValue]] = {
    "metadata": (st.StreamsGroupMetadataKey("group-ü"),
                 st.StreamsGroupMetadataValue(7, -1234567890123)),
    "metadata_validated": (st.StreamsGroupMetadataKey("g"),
                           st.StreamsGroupMetadataValue(3, 42, 1)),
    "member_metadata": (st.StreamsGroupMemberMetadataKey("g", "m-1"),
                        st.StreamsGroupMemberMetadataValue(
                            None, None, "client", "/127.0.0.1", 300000, 1, "p-1", None, ())),
    "member_metadata_full": (st.StreamsGroupMemberMetadataKey("g", "m-2"),
                             st.StreamsGroupMemberMetadataValue(
                                 "i", "r", "c", "h", 1000, 2, "p-2", ("localhost", 65000),
                                 (("zone", "a"),))),
    "target_metadata": (st.StreamsGroupTargetAssignmentMetadataKey("g"),
                        st.StreamsGroupTargetAssignmentMetadataValue(3, 1700000000000)),
    "target_member": (st.StreamsGroupTargetAssignmentMemberKey("g", "m-1"),
                      st.StreamsGroupTargetAssignmentMemberValue((("0", (0, 2)), ("1", (1,))))),
    "current_member": (st.StreamsGroupCurrentMemberAssignmentKey("g", "m-1"),
                       st.StreamsGroupCurrentMemberAssignmentValue(
                           5, 4, 2, (("0", (0,)),),
                           active_tasks_pending_revocation=(("1", (0, 1)),))),
    "current_member_epochs": (st.StreamsGroupCurrentMemberAssignmentKey("g", "m-2"),
                              st.StreamsGroupCurrentMemberAssignmentValue(
                                  6, 5, 2, (("0", (0, 1)),), (("1", (1,)),), (),
                                  (("1", (0,)),), active_epochs=(("0", (3, 6)),),
                                  active_pending_epochs=(("1", (4,)),))),
    "topology": (st.StreamsGroupTopologyKey("g"), st.StreamsGroupTopologyValue(1, (
        st.Subtopology("0", ("lines",), (), (), ("app-words-repartition",), (), ()),
        st.Subtopology("1", (), (), (st.TopicInfo("app-counts-changelog", 0, 0, (
            ("cleanup.policy", "compact"),)),), (),
            (st.TopicInfo("app-words-repartition", 4, 0, ()),),
            (st.CopartitionGroup((0,), (), (1, 2)),)),
    ))),
}


@pytest.fixture(scope="module")
def kafka_bytes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bytes, bytes]]:
    out_dir = tmp_path_factory.mktemp("oracle")
    source = Path(__file__).parent / "java_oracle" / "StreamsRecordsOracle.java"
    subprocess.run(["javac", "-nowarn", "-d", str(out_dir), "-cp", full_classpath(),
                    str(source)], check=True, timeout=300)
    run = subprocess.run(["java", "-cp", f"{out_dir}:{full_classpath()}",
                          "StreamsRecordsOracle"], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    found: dict[str, tuple[bytes, bytes]] = {}
    for line in run.stdout.splitlines():
        name, key, value = line.split()
        found[name] = (bytes.fromhex(key), bytes.fromhex(value))
    return found


def test_every_record_has_its_kafka_bytes(kafka_bytes: dict[str, tuple[bytes, bytes]]) -> None:
    assert sorted(kafka_bytes) == sorted(RECORDS)


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_streams_group_records_match_kafka(name: str,
                                           kafka_bytes: dict[str, tuple[bytes, bytes]]) -> None:
    key, value = RECORDS[name]
    key_bytes, value_bytes = kafka_bytes[name]
    assert st.encode_key(key).hex() == key_bytes.hex()
    assert st.encode_value(value).hex() == value_bytes.hex()
    r = Reader(key_bytes)
    assert st.decode_key_fields(r.i16(), r) == key
    assert st.decode_value(key, value_bytes) == value
