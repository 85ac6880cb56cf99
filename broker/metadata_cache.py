"""Each topic's Metadata entry, encoded once per response version and kept until the
topic changes, so a Metadata answer for thousands of partitions is a join of bytes.

What an entry holds (name, id, internal flag and each partition's leader, replicas, in-sync
replicas, leader epoch and offline replicas) changes only through the catalogue (created,
deleted, re-partitioned, re-configured: ``forget`` from the catalogue listener), a
partition log being opened or leading in a new epoch (``forget`` from the log manager)
and, with several nodes in the process, the controller: a partition's leader, ISR or
replicas changing (``forget`` from ``Controller.on_change``) and a node stopping,
starting, being fenced or unfenced (``Cluster.liveness``, checked by the handler with
``follow``: everything is forgotten). The nodes of one process share one controller, so
a topic's entry is the same whichever node answers; what differs per node (the broker
list on the client's listener) is built per request. Entries carrying per-principal
fields (authorized operations, for Metadata) or errors are never kept;
DescribeTopicPartitions keeps a topic's entry per set of authorized operations, and only
when answered whole.
"""

from __future__ import annotations

import io
import struct
import uuid
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from kio.serial import entity_writer

from kafkalite.protocol.varint import write_uvarint

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_PART = struct.Struct(">hii")
_PART_EPOCH = struct.Struct(">hiii")

#: One partition of a topic entry: (error code, index, leader, leader epoch, replicas,
#: in-sync replicas, offline replicas).
Partition = tuple[int, int, int, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]


class EncodedTopics:
    """key -> topic name -> the encoded entry (no error). The key says what the entry is
    for: Metadata's response version (operations omitted), or DescribeTopicPartitions'
    (api key, version, authorized operations)."""

    __slots__ = ("_by_version", "_liveness", "_writers")

    def __init__(self) -> None:
        self._by_version: dict[Hashable, dict[str, bytes]] = {}
        self._writers: dict[type[Any], Callable[[io.BytesIO, Any], None]] = {}
        self._liveness: Hashable = ()

    def follow(self, liveness: Hashable) -> None:
        """Forget every entry when the nodes' liveness (``Cluster.liveness``) is not what
        it was at the last answer: offline replicas, and the leaders and ISRs moved by a
        stop or a fence, may change in every topic."""
        if liveness != self._liveness:
            self._by_version.clear()
            self._liveness = liveness

    def table(self, key: Hashable) -> dict[str, bytes]:
        found = self._by_version.get(key)
        if found is None:
            found = self._by_version[key] = {}
        return found

    def forget(self, topic: str) -> None:
        for entries in self._by_version.values():
            entries.pop(topic, None)

    def clear(self) -> None:
        self._by_version.clear()

    def encode(self, entity: Any) -> bytes:
        """One nested entity (a topic entry) in the wire format of its version."""
        t = type(entity)
        write = self._writers.get(t)
        if write is None:
            write = self._writers[t] = entity_writer(t)
        buf = io.BytesIO()
        write(buf, entity)
        return buf.getvalue()


def splice_topics(version: int, empty: bytes, topics: list[bytes]) -> bytes:
    """The Metadata response body ``empty`` (encoded with no topics) with the encoded
    ``topics`` in its topic array. After the array come only fixed-size fields: the
    cluster's authorized operations (v8-v10), the top-level error code (v13+) and the
    empty tagged-field count (flexible versions, v9+)."""
    flexible = version >= 9
    tail = (4 if 8 <= version <= 10 else 0) + (2 if version >= 13 else 0) + (1 if flexible else 0)
    marker = 1 if flexible else 4  # the empty array's length
    head_end = len(empty) - tail - marker
    count = write_uvarint(len(topics) + 1) if flexible else _INT32.pack(len(topics))
    return b"".join((empty[:head_end], count, *topics, empty[head_end + marker:]))


def encode_topic_entry(version: int, name: str, topic_id: uuid.UUID, internal: bool,
                       partitions: Sequence[Partition], operations: int) -> bytes:
    """A Metadata topic entry (with a name) in ``version``'s wire format, written directly:
    the generic entity writer costs tens of microseconds a partition, which the first
    answer after a restart paid for every partition of every topic. Fields by version,
    as Kafka's MetadataResponse.json: topic id v10+, is_internal v1+, leader epoch v7+,
    offline replicas v5+, authorized operations v8+, flexible (compact lengths and tagged
    fields) v9+. Checked against kio's writer for every version in the tests."""
    flexible = version >= 9
    out: list[bytes] = []
    add = out.append
    raw = name.encode()
    add(_INT16.pack(0))  # error code: entries with errors go through the generic writer
    add(write_uvarint(len(raw) + 1) if flexible else _INT16.pack(len(raw)))
    add(raw)
    if version >= 10:
        add(topic_id.bytes)
    if version >= 1:
        add(b"\x01" if internal else b"\x00")
    add(write_uvarint(len(partitions) + 1) if flexible else _INT32.pack(len(partitions)))
    # Most partitions share their replica lists (one node: all the same), so each distinct
    # list is encoded once.
    arrays: dict[tuple[int, ...], bytes] = {}

    def array(nodes: tuple[int, ...]) -> bytes:
        found = arrays.get(nodes)
        if found is None:
            n = len(nodes)
            head = write_uvarint(n + 1) if flexible else _INT32.pack(n)
            found = arrays[nodes] = head + struct.pack(f">{n}i", *nodes)
        return found

    with_epoch = version >= 7
    for error, index, leader, epoch, replicas, isr, offline in partitions:
        add(_PART_EPOCH.pack(error, index, leader, epoch) if with_epoch
            else _PART.pack(error, index, leader))
        add(array(replicas))
        add(array(isr))
        if version >= 5:
            add(array(offline))
        if flexible:
            add(b"\x00")
    if version >= 8:
        add(_INT32.pack(operations))
    if flexible:
        add(b"\x00")
    return b"".join(out)
