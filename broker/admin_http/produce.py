"""Producing one record from the console: a key, a value and headers as UTF-8 text (or
the value as JSON encoded under a Schema Registry schema id: Avro, JSON Schema, Protobuf),
appended to a partition's log as a client's batch (the same validation, schema check and
metrics a Produce request gets), with no producer id."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from kafkalite.protocol.records import NewRecord, build_batch
from kafkalite.storage.errors import StorageError
from kafkalite.storage.fsutil import fsync_and_close

from .views import BadRequest, NotFound

if TYPE_CHECKING:
    from ..metrics import BrokerMetrics
    from .views import BrokerView

#: The largest key plus value accepted from the page (the topic's own limit still applies).
MAX_PRODUCE_BYTES = 1024 * 1024


def _text(body: dict[str, Any], name: str) -> bytes | None:
    v = body.get(name)
    if v is None:
        return None
    if not isinstance(v, str):
        raise BadRequest(f"field {name} must be a string or null, got {v!r}")
    return v.encode()


def _headers(body: dict[str, Any]) -> list[tuple[str, bytes | None]]:
    raw = body.get("headers", {})
    if not isinstance(raw, dict):
        raise BadRequest("field headers must be an object of strings")
    out: list[tuple[str, bytes | None]] = []
    for k, v in raw.items():
        if v is not None and not isinstance(v, str):
            raise BadRequest(f"header {k!r} must be a string or null")
        out.append((k, None if v is None else v.encode()))
    return out


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 (``Utils.murmur2``), the default partitioner's key hash."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (0x9747B28C ^ len(data)) & mask
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    tail = data[whole:]
    if tail:
        for j in range(len(tail) - 1, -1, -1):
            h ^= tail[j] << (8 * j)
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h


def _encoded(view: BrokerView, schema_id: Any, value: Any) -> bytes:
    """``value`` in the Confluent wire format under the registry's schema ``schema_id``."""
    if isinstance(schema_id, bool) or not isinstance(schema_id, int):
        raise BadRequest(f"field schema_id must be an integer, got {schema_id!r}")
    if view.decoder is None:
        raise BadRequest("schema_id needs the Schema Registry, which is off")
    try:
        return view.decoder.encode(schema_id, value)
    except ValueError as e:
        raise BadRequest(str(e)) from None


def produce(view: BrokerView, metrics: BrokerMetrics, topic: str, body: Any) -> dict[str, Any]:
    """Append one record to ``topic``; its partition is the body's ``partition``, else the
    key's murmur2 hash (as Kafka's clients), else 0. Returns where it went."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    info = view.storage.catalog.get(topic)
    if info is None:
        raise NotFound(f"unknown topic {topic!r}")
    if info.internal:
        raise BadRequest(f"{topic} is an internal topic")
    key = _text(body, "key")
    # No partition: a key's partition as the clients' default partitioner picks it.
    partition = body.get("partition")
    if partition is None:
        partition = 0 if key is None else (murmur2(key) & 0x7FFFFFFF) % info.partitions
    if isinstance(partition, bool) or not isinstance(partition, int):
        raise BadRequest(f"field partition must be an integer, got {partition!r}")
    if not 0 <= partition < info.partitions:
        raise BadRequest(f"{topic} has no partition {partition}")
    schema_id = body.get("schema_id")
    if schema_id is None:
        value = _text(body, "value")
    else:
        value = _encoded(view, schema_id, body.get("value"))
    if len(key or b"") + len(value or b"") > MAX_PRODUCE_BYTES:
        raise BadRequest(f"key and value exceed {MAX_PRODUCE_BYTES} bytes")
    leader = view.cluster_info.leader(topic, partition)
    if leader != view.cluster_info.node_id:
        # This node's log of a partition led elsewhere is a follower's copy: not to write.
        raise BadRequest(f"{topic}-{partition} is led by node {leader}; the console "
                         f"produces to the partitions of node {view.cluster_info.node_id}")
    plog = view.storage.logs.get(topic, partition)
    if plog is None:
        raise NotFound(f"partition {topic}-{partition} is not hosted by this node")
    now = view.clock.now_ms()
    batch = build_batch([NewRecord(key, value, now, _headers(body))], timestamp=now)
    try:
        schema_check = view.storage.schema_check
        if schema_check is not None:
            schema_check(topic, batch)
        base, last = plog.append(batch, from_client=True)
    except StorageError as e:
        raise BadRequest(f"{type(e).__name__}: {e}") from None
    metrics.produced(topic, last - base + 1, len(batch))
    return {"topic": topic, "partition": partition, "offset": base, "timestamp": now}


async def synced(view: BrokerView, topic: str, partition: int) -> None:
    """Under ``log.durable``, the partition's appends on disk before the page is answered,
    as a Produce request's are."""
    plog = view.storage.logs.get(topic, partition)
    if view.storage.logs.durable and plog is not None:
        await asyncio.get_running_loop().run_in_executor(None, fsync_and_close,
                                                         plog.sync_handles())
