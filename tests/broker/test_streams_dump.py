"""``kafkalite offsets dump`` decodes the streams group records (KIP-1071)."""

from __future__ import annotations

from kafkalite.broker.cli.offsets_dump import record_json
from kafkalite.protocol import streams_group_records as st


def test_streams_group_records_are_decoded() -> None:
    key = st.StreamsGroupCurrentMemberAssignmentKey("app", "m-1")
    value = st.StreamsGroupCurrentMemberAssignmentValue(
        5, 4, 2, (("0", (0, 1)),), active_tasks_pending_revocation=(("1", (3,)),))
    out = record_json(st.encode_key(key), st.encode_value(value))
    assert out["key"] == {"type": "22", "data": {"groupId": "app", "memberId": "m-1"}}
    data = out["value"]["data"]
    assert (data["memberEpoch"], data["previousMemberEpoch"], data["state"]) == (5, 4, 2)
    assert data["activeTasks"] == [{"subtopologyId": "0", "partitions": [0, 1]}]
    assert data["activeTasksPendingRevocation"] == [{"subtopologyId": "1", "partitions": [3]}]
    meta = record_json(st.encode_key(st.StreamsGroupMemberMetadataKey("app", "m-1")),
                       st.encode_value(st.StreamsGroupMemberMetadataValue(
                           None, None, "c", "/h", 1000, 1, "p", ("localhost", 80),
                           (("zone", "a"),))))
    assert meta["value"]["data"]["userEndpoint"] == {"host": "localhost", "port": 80}
    assert meta["value"]["data"]["clientTags"] == [{"key": "zone", "value": "a"}]
    topology = record_json(st.encode_key(st.StreamsGroupTopologyKey("app")), st.encode_value(
        st.StreamsGroupTopologyValue(1, (st.Subtopology(
            "0", ("in",), (), (st.TopicInfo("app-c-changelog", 0, 0, ()),), (), (), ()),))))
    sub = topology["value"]["data"]["subtopologies"][0]
    assert sub["sourceTopics"] == ["in"]
    assert sub["stateChangelogTopics"][0]["name"] == "app-c-changelog"
    tomb = record_json(st.encode_key(st.StreamsGroupMetadataKey("app")), None)
    assert tomb == {"key": {"type": "17", "data": {"groupId": "app"}}, "value": None}
