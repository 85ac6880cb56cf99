"""OffsetCommit v2-v9 and OffsetFetch v1-v9 over a raw socket: every version commits and
reads back; null topics (all), the batched multi-group form, unknown partitions, errors."""

from __future__ import annotations

import datetime
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol.apis import codec, decode_response, encode_request
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import ErrorCode as E
from kafkalite.protocol.headers import encode_request_header, parse_response_header

OFFSET_COMMIT, OFFSET_FETCH, OFFSET_DELETE = 8, 9, 47


class Raw:
    def __init__(self, bootstrap: str) -> None:
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), 10)
        self.corr = 0

    def call(self, api_key: int, version: int, **fields: Any) -> Any:
        c = codec(api_key, version)
        req = build(c.request_type, **fields)
        self.corr += 1
        body = encode_request_header(api_key, version, self.corr, "raw",
                                     c.request_flexible) + encode_request(req)
        self.sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", self._exact(4))[0]
        frame = self._exact(size)
        _corr, off = parse_response_header(frame, c.response_header_flexible)
        return decode_response(api_key, version, frame, off)

    def _exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            assert chunk, "connection closed"
            out += chunk
        return out


def commit(raw: Raw, v: int, group: str, topic: str, partition: int, offset: int,
           metadata: str = "", generation: int = -1, member: str = "") -> int:
    req_t = codec(OFFSET_COMMIT, v).request_type
    topic_t, part_t = (nested(req_t, "OffsetCommitRequestTopic"),
                       nested(req_t, "OffsetCommitRequestPartition"))
    resp = raw.call(OFFSET_COMMIT, v, group_id=group, generation_id_or_member_epoch=generation,
                    member_id=member, group_instance_id=None,
                    retention_time=datetime.timedelta(milliseconds=-1),
                    topics=(build(topic_t, name=topic, partitions=(build(
                        part_t, partition_index=partition, committed_offset=offset,
                        committed_leader_epoch=3, committed_metadata=metadata),)),))
    return int(resp.topics[0].partitions[0].error_code)


def fetch_v7(raw: Raw, v: int, group: str, topics: dict[str, list[int]] | None) -> Any:
    req_t = codec(OFFSET_FETCH, v).request_type
    topic_t = nested(req_t, "OffsetFetchRequestTopic")
    return raw.call(OFFSET_FETCH, v, group_id=group, require_stable=True,
                    topics=None if topics is None else tuple(
                        build(topic_t, name=t, partition_indexes=tuple(ps))
                        for t, ps in topics.items()))


def _create(broker: BrokerThread, topic: str, partitions: int) -> None:
    assert broker.broker is not None
    b = broker.broker
    broker.call(lambda: b.create_topic(topic, partitions))


def test_every_version_commits_and_fetches(broker: BrokerThread) -> None:
    _create(broker, "t", 2)
    raw = Raw(broker.bootstrap)
    for v in range(2, 10):
        assert commit(raw, v, f"g{v}", "t", 0, 100 + v, f"m{v}") == E.none
    for v in range(1, 8):
        resp = fetch_v7(raw, v, f"g{v + 1}", {"t": [0, 1]})
        parts = {p.partition_index: p for p in resp.topics[0].partitions}
        assert parts[0].committed_offset == 101 + v and parts[0].metadata == f"m{v + 1}"
        assert parts[1].committed_offset == -1 and parts[1].metadata == ""
        if v >= 5:
            # Leader epochs are kept from OffsetCommit v6 on.
            assert parts[0].committed_leader_epoch == (3 if v + 1 >= 6 else -1)
    # Null topics: everything the group has (v2+).
    resp = fetch_v7(raw, 7, "g9", None)
    assert [(t.name, [p.committed_offset for p in t.partitions]) for t in resp.topics] == [
        ("t", [109])]
    # v8+: several groups in one request, one with nothing committed.
    for v in (8, 9):
        req_t = codec(OFFSET_FETCH, v).request_type
        group_t = nested(req_t, "OffsetFetchRequestGroup")
        resp = raw.call(OFFSET_FETCH, v, require_stable=False, groups=(
            build(group_t, group_id="g8", member_id=None, member_epoch=-1, topics=None),
            build(group_t, group_id="nothing", member_id=None, member_epoch=-1, topics=None),
        ))
        assert [(g.group_id, g.error_code) for g in resp.groups] == [
            ("g8", E.none), ("nothing", E.none)]
        assert resp.groups[0].topics[0].partitions[0].committed_offset == 108
        assert resp.groups[1].topics == ()


