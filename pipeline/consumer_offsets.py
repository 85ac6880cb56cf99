"""``__consumer_offsets`` records as Spark columns.

Keys and values are Kafka's (OffsetCommitKey/Value, GroupMetadataKey/Value), parsed with
``protocol.consumer_offsets``; members' subscriptions and assignments are decoded from the
consumer embedded protocol when the group's protocol type is ``consumer``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.names import OFFSETS_TOPIC

from .source import reader

_TS = pa.timestamp("us", tz="UTC")
ASSIGNED_TYPE = pa.list_(pa.struct([("topic", pa.string()), ("partitions", pa.list_(pa.int32()))]))
MEMBER_TYPE = pa.struct(
    [
        ("member_id", pa.string()),
        ("group_instance_id", pa.string()),
        ("client_id", pa.string()),
        ("client_host", pa.string()),
        ("session_timeout_ms", pa.int32()),
        ("rebalance_timeout_ms", pa.int32()),
        ("subscribed_topics", pa.list_(pa.string())),
        ("assigned_partitions", ASSIGNED_TYPE),
    ]
)
SCHEMA = pa.schema(
    [
        ("log_partition", pa.int32()),
        ("log_offset", pa.int64()),
        ("log_timestamp", _TS),
        ("record_type", pa.string()),  # offset_commit, group_metadata, consumer_group_*, unknown
        ("tombstone", pa.bool_()),
        ("group", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("committed_offset", pa.int64()),
        ("leader_epoch", pa.int32()),
        ("metadata", pa.string()),
        ("commit_timestamp", _TS),
        ("expire_timestamp", _TS),
        ("generation", pa.int32()),
        ("protocol_type", pa.string()),
        ("protocol", pa.string()),
        ("leader", pa.string()),
        ("state_timestamp", _TS),
        ("members", pa.list_(MEMBER_TYPE)),
    ]
)
DDL = (
    "log_partition int, log_offset long, log_timestamp timestamp, record_type string, "
    "tombstone boolean, `group` string, topic string, partition int, committed_offset long, "
    "leader_epoch int, metadata string, commit_timestamp timestamp, "
    "expire_timestamp timestamp, generation int, protocol_type string, protocol string, "
    "leader string, state_timestamp timestamp, members array<struct<member_id:string,"
    "group_instance_id:string,client_id:string,client_host:string,session_timeout_ms:int,"
    "rebalance_timeout_ms:int,subscribed_topics:array<string>,"
    "assigned_partitions:array<struct<topic:string,partitions:array<int>>>>>"
)


def _us(ms: int) -> int | None:
    return ms * 1000 if ms >= 0 else None


def _member(m: co.MemberMetadata, consumer: bool) -> dict[str, Any]:
    topics: list[str] | None = None
    assigned: list[dict[str, Any]] | None = None
    if consumer:
        try:
            topics = list(co.decode_subscription(m.subscription).topics) if m.subscription \
                else []
        except (ProtocolError, UnicodeDecodeError):
            topics = None
        try:
            a = co.decode_assignment(m.assignment) if m.assignment else None
            assigned = [] if a is None else [
                {"topic": tp.topic, "partitions": list(tp.partitions)}
                for tp in a.assigned_partitions
            ]
        except (ProtocolError, UnicodeDecodeError):
            assigned = None
    return {
        "member_id": m.member_id,
        "group_instance_id": m.group_instance_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "session_timeout_ms": m.session_timeout,
        "rebalance_timeout_ms": m.rebalance_timeout,
        "subscribed_topics": topics,
        "assigned_partitions": assigned,
    }


#: Record types of KIP-848 consumer groups (the key's version): named, with their group id
#: (every such key starts with it), so the rows say what they are; values are not decoded.
CONSUMER_GROUP_RECORDS = {
    3: "consumer_group_metadata",
    4: "consumer_group_partition_metadata",
    5: "consumer_group_member_metadata",
    6: "consumer_group_target_assignment_metadata",
    7: "consumer_group_target_assignment_member",
    8: "consumer_group_current_member_assignment",
}


def _new_group_record(key: bytes, row: dict[str, Any]) -> dict[str, Any]:
    if len(key) < 4:
        return row
    kind = CONSUMER_GROUP_RECORDS.get(int.from_bytes(key[:2], "big", signed=True))
    n = int.from_bytes(key[2:4], "big", signed=True)
    if kind is None or n < 0 or 4 + n > len(key):
        return row
    row.update(record_type=kind, group=key[4 : 4 + n].decode("utf-8", "replace"))
    return row


def decode_row(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """The decoded columns of one record (without the log position columns)."""
    row: dict[str, Any] = {"record_type": "unknown", "tombstone": value is None}
    if key is None:
        return row
    try:
        k = co.decode_key(key)
    except co.UnknownRecordType:
        return _new_group_record(key, row)
    except (ProtocolError, UnicodeDecodeError):
        return row
    row["group"] = k.group
    if isinstance(k, co.OffsetCommitKey):
        row.update(record_type="offset_commit", topic=k.topic, partition=k.partition)
        if value is not None:
            v = co.decode_offset_value(value)
            row.update(
                committed_offset=v.offset,
                leader_epoch=v.leader_epoch,
                metadata=v.metadata,
                commit_timestamp=_us(v.commit_timestamp),
                expire_timestamp=_us(v.expire_timestamp),
            )
        return row
    row["record_type"] = "group_metadata"
    if value is not None:
        g = co.decode_group_value(value)
        consumer = g.protocol_type == "consumer"
        row.update(
            generation=g.generation,
            protocol_type=g.protocol_type,
            protocol=g.protocol,
            leader=g.leader,
            state_timestamp=_us(g.current_state_timestamp),
            members=[_member(m, consumer) for m in g.members],
        )
    return row


def decode_arrow(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Map a batch of the kafkalite source's columns to :data:`SCHEMA`."""
    cols: dict[str, list[Any]] = {f.name: [] for f in SCHEMA}
    keys = batch.column("key").to_pylist()
    values = batch.column("value").to_pylist()
    parts = batch.column("partition").to_pylist()
    offsets = batch.column("offset").to_pylist()
    stamps = batch.column("timestamp").cast(pa.int64()).to_pylist()
    for i in range(batch.num_rows):
        try:
            row = decode_row(keys[i], values[i])
        except (ProtocolError, UnicodeDecodeError):
            row = {"record_type": "unknown", "tombstone": values[i] is None}
        row["log_partition"] = parts[i]
        row["log_offset"] = offsets[i]
        row["log_timestamp"] = stamps[i]
        for name, col in cols.items():
            col.append(row.get(name))
    arrays = []
    for f in SCHEMA:
        data = cols[f.name]
        if f.type == _TS:
            arrays.append(pa.array(data, pa.int64()).cast(_TS))
        else:
            arrays.append(pa.array(data, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=SCHEMA)


def _map(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for b in batches:
        yield decode_arrow(b)


def read(spark: Any, log_dir: str) -> Any:
    """A DataFrame of every decoded ``__consumer_offsets`` record under ``log_dir``."""
    raw = (
        reader(spark, log_dir)
        .option("topics", OFFSETS_TOPIC)
        .load()
        .select("key", "value", "partition", "offset", "timestamp")
    )
    return raw.mapInArrow(_map, DDL)
