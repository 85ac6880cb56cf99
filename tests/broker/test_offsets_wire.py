"""The hand-encoded OffsetCommit and OffsetFetch responses are byte for byte what kio
encodes, for every version served."""

from __future__ import annotations

import pytest

from kafkalite.broker.handlers.groups import offsets_wire
from kafkalite.broker.handlers.groups.offsets import OFFSET_COMMIT, OFFSET_FETCH
from kafkalite.broker.handlers.groups.offsets_wire import (
    encode_commit_response,
    encode_fetch_response,
)
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.names import NO_THROTTLE


@pytest.mark.parametrize("version", range(2, 10))
def test_commit_response_matches_kio(version: int) -> None:
    req_t = codecs.codec(OFFSET_COMMIT, version).request_type
    rtopic = nested(req_t, "OffsetCommitRequestTopic")
    rpart = nested(req_t, "OffsetCommitRequestPartition")
    req = build(req_t, group_id="g", generation_id_or_member_epoch=-1, member_id="",
                topics=(build(rtopic, name="orders", partitions=tuple(
                    build(rpart, partition_index=i, committed_offset=i, committed_metadata="")
                    for i in (0, 3, 7))),
                        build(rtopic, name="émoji-topic", partitions=(
                            build(rpart, partition_index=1, committed_offset=5,
                                  committed_metadata=""),))))
    errors = {("orders", 3): ErrorCode.offset_metadata_too_large,
              ("émoji-topic", 1): ErrorCode.unknown_topic_or_partition}
    c = codecs.codec(OFFSET_COMMIT, version)
    resp_t = c.response_type
    topic_t = nested(resp_t, "OffsetCommitResponseTopic")
    part_t = nested(resp_t, "OffsetCommitResponsePartition")
    expected = build(resp_t, throttle_time=NO_THROTTLE, topics=tuple(
        build(topic_t, name=t.name, partitions=tuple(
            build(part_t, partition_index=p.partition_index,
                  error_code=errors.get((t.name, p.partition_index), ErrorCode.none))
            for p in t.partitions))
        for t in req.topics))
    assert encode_commit_response(version, req.topics, errors) == c.encode_response(expected)
    # Every partition answered the same error (a group authorization failure).
    denied = build(resp_t, throttle_time=NO_THROTTLE, topics=tuple(
        build(topic_t, name=t.name, partitions=tuple(
            build(part_t, partition_index=p.partition_index,
                  error_code=ErrorCode.group_authorization_failed) for p in t.partitions))
        for t in req.topics))
    assert encode_commit_response(version, req.topics, {},
                                  ErrorCode.group_authorization_failed) == c.encode_response(denied)


ROWS = [("orders", [(0, 42, 3, "", 0), (5, -1, -1, "", 0)]),
        ("émoji", [(1, 7, -1, "some metadata", int(ErrorCode.unstable_offset_commit))])]


@pytest.mark.parametrize("version", range(1, 10))
def test_fetch_response_matches_kio(version: int) -> None:
    c = codecs.codec(OFFSET_FETCH, version)
    resp_t = c.response_type
    grouped = version >= 8
    topic_t = nested(resp_t, "OffsetFetchResponseTopics" if grouped
                     else "OffsetFetchResponseTopic")
    part_t = nested(resp_t, "OffsetFetchResponsePartitions" if grouped
                    else "OffsetFetchResponsePartition")
    topics = tuple(build(topic_t, name=t, partitions=tuple(
        build(part_t, partition_index=p, committed_offset=o, committed_leader_epoch=e,
              metadata=m, error_code=ErrorCode(err)) for p, o, e, m, err in parts))
        for t, parts in ROWS)
    if grouped:
        group_t = nested(resp_t, "OffsetFetchResponseGroup")
        expected = build(resp_t, throttle_time=NO_THROTTLE, groups=(
            build(group_t, group_id="g1", topics=topics, error_code=ErrorCode.none),
            build(group_t, group_id="g2", topics=(),
                  error_code=ErrorCode.group_authorization_failed)))
        groups = [("g1", 0, ROWS), ("g2", int(ErrorCode.group_authorization_failed), [])]
    else:
        expected = build(resp_t, throttle_time=NO_THROTTLE, topics=topics,
                         error_code=ErrorCode.coordinator_load_in_progress)
        groups = [("g1", int(ErrorCode.coordinator_load_in_progress), ROWS)]
    assert encode_fetch_response(version, groups) == c.encode_response(expected)


def test_name_cache_is_bounded() -> None:
    """Names are kept for reuse only up to a length and a count: clients choose them."""
    long_name = "g" * (offsets_wire._NAME_MAX_CHARS + 1)
    # A compact string's length is a varint of length + 1: 257 is 0x81 0x02.
    assert offsets_wire._name(long_name, True) == b"\x81\x02" + long_name.encode()
    assert long_name not in offsets_wire._NAMES[True]
    for i in range(offsets_wire._NAMES_MAX + 10):
        assert offsets_wire._name(f"group-{i}", False) == \
            len(f"group-{i}").to_bytes(2, "big") + f"group-{i}".encode()
    assert len(offsets_wire._NAMES[False]) <= offsets_wire._NAMES_MAX
    # The same name is written per its version's flexibility, whichever came first.
    assert offsets_wire._name("orders", True) == b"\x07orders"
    assert offsets_wire._name("orders", False) == b"\x00\x06orders"
