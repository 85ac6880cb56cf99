"""The hand-encoded OffsetCommit response is byte for byte what kio encodes, v2 to v9."""

from __future__ import annotations

import pytest

from kafkalite.broker.handlers.offsets import OFFSET_COMMIT, encode_commit_response
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
