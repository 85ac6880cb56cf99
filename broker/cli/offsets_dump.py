"""``kafkalite offsets dump``: the records of ``__consumer_offsets`` as JSON lines.

Each key and value has the shape Kafka's ``kafka-dump-log --offsets-decoder`` prints
(``DumpLogSegments.OffsetsMessageParser``): the key as ``{"type": "<key version>", "data":
{...}}``, the value as ``{"version": "<value version>", "data": {...}}`` with field names
as Kafka's generated JSON converters write them (camelCase, bytes in base64, topic ids
as Kafka's ``Uuid.toString``, tagged fields only when they differ from their default),
and, for groups of protocol type ``consumer``, each member's subscription and assignment
decoded. KIP-848 consumer group records (types 3-8 and 16) and KIP-932 share group
records (types 10-15) are decoded too, and with ``--topic __share_group_state`` the
share-partition state records (``broker/cli/share_dump.py``). A tombstone's value is ``null``
(Kafka prints ``<DELETE>``).
"""

from __future__ import annotations

import base64
import json
import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from kafkalite.protocol import consumer_group_records as cg
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol import share_group_records as sg
from kafkalite.protocol import streams_group_records as st
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.protocol.records import decode_batch, iter_batch_headers
from kafkalite.protocol.schema_io import Reader

from .share_dump import share_group_key_json, share_group_value_json, share_state_record_json

SHARE_STATE_TOPIC = "__share_group_state"


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode("ascii")


def _tps(tps: tuple[co.TopicPartitions, ...]) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partitions": list(tp.partitions)} for tp in tps]


def subscription_json(sub: co.ConsumerProtocolSubscription) -> dict[str, Any]:
    v = sub.version
    out: dict[str, Any] = {"topics": list(sub.topics), "userData": _b64(sub.user_data)}
    if v >= 1:
        out["ownedPartitions"] = _tps(sub.owned_partitions)
    if v >= 2:
        out["generationId"] = sub.generation_id
    if v >= 3:
        out["rackId"] = sub.rack_id
    return out


def assignment_json(a: co.ConsumerProtocolAssignment) -> dict[str, Any]:
    return {"assignedPartitions": _tps(a.assigned_partitions), "userData": _b64(a.user_data)}


