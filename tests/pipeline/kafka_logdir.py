"""An Apache Kafka 3.x/4.x style log directory, written without kafkalite's code.

Record batches come from aiokafka's own builder (``DefaultRecordBatchBuilder``); the
``__consumer_offsets`` keys and values, and the consumer protocol inside them, are
encoded here with ``struct`` from Kafka's schemas, in every version Kafka writes:
OffsetCommitKey v0/v1, GroupMetadataKey v2, OffsetCommitValue v0-v4, GroupMetadataValue
v0-v4, KIP-848 consumer group records (key types 3-8) and tombstones. Beside the segments
are the files a Kafka broker keeps (indexes, checkpoints, ``meta.properties``, a
``-delete`` directory and the KRaft metadata log), which a reader must step over.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka.record.default_records import DefaultRecordBatchBuilder

T0 = 1_710_000_000_000
GROUP = "kafka-native"
NEW_GROUP = "kip848-group"


def _str(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _bytes(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _cstr(s: str | None) -> bytes:  # compact (flexible) string
    if s is None:
        return _uvarint(0)
    b = s.encode()
    return _uvarint(len(b) + 1) + b


def _cbytes(b: bytes) -> bytes:
    return _uvarint(len(b) + 1) + b


def subscription(topics: list[str]) -> bytes:
    return struct.pack(">hi", 0, len(topics)) + b"".join(_str(t) for t in topics) + _bytes(b"")


def assignment(parts: dict[str, list[int]]) -> bytes:
    out = struct.pack(">hi", 0, len(parts))
    for t, ps in parts.items():
        out += _str(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps)
    return out + _bytes(b"")


def offset_key(version: int, group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", version) + _str(group) + _str(topic) + struct.pack(">i", partition)


def group_key(group: str) -> bytes:
    return struct.pack(">h", 2) + _str(group)


def offset_value(version: int, offset: int, metadata: str, commit_ts: int,
                 leader_epoch: int = -1, expire_ts: int = -1) -> bytes:
    v = struct.pack(">h", version)
    if version == 0:
        return v + struct.pack(">q", offset) + _str(metadata) + struct.pack(">q", commit_ts)
    if version == 1:
        return v + struct.pack(">q", offset) + _str(metadata) + struct.pack(">qq", commit_ts,
                                                                             expire_ts)
    if version == 2:
        return v + struct.pack(">q", offset) + _str(metadata) + struct.pack(">q", commit_ts)
    if version == 3:
        return v + struct.pack(">qi", offset, leader_epoch) + _str(metadata) + \
            struct.pack(">q", commit_ts)
    return v + struct.pack(">qi", offset, leader_epoch) + _cstr(metadata) + \
        struct.pack(">q", commit_ts) + _uvarint(0)


@dataclass
class M:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    rebalance_ms: int
    session_ms: int
    topics: list[str]
    parts: dict[str, list[int]] = field(default_factory=dict)


def group_value(version: int, generation: int, protocol: str | None, leader: str | None,
                ts: int, members: list[M]) -> bytes:
    flex = version >= 4
    s = _cstr if flex else _str
    b = _cbytes if flex else _bytes
    out = struct.pack(">h", version) + s("consumer") + struct.pack(">i", generation) + \
        s(protocol) + s(leader)
    if version >= 2:
        out += struct.pack(">q", ts)
    out += _uvarint(len(members) + 1) if flex else struct.pack(">i", len(members))
    for m in members:
        out += s(m.member_id)
        if version >= 3:
            out += s(m.instance_id)
        out += s(m.client_id) + s(m.host)
        if version >= 1:
            out += struct.pack(">i", m.rebalance_ms)
        out += struct.pack(">i", m.session_ms) + b(subscription(m.topics)) + \
            b(assignment(m.parts))
        if flex:
            out += _uvarint(0)
    if flex:
        out += _uvarint(0)
    return out


def new_group_key(kind: int, group: str, member: str | None = None) -> bytes:
    return struct.pack(">h", kind) + _str(group) + (_str(member) if member is not None else b"")


class PartitionLog:
    """Segments of one partition, each batch from aiokafka's builder."""

    def __init__(self, root: Path, topic: str, partition: int) -> None:
        self.dir = root / f"{topic}-{partition}"
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "partition.metadata").write_text(
            "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
        (self.dir / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
        self.next = 0
        self.segment: Path | None = None

    def roll(self) -> None:
        self.segment = self.dir / f"{self.next:020d}.log"
        self.segment.touch()
        for ext in ("index", "timeindex"):
            (self.dir / f"{self.next:020d}.{ext}").write_bytes(b"\0" * 16)
        (self.dir / f"{self.next:020d}.snapshot").write_bytes(b"")

    def append(self, records: list[tuple[bytes | None, bytes | None, int, list[Any]]],
               codec: int = 0) -> None:
        if self.segment is None:
            self.roll()
        assert self.segment is not None
        b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                      producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                      batch_size=1 << 20)
        for i, (k, v, ts, headers) in enumerate(records):
            b.append(i, timestamp=ts, key=k, value=v, headers=headers)
        batch = bytearray(b.build())
        struct.pack_into(">q", batch, 0, self.next)  # base offset: outside the CRC
        with open(self.segment, "ab") as f:
            f.write(batch)
        self.next += len(records)


@dataclass
class Expected:
    """What each ``__consumer_offsets`` record must decode to."""

    commits: list[tuple[int, str, str, int, int, int, str, int, int]] = field(
        default_factory=list)  # key v, group, topic, partition, offset, epoch, meta, ts, expire
    groups: list[tuple[int, int, str | None, str | None, int, list[M]]] = field(
        default_factory=list)  # value v, generation, protocol, leader, ts, members
    new_group_kinds: list[int] = field(default_factory=list)
    tombstones: int = 0


def write_kafka_log_dir(root: Path) -> Expected:
    root.mkdir(parents=True, exist_ok=True)
    (root / "meta.properties").write_text(
        "version=1\ncluster.id=q1Sh-9_ISia_zwGINzRvyQ\nnode.id=1\n")
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                 "log-start-offset-checkpoint", "cleaner-offset-checkpoint"):
        (root / name).write_text("0\n0\n")
    meta = PartitionLog(root, "__cluster_metadata", 0)
    meta.append([(None, b"\x01\x03metadata-record", T0, [])])
    (meta.dir / "quorum-state").write_text("{}")

    for p in range(2):
        log = PartitionLog(root, "orders", p)
        for i in range(12):
            if i == 6:
                log.roll()  # a second segment, named by its base offset
            log.append([(b"k%d" % j if j % 2 else None, b"order-%d-%d-%d" % (p, i, j),
                         T0 + i * 1000 + j, [("source", b"kafka")] if j % 3 == 0 else [])
                        for j in range(1 + i % 4)], codec=i % 5)
    # A partition Kafka has renamed for deletion: not a partition any more.
    gone = PartitionLog(root, "orders-1.7e5c1a0b2d3f4e5a9b8c7d6e5f4a3b2c", 0)
    gone.append([(None, b"deleted", T0, [])])
    gone.dir.rename(root / "orders-1.7e5c1a0b2d3f4e5a9b8c7d6e5f4a3b2c-delete")

    exp = Expected()
    off = PartitionLog(root, "__consumer_offsets", 0)
    a = M("member-a", None, "app-a", "/10.0.0.1", 30000, 10000, ["orders"], {"orders": [0, 1]})
    b = M("member-b", "static-b", "app-b", "/10.0.0.2", 45000, 12000, ["orders"],
          {"orders": [1]})
    for gv, gen, members in ((0, 1, [a]), (1, 2, [a, b]), (2, 3, [a, b]), (3, 4, [a, b]),
                             (4, 5, [b])):
        ts = T0 + gen * 10_000
        # v0 has no rebalance timeout, v0-v2 no instance id: Kafka reads them as the session
        # timeout and null.
        seen = [M(m.member_id, m.instance_id if gv >= 3 else None, m.client_id, m.host,
                  m.rebalance_ms if gv >= 1 else m.session_ms, m.session_ms, m.topics, m.parts)
                for m in members]
        off.append([(group_key(GROUP), group_value(gv, gen, "range", members[0].member_id, ts,
                                                    members), ts, [])])
        exp.groups.append((gv, gen, "range", members[0].member_id, ts if gv >= 2 else -1, seen))
    for i, (kv, vv) in enumerate([(0, 0), (1, 1), (1, 2), (1, 3), (1, 4), (0, 3)]):
        ts = T0 + 1000 * i
        expire = ts + 86_400_000 if vv == 1 else -1
        epoch = 7 if vv >= 3 else -1
        off.append([(offset_key(kv, GROUP, "orders", i % 2),
                     offset_value(vv, 10 * (i + 1), f"meta-{vv}", ts, epoch, expire), ts, [])],
                   codec=1 if i == 3 else 0)
        exp.commits.append((kv, GROUP, "orders", i % 2, 10 * (i + 1), epoch, f"meta-{vv}", ts,
                            expire))
    # KIP-848 records: the group id is read from the key, the values are left opaque.
    for kind in range(3, 9):
        member = "m-1" if kind in (5, 7, 8) else None
        off.append([(new_group_key(kind, NEW_GROUP, member), b"\x00\x00opaque", T0, [])])
        exp.new_group_kinds.append(kind)
    off.append([(offset_key(1, GROUP, "orders", 1), None, T0 + 99_000, [])])  # tombstone
    exp.tombstones += 1
    return exp