def test_commit_errors_and_offset_delete(broker: BrokerThread) -> None:
    _create(broker, "t", 1)
    raw = Raw(broker.bootstrap)
    # As Kafka: partitions of unknown topics are not committed.
    assert commit(raw, 8, "g", "nosuch", 0, 1) == E.unknown_topic_or_partition
    assert commit(raw, 8, "g", "t", 5, 1) == E.unknown_topic_or_partition
    assert fetch_v7(raw, 7, "g", None).topics == ()
    # A member commit to a group that does not exist.
    assert commit(raw, 8, "ghost", "t", 0, 1, generation=1, member="m") == E.illegal_generation
    assert commit(raw, 9, "ghost", "t", 0, 1, generation=1, member="m") == E.group_id_not_found
    assert commit(raw, 8, "big", "t", 0, 1, metadata="x" * 5000) == E.offset_metadata_too_large
    assert commit(raw, 8, "", "t", 0, 1) == E.invalid_group_id
    # A simple group: generation -1 commits create it; OffsetDelete removes offsets.
    assert commit(raw, 8, "simple", "t", 0, 5) == E.none
    req_t = codec(OFFSET_DELETE, 0).request_type
    topic_t, part_t = (nested(req_t, "OffsetDeleteRequestTopic"),
                       nested(req_t, "OffsetDeleteRequestPartition"))
    resp = raw.call(OFFSET_DELETE, 0, group_id="simple", topics=(
        build(topic_t, name="t", partitions=(build(part_t, partition_index=0),)),))
    assert resp.error_code == E.none
    assert resp.topics[0].partitions[0].error_code == E.none
    assert fetch_v7(raw, 7, "simple", None).topics == ()
    resp = raw.call(OFFSET_DELETE, 0, group_id="simple", topics=(
        build(topic_t, name="t", partitions=(build(part_t, partition_index=0),
                                             build(part_t, partition_index=3))),))
    assert [(p.partition_index, p.error_code) for p in resp.topics[0].partitions] == [
        (0, E.none), (3, E.unknown_topic_or_partition)]
    resp = raw.call(OFFSET_DELETE, 0, group_id="nope", topics=())
    assert resp.error_code == E.group_id_not_found


def test_retention_expires_offsets_and_removes_the_group(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker({"offsets.retention.check.interval.ms": "100"})
    _create(broker, "t", 1)
    raw = Raw(broker.bootstrap)
    req_t = codec(OFFSET_COMMIT, 2).request_type
    topic_t, part_t = (nested(req_t, "OffsetCommitRequestTopic"),
                       nested(req_t, "OffsetCommitRequestPartition"))
    # v2 carries retention_time: the commit expires 300 ms after it was made.
    resp = raw.call(OFFSET_COMMIT, 2, group_id="short", generation_id_or_member_epoch=-1,
                    member_id="", retention_time=datetime.timedelta(milliseconds=300),
                    topics=(build(topic_t, name="t", partitions=(build(
                        part_t, partition_index=0, committed_offset=7,
                        committed_metadata=""),)),))
    assert resp.topics[0].partitions[0].error_code == E.none
    assert fetch_v7(raw, 7, "short", {"t": [0]}).topics[0].partitions[0].committed_offset == 7
    listed = raw.call(16, 4, states_filter=())
    assert "short" in [g.group_id for g in listed.groups]
    deadline = time.monotonic() + 10
    while fetch_v7(raw, 7, "short", {"t": [0]}).topics[0].partitions[0].committed_offset != -1:
        assert time.monotonic() < deadline, "the offset never expired"
        time.sleep(0.05)
    listed = raw.call(16, 4, states_filter=())
    assert "short" not in [g.group_id for g in listed.groups]