def uuid_json(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode("ascii").rstrip("=")


def _cg_key_data(key: cg.ConsumerGroupKey) -> dict[str, Any]:
    data: dict[str, Any] = {"groupId": key.group}
    if isinstance(key, cg.ConsumerGroupRegularExpressionKey):
        data["regularExpression"] = key.regular_expression
    elif isinstance(key, cg.MEMBER_KEY_CLASSES):
        data["memberId"] = key.member_id
    return data


def key_json(key: co.RecordKey) -> dict[str, Any]:
    if isinstance(key, cg.KEY_CLASSES):
        return {"type": str(key.record_type), "data": _cg_key_data(key)}
    if isinstance(key, sg.KEY_CLASSES):
        return share_group_key_json(key)
    if isinstance(key, st.KEY_CLASSES):
        from .streams_dump import key_json as streams_key_json

        return streams_key_json(key)
    if isinstance(key, co.GroupMetadataKey):
        return {"type": str(co.GROUP_METADATA_KEY), "data": {"group": key.group}}
    return {"type": str(key.version),
            "data": {"group": key.group, "topic": key.topic, "partition": key.partition}}


def _value_version(raw: bytes) -> int:
    return int.from_bytes(raw[:2], "big", signed=True)


def offset_value_json(v: co.OffsetCommitValue, version: int) -> dict[str, Any]:
    data: dict[str, Any] = {"offset": v.offset}
    if version >= 3:
        data["leaderEpoch"] = v.leader_epoch
    data["metadata"] = v.metadata
    data["commitTimestamp"] = v.commit_timestamp
    if version == 1:
        data["expireTimestamp"] = v.expire_timestamp
    return {"version": str(version), "data": data}


def group_value_json(g: co.GroupMetadataValue, version: int) -> dict[str, Any]:
    consumer = g.protocol_type == "consumer"
    members: list[dict[str, Any]] = []
    for m in g.members:
        mj: dict[str, Any] = {"memberId": m.member_id}
        if version >= 3:
            mj["groupInstanceId"] = m.group_instance_id
        mj["clientId"] = m.client_id
        mj["clientHost"] = m.client_host
        if version >= 1:
            mj["rebalanceTimeout"] = m.rebalance_timeout
        mj["sessionTimeout"] = m.session_timeout
        sub: Any = _b64(m.subscription)
        assignment: Any = _b64(m.assignment)
        if consumer:
            # As Kafka: decode what parses, keep the original bytes otherwise.
            try:
                sub = subscription_json(co.decode_subscription(m.subscription))
            except Exception:
                pass
            try:
                assignment = assignment_json(co.decode_assignment(m.assignment))
            except Exception:
                pass
        mj["subscription"] = sub
        mj["assignment"] = assignment
        members.append(mj)
    data: dict[str, Any] = {
        "protocolType": g.protocol_type,
        "generation": g.generation,
        "protocol": g.protocol,
        "leader": g.leader,
    }
    if version >= 2:
        data["currentStateTimestamp"] = g.current_state_timestamp
    data["members"] = members
    return {"version": str(version), "data": data}


def _id_partitions(tps: tuple[cg.TopicIdPartitions, ...]) -> list[dict[str, Any]]:
    return [{"topicId": uuid_json(tp.topic_id), "partitions": list(tp.partitions)} for tp in tps]


def consumer_group_value_json(v: cg.ConsumerGroupValue) -> dict[str, Any]:
    """The ``data`` of a KIP-848 record value, as Kafka's JSON converters write it."""
    data: dict[str, Any]
    if isinstance(v, cg.ConsumerGroupMetadataValue):
        data = {"epoch": v.epoch}
        if v.metadata_hash != 0:
            data["metadataHash"] = v.metadata_hash
        if v.creation_time_ms != -1:
            data["creationTimeMs"] = v.creation_time_ms
    elif isinstance(v, cg.ConsumerGroupPartitionMetadataValue):
        data = {"topics": [{
            "topicId": uuid_json(t.topic_id), "topicName": t.topic_name,
            "numPartitions": t.num_partitions,
            "partitionMetadata": [{"partition": pm.partition, "racks": list(pm.racks)}
                                  for pm in t.partition_metadata],
        } for t in v.topics]}
    elif isinstance(v, cg.ConsumerGroupMemberMetadataValue):
        data = {
            "instanceId": v.instance_id, "rackId": v.rack_id, "clientId": v.client_id,
            "clientHost": v.client_host, "subscribedTopicNames": list(v.subscribed_topic_names),
            "subscribedTopicRegex": v.subscribed_topic_regex,
            "rebalanceTimeoutMs": v.rebalance_timeout_ms, "serverAssignor": v.server_assignor,
        }
        c = v.classic_member_metadata
        if c is not None:
            data["classicMemberMetadata"] = {
                "sessionTimeoutMs": c.session_timeout_ms,
                "supportedProtocols": [{"name": p.name, "metadata": _b64(p.metadata)}
                                       for p in c.supported_protocols],
            }
    elif isinstance(v, cg.ConsumerGroupTargetAssignmentMetadataValue):
        data = {"assignmentEpoch": v.assignment_epoch}
    elif isinstance(v, cg.ConsumerGroupTargetAssignmentMemberValue):
        data = {"topicPartitions": _id_partitions(v.topic_partitions)}
    elif isinstance(v, cg.ConsumerGroupCurrentMemberAssignmentValue):
        data = {
            "memberEpoch": v.member_epoch, "previousMemberEpoch": v.previous_member_epoch,
            "state": v.state, "assignedPartitions": _id_partitions(v.assigned_partitions),
            "partitionsPendingRevocation": _id_partitions(v.partitions_pending_revocation),
        }
    else:
        data = {"topics": list(v.topics), "version": v.version, "timestamp": v.timestamp}
    return {"version": str(cg.VALUE_VERSION), "data": data}


def record_json(key_bytes: bytes | None, value_bytes: bytes | None) -> dict[str, Any]:
    """``{"key": ..., "value": ...}`` for one record, as the offsets decoder shows it."""
    if key_bytes is None:
        return {"key": None, "value": None, "error": "record has no key"}
    version = int.from_bytes(key_bytes[:2], "big", signed=True)
    if version in sg.KEY_TYPES:
        return _share_group_record_json(version, key_bytes, value_bytes)
    if version in st.KEY_TYPES:
        from .streams_dump import record_json as streams_record_json

        return streams_record_json(version, key_bytes, value_bytes)
    try:
        key = co.decode_key(key_bytes, consumer_groups=True)
    except co.UnknownRecordType:
        return {"key": f"Unknown record type {version}", "value": None}
    except Exception as e:
        return {"key": None, "value": None, "error": str(e)}
    out: dict[str, Any] = {"key": key_json(key), "value": None}
    if value_bytes is None:
        return out
    try:
        value = co.decode_value(key, value_bytes)
        version = _value_version(value_bytes)
        if isinstance(value, co.GroupMetadataValue):
            out["value"] = group_value_json(value, version)
        elif isinstance(value, co.OffsetCommitValue):
            out["value"] = offset_value_json(value, version)
        elif isinstance(value, sg.VALUE_CLASSES):
            out["value"] = share_group_value_json(value)
        elif isinstance(value, st.VALUE_CLASSES):
            from .streams_dump import value_json as streams_value_json

            out["value"] = streams_value_json(value)
        elif value is not None:
            out["value"] = consumer_group_value_json(value)
    except Exception as e:
        out["error"] = str(e)
    return out


def _share_group_record_json(record_type: int, key_bytes: bytes,
                             value_bytes: bytes | None) -> dict[str, Any]:
    try:
        r = Reader(key_bytes)
        r.i16()
        key = sg.decode_key_fields(record_type, r)
    except Exception as e:
        return {"key": None, "value": None, "error": str(e)}
    out: dict[str, Any] = {"key": share_group_key_json(key), "value": None}
    if value_bytes is not None:
        try:
            out["value"] = share_group_value_json(sg.decode_value(key, value_bytes))
        except Exception as e:
            out["error"] = str(e)
    return out


def partition_dirs(data_dir: Path, topic: str = OFFSETS_TOPIC) -> list[tuple[int, Path]]:
    found: list[tuple[int, Path]] = []
    if not data_dir.is_dir():
        return found
    pattern = re.compile(rf"^{re.escape(topic)}-(\d+)$")
    for d in data_dir.iterdir():
        m = pattern.match(d.name)
        if m and d.is_dir():
            found.append((int(m.group(1)), d))
    return sorted(found)


def iter_dump(data_dir: Path, partition: int | None = None,
              topic: str = OFFSETS_TOPIC) -> Iterator[dict[str, Any]]:
    """Every record of ``__consumer_offsets`` (or ``__share_group_state``) under
    ``data_dir``, in partition and offset order."""
    decode = share_state_record_json if topic == SHARE_STATE_TOPIC else record_json
    for p, d in partition_dirs(data_dir, topic):
        if partition is not None and p != partition:
            continue
        for seg in sorted(d.glob("*.log")):
            data = seg.read_bytes()
            for pos, h in iter_batch_headers(data):
                if h.is_control:
                    continue
                _, records = decode_batch(data, pos)
                for r in records:
                    row: dict[str, Any] = {"partition": p, "offset": r.offset,
                                           "timestamp": r.timestamp}
                    row.update(decode(r.key, r.value))
                    yield row


def dump(data_dir: Path, out: TextIO = sys.stdout, partition: int | None = None,
         topic: str = OFFSETS_TOPIC) -> int:
    n = 0
    for row in iter_dump(data_dir, partition, topic):
        out.write(json.dumps(row, separators=(",", ":")) + "\n")
        n += 1
    return n
