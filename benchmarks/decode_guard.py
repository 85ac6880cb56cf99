"""Cost of the pre-decode bounds check (protocol.guard) beside kio's own decode.

    .venv/bin/python -m benchmarks.decode_guard
"""

from __future__ import annotations

import datetime
import timeit
from typing import Any

from kio.static.primitive import Records

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested


def produce_body(topics: int, partitions: int) -> tuple[codecs.ApiCodec, bytes]:
    c = codecs.codec(0, 9)
    req_t = c.request_type
    topic_t = nested(req_t, "TopicProduceData")
    part_t = nested(req_t, "PartitionProduceData")
    req = build(
        req_t, transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=1),
        topic_data=tuple(
            build(topic_t, name=f"topic-{t}", partition_data=tuple(
                build(part_t, index=p, records=Records(b"x" * 1000)) for p in range(partitions)
            ))
            for t in range(topics)
        ),
    )
    return c, codecs.encode_request(req)


def per_call_us(fn: Any, number: int = 20000) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main() -> None:
    for topics, partitions in ((1, 1), (2, 3), (10, 10)):
        c, body = produce_body(topics, partitions)
        guard = c.guard
        assert guard is not None
        g = per_call_us(lambda guard=guard, body=body: guard(body, 0, len(body)))
        d = per_call_us(lambda c=c, body=body: c.read_request(body, 0))
        print(f"produce v9 {topics} topic(s) x {partitions} partition(s): "
              f"bounds check {g:.2f} us, kio decode {d:.2f} us")
    hb = codecs.codec(12, 4)
    print(f"heartbeat v4: bounds check {'skipped (no arrays)' if hb.guard is None else 'run'}")


if __name__ == "__main__":
    main()
