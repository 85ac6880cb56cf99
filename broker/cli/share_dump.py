"""Share group records as ``kafkalite offsets dump`` prints them: the KIP-932 records of
``__consumer_offsets`` (types 10-15) and the records of ``__share_group_state``, with the
field names of Kafka's generated JSON converters (camelCase, topic ids as Kafka's
``Uuid.toString``, tagged fields only when they differ from their default)."""

from __future__ import annotations

import base64
import uuid
from typing import Any

from kafkalite.protocol import share_group_records as sg
from kafkalite.protocol import share_state_records as ss
from kafkalite.protocol.consumer_group_records import TopicIdPartitions


def _uuid(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def _id_partitions(tps: tuple[TopicIdPartitions, ...]) -> list[dict[str, Any]]:
    return [{"topicId": _uuid(tp.topic_id), "partitions": list(tp.partitions)} for tp in tps]


def share_group_key_json(key: sg.ShareGroupKey) -> dict[str, Any]:
    data: dict[str, Any] = {"groupId": key.group}
    if isinstance(key, sg.MEMBER_KEY_CLASSES):
        data["memberId"] = key.member_id
    return {"type": str(key.record_type), "data": data}


def _infos(infos: tuple[sg.TopicPartitionsInfo, ...]) -> list[dict[str, Any]]:
    return [{"topicId": _uuid(t.topic_id), "topicName": t.topic_name,
             "partitions": list(t.partitions)} for t in infos]


def share_group_value_json(v: sg.ShareGroupValue) -> dict[str, Any]:
    data: dict[str, Any]
    if isinstance(v, sg.ShareGroupMemberMetadataValue):
        data = {"rackId": v.rack_id, "clientId": v.client_id, "clientHost": v.client_host,
                "subscribedTopicNames": list(v.subscribed_topic_names)}
    elif isinstance(v, sg.ShareGroupMetadataValue):
        data = {"epoch": v.epoch, "metadataHash": v.metadata_hash}
    elif isinstance(v, sg.ShareGroupTargetAssignmentMetadataValue):
        data = {"assignmentEpoch": v.assignment_epoch}
        if v.assignment_timestamp != -1:
            data["assignmentTimestamp"] = v.assignment_timestamp
    elif isinstance(v, sg.ShareGroupTargetAssignmentMemberValue):
        data = {"topicPartitions": _id_partitions(v.topic_partitions)}
    elif isinstance(v, sg.ShareGroupCurrentMemberAssignmentValue):
        data = {"memberEpoch": v.member_epoch, "previousMemberEpoch": v.previous_member_epoch,
                "state": v.state, "assignedPartitions": _id_partitions(v.assigned_partitions)}
    else:
        data = {"initializingTopics": _infos(v.initializing_topics),
                "initializedTopics": _infos(v.initialized_topics),
                "deletingTopics": [{"topicId": _uuid(t.topic_id), "topicName": t.topic_name}
                                   for t in v.deleting_topics]}
    return {"version": str(sg.VALUE_VERSION), "data": data}


def _batches(batches: tuple[ss.StateBatch, ...]) -> list[dict[str, Any]]:
    return [{"firstOffset": b.first_offset, "lastOffset": b.last_offset,
             "deliveryState": b.delivery_state, "deliveryCount": b.delivery_count}
            for b in batches]


def share_state_record_json(key_bytes: bytes | None,
                            value_bytes: bytes | None) -> dict[str, Any]:
    """``{"key": ..., "value": ...}`` for one ``__share_group_state`` record."""
    if key_bytes is None:
        return {"key": None, "value": None, "error": "record has no key"}
    try:
        key = ss.decode_key(key_bytes)
    except Exception as e:
        return {"key": None, "value": None, "error": str(e)}
    out: dict[str, Any] = {"key": {"type": str(key.record_type), "data": {
        "groupId": key.group, "topicId": _uuid(key.topic_id), "partition": key.partition}},
        "value": None}
    if value_bytes is None:
        return out
    try:
        v = ss.decode_value(key, value_bytes)
    except Exception as e:
        out["error"] = str(e)
        return out
    data: dict[str, Any]
    if isinstance(v, ss.ShareSnapshotValue):
        data = {"snapshotEpoch": v.snapshot_epoch, "stateEpoch": v.state_epoch,
                "leaderEpoch": v.leader_epoch, "startOffset": v.start_offset}
        if v.delivery_complete_count != -1:
            data["deliveryCompleteCount"] = v.delivery_complete_count
        data |= {"createTimestamp": v.create_timestamp, "writeTimestamp": v.write_timestamp}
    else:
        data = {"snapshotEpoch": v.snapshot_epoch, "leaderEpoch": v.leader_epoch,
                "startOffset": v.start_offset}
        if v.delivery_complete_count != -1:
            data["deliveryCompleteCount"] = v.delivery_complete_count
    data["stateBatches"] = _batches(v.state_batches)
    out["value"] = {"version": str(ss.VALUE_VERSION), "data": data}
    return out
