"""The hand-written Fetch response encoder produces exactly kio's bytes, every version."""

from __future__ import annotations

import datetime
import uuid

import pytest

from kafkalite.broker.handlers.data.fetch import PartitionResult, encode_response
from kafkalite.protocol.apis import codec
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import ErrorCode
from kafkalite.storage.txn_index import AbortedTxn

TOPIC_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


@pytest.mark.parametrize("version", range(4, 19))
@pytest.mark.parametrize("read_committed", [False, True])
@pytest.mark.parametrize("session_id", [0, 2_000_000_001])
def test_matches_kio(version: int, read_committed: bool, session_id: int) -> None:
    resp_t = codec(1, version).response_type
    part_t = nested(resp_t, "PartitionData")
    topic_t = nested(resp_t, "FetchableTopicResponse")
    aborted_t = nested(resp_t, "AbortedTransaction")
    txns = [AbortedTxn(7, 3, 9, 4), AbortedTxn(2**40, 5, 12, 13)]
    rows = [PartitionResult(0, 0, 10, 2, b"\x01" * 300, lso=4,
                            aborted=txns if read_committed else None),
            PartitionResult(3, ErrorCode.offset_out_of_range.value, 7, 1),
            PartitionResult(1, 0, 5, 0, b"")]

    def aborted(r: PartitionResult) -> tuple[object, ...] | None:
        if not read_committed:
            return None
        return tuple(build(aborted_t, producer_id=t.producer_id, first_offset=t.first_offset)
                     for t in r.aborted or ())

    parts = tuple(
        build(part_t, partition_index=r.partition, error_code=ErrorCode(r.error),
              high_watermark=r.high_watermark, last_stable_offset=r.lso,
              log_start_offset=r.log_start, aborted_transactions=aborted(r),
              preferred_read_replica=-1, records=r.records)
        for r in rows
    )
    key: str | uuid.UUID = TOPIC_ID if version >= 13 else "topic-a"
    expected = codec(1, version).encode_response(build(
        resp_t, throttle_time=datetime.timedelta(0), error_code=ErrorCode.none,
        session_id=session_id,
        responses=(build(topic_t, topic="topic-a", topic_id=TOPIC_ID, partitions=parts),),
    ))
    assert encode_response(version, [(key, rows)], read_committed=read_committed,
                           session_id=session_id) == expected
