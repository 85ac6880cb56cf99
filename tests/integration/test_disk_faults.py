"""Disk faults beneath the log: a segment write that fails (a full disk, ENOSPC, or an
I/O error, EIO) after writing part of the batch, and with ``log.durable`` an fsync that
fails. Produce answers KAFKA_STORAGE_ERROR; offset commits and the group store of a
SyncGroup answer NOT_COORDINATOR (as Kafka's GroupMetadataManager maps
KAFKA_STORAGE_ERROR); reads go on being served; once the disk takes writes again
everything works and nothing torn is left in the segment."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class
from kafkalite.protocol.build import build
from kafkalite.storage import segment as segment_module

STORAGE_ERROR = KafkaError.KAFKA_STORAGE_ERROR
NOT_COORDINATOR = 16


class FullDisk:
    """Makes segment writes under a directory fail (ENOSPC by default) after half the
    bytes, and fsyncs of its files fail."""

    def __init__(self, directory_part: str, code: int = errno.ENOSPC) -> None:
        self.part = directory_part
        self.code = code
        self.on = False
        self.failed = 0
        self.fsync_on = False
        self.fsync_failed = 0
        self._writev: Callable[..., int] = os.writev
        self._fsync: Callable[[int], None] = os.fsync

    def writev(self, fd: int, buffers: Any) -> int:
        if self.on and self.part in os.readlink(f"/proc/self/fd/{fd}"):
            data = b"".join(bytes(b) for b in buffers)
            os.write(fd, data[: len(data) // 2])  # part of the batch reaches the file
            self.failed += 1
            raise OSError(self.code, os.strerror(self.code))
        return self._writev(fd, buffers)

    def fsync(self, fd: int) -> None:
        if self.fsync_on and self.part in os.readlink(f"/proc/self/fd/{fd}"):
            self.fsync_failed += 1
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        self._fsync(fd)


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., FullDisk]]:
    def make(part: str, code: int = errno.ENOSPC) -> FullDisk:
        fault = FullDisk(part, code)
        # os is one module: the broker thread's segment writes and fsyncs see the fault.
        monkeypatch.setattr(segment_module.os, "writev", fault.writev)
        monkeypatch.setattr(segment_module.os, "fsync", fault.fsync)
        return fault

    yield make


def produce(p: Producer, topic: str, value: bytes) -> Any:
    got: list[Any] = []
    p.produce(topic, value, on_delivery=lambda err, msg: got.append((err, msg)))
    p.flush(20)
    assert got, "no delivery report"
    return got[0]


def read_values(bootstrap: str, topic: str, expect: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "disk-reader",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(out) < expect and time.monotonic() < deadline:
        out += [m.value() for m in c.consume(100, 0.5) if m.error() is None]
    c.close()
    return out


def whole_batches(path: Path) -> bool:
    data = path.read_bytes()
    pos = 0
    while pos + 12 <= len(data):
        pos += int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
    return pos == len(data)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO], ids=["full-disk", "io-error"])
def test_produce_on_a_failing_disk_answers_storage_error_and_recovers(
    tmp_path: Path, full_disk: Callable[..., FullDisk], code: int
) -> None:
    with BrokerThread(tmp_path / "data") as b:
        fault = full_disk("disky-0", code)
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "retries": 0,
                      "linger.ms": 0})
        for i in range(5):
            err, _msg = produce(p, "disky", f"m{i}".encode())
            assert err is None
        fault.on = True
        err, _msg = produce(p, "disky", b"lost")
        assert err is not None and err.code() == STORAGE_ERROR
        assert fault.failed >= 1
        # Reads are served while writes fail.
        assert read_values(b.bootstrap, "disky", 5) == [f"m{i}".encode() for i in range(5)]
        fault.on = False
        err, msg = produce(p, "disky", b"m5")
        assert err is None and msg.offset() == 5
        assert read_values(b.bootstrap, "disky", 6) == [f"m{i}".encode() for i in range(6)]
        seg = tmp_path / "data" / "disky-0" / "00000000000000000000.log"
        assert whole_batches(seg)
    # And the log reloads to the same six records.
    with BrokerThread(tmp_path / "data") as b:
        assert read_values(b.bootstrap, "disky", 6) == [f"m{i}".encode() for i in range(6)]


def _commit(conn: RawConnection, group: str, offset: int) -> int:
    v = conn.version(8, 8)
    topic_t = request_class(8, v, "OffsetCommitRequestTopic")
    part_t = request_class(8, v, "OffsetCommitRequestPartition")
    resp = conn.call(request(
        8, v, group_id=group, generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=(topic_t(name="disky", partitions=(part_t(
            partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
            committed_metadata=""),)),)))
    return int(resp.topics[0].partitions[0].error_code)


def _fetch(conn: RawConnection, group: str) -> int:
    v = conn.version(9, 8)
    group_t = request_class(9, v, "OffsetFetchRequestGroup")
    topics_t = request_class(9, v, "OffsetFetchRequestTopics")
    resp = conn.call(request(9, v, require_stable=False, groups=(build(
        group_t, group_id=group, member_id=None, member_epoch=-1,
        topics=(build(topics_t, name="disky", partition_indexes=(0,)),)),)))
    return int(resp.groups[0].topics[0].partitions[0].committed_offset)


def test_offset_and_group_writes_on_a_full_disk_answer_not_coordinator(
    tmp_path: Path, full_disk: Callable[..., FullDisk]
) -> None:
    with BrokerThread(tmp_path / "data") as b:
        p = Producer({"bootstrap.servers": b.bootstrap})
        assert produce(p, "disky", b"x")[0] is None
        conn = RawConnection(b.bootstrap)
        assert _commit(conn, "g", 1) == 0
        fault = full_disk("__consumer_offsets")
        fault.on = True
        assert _commit(conn, "g", 2) == NOT_COORDINATOR
        assert _fetch(conn, "g") == 1  # reads keep being served, the failed write left no trace
        # A consumer group cannot store its assignment while the disk is full...
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "disk-group",
                      "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
        c.subscribe(["disky"])
        for _ in range(10):
            c.poll(0.2)
        assert c.assignment() == []
        assert fault.failed >= 2
        # ...and forms, commits and reads once it can write again.
        fault.on = False
        got = None
        deadline = time.monotonic() + 30
        while got is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got = m
        assert got is not None and got.value() == b"x"
        c.commit(asynchronous=False)
        assert c.committed([TopicPartition("disky", 0)], 10)[0].offset == 1
        c.close()
        assert _commit(conn, "g", 3) == 0 and _fetch(conn, "g") == 3
        conn.close()


def test_durable_produce_whose_fsync_fails_answers_storage_error(
    tmp_path: Path, full_disk: Callable[..., FullDisk]
) -> None:
    with BrokerThread(tmp_path / "data", {"log.durable": "true"}) as b:
        fault = full_disk("synced-0")
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "retries": 0,
                      "linger.ms": 0})
        assert produce(p, "synced", b"m0")[0] is None
        fault.fsync_on = True
        err, _msg = produce(p, "synced", b"not-synced")
        assert err is not None and err.code() == STORAGE_ERROR
        assert fault.fsync_failed >= 1
        fault.fsync_on = False
        err, msg = produce(p, "synced", b"m2")
        assert err is None
        # The unsynced batch is in the segment (the write went through): readers see it.
        assert read_values(b.bootstrap, "synced", 3) == [b"m0", b"not-synced", b"m2"]
        assert msg.offset() == 2


def _join_and_sync(conn: RawConnection, group: str) -> tuple[int, int]:
    """JoinGroup (again when asked for a member id), then SyncGroup as the leader:
    (JoinGroup error, SyncGroup error)."""
    jv, sv = conn.version(11, 9), conn.version(14, 5)
    proto_t = request_class(11, jv, "JoinGroupRequestProtocol")
    assign_t = request_class(14, sv, "SyncGroupRequestAssignment")
    member = ""
    for _ in range(3):
        j = conn.call(request(
            11, jv, group_id=group, session_timeout=timedelta(seconds=6),
            rebalance_timeout=timedelta(seconds=6), member_id=member, group_instance_id=None,
            protocol_type="consumer", reason=None,
            protocols=(proto_t(name="range", metadata=b""),)))
        member = j.member_id
        if int(j.error_code) != 79:  # MEMBER_ID_REQUIRED
            break
    if int(j.error_code):
        return int(j.error_code), -1
    s = conn.call(request(
        14, sv, group_id=group, generation_id=j.generation_id, member_id=member,
        group_instance_id=None, protocol_type="consumer", protocol_name=j.protocol_name,
        assignments=(assign_t(member_id=member, assignment=b""),)))
    return 0, int(s.error_code)


def test_group_store_of_a_sync_group_on_a_full_disk_answers_not_coordinator(
    tmp_path: Path, full_disk: Callable[..., FullDisk]
) -> None:
    with BrokerThread(tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"}) as b:
        conn = RawConnection(b.bootstrap)
        assert _join_and_sync(conn, "warm-up") == (0, 0)  # __consumer_offsets exists
        fault = full_disk("__consumer_offsets", errno.EIO)
        fault.on = True
        assert _join_and_sync(conn, "stored-group") == (0, NOT_COORDINATOR)
        assert fault.failed >= 1
        fault.on = False
        # The failed store sent the group back to rebalancing; it forms once it can write.
        assert _join_and_sync(conn, "stored-group") == (0, 0)
        conn.close()
