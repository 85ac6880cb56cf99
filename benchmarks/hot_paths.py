"""CPU time of the hot request paths in one process, through the broker's own dispatch
(``KafkaApis.handle`` on an encoded frame: header, authorization, handler, coordinator,
append, response), without sockets, so that two checkouts can be compared on a busy
machine: ApiVersions v3, Heartbeat v4 of a joined member, OffsetCommit v8 and
OffsetFetch v8 of one partition (as ``benchmarks.offsets`` sends them), Produce v9
(acks=1) of one batch of 100 records of 100 bytes to one partition (as a producer's
linger gathers them), a sessionless Fetch v12 of that first batch, and Metadata v12 of
that topic (as a producer asks for it, printed after the other rounds). Produce appends
about 12 KB per call to a temporary data directory (ROUNDS times N calls), removed at the
end.

```
python benchmarks/hot_paths.py ROUNDS N     # one JSON line per round: µs of CPU per call
PROFILE=commit python benchmarks/hot_paths.py 1 N   # cProfile of one path instead
QUOTA=1 python benchmarks/hot_paths.py ROUNDS N    # with a client quota set (not this client's)
```

Run as a file, it measures whichever kafkalite the interpreter imports (older checkouts,
with ``broker/config.py``, included): run it with each checkout's interpreter, taking turns,
and compare best and median per side. Garbage collection is off while a round runs
(``GC=1`` leaves it on).
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.modules["hypothesis"] = None  # type: ignore[assignment]  # as `kafkalite serve`

try:
    from kafkalite.broker.config.properties import Config
except ImportError:
    from kafkalite.broker.config import Config  # type: ignore[no-redef]
from kafkalite.broker.compose import build_broker  # noqa: E402
from kafkalite.protocol.apis import codec, decode_response, encode_request  # noqa: E402
from kafkalite.protocol.build import build, nested  # noqa: E402
from kafkalite.protocol.headers import encode_request_header, parse_response_header  # noqa: E402
from kafkalite.protocol.records import NewRecord, build_batch  # noqa: E402

JOIN, SYNC, HEARTBEAT, COMMIT, FETCH, CREATE, PRODUCE = 11, 14, 12, 8, 9, 19, 0
DATA_FETCH = 1
GROUP, TOPIC = "hot-group", "hot-topic"
#: Commits as benchmarks.offsets sends them: generation -1, to a group with no members.
COMMITS = "hot-commits"


class Conn:
    principal = "User:ANONYMOUS"
    peer_host = "127.0.0.1"
    peer_port = 40000
    listener_name = "PLAINTEXT"
    connection_id = 1
    client_id_raw: bytes | None = None
    client_id: str | None = None
    received_at = 0.0


def req(key: int, ver: int, **fields: Any) -> Any:
    return build(codec(key, ver).request_type, **fields)


def cls(key: int, ver: int, name: str) -> Any:
    return nested(codec(key, ver).request_type, name)


def frame(r: Any, corr: int = 1) -> bytes:
    key, ver = int(r.__api_key__), int(r.__version__)
    c = codec(key, ver)
    return encode_request_header(key, ver, corr, "hot", c.request_flexible) + encode_request(r)


async def call(apis: Any, conn: Conn, r: Any) -> Any:
    out = apis.handle(conn, frame(r))
    if inspect.isawaitable(out):
        out = await out
    key, ver = int(r.__api_key__), int(r.__version__)
    body = bytes(out)
    _corr, off = parse_response_header(body[4:], codec(key, ver).response_header_flexible)
    return decode_response(key, ver, body[4:], off)


async def main(rounds: int, n: int) -> None:
    d = Path(tempfile.mkdtemp(prefix="hot-"))
    config = Config.build(None, overrides={"log.dirs": str(d / "data"),
                                           "listeners": "PLAINTEXT://127.0.0.1:0",
                                           "group.initial.rebalance.delay.ms": "0"})
    broker = build_broker(config)
    await broker.start()
    apis, conn = broker.apis, Conn()
    topic_t = cls(CREATE, 7, "CreatableTopic")
    await call(apis, conn, req(CREATE, 7, topics=(topic_t(
        name=TOPIC, num_partitions=1, replication_factor=1, assignments=(), configs=()),),
        timeout=timedelta(seconds=5), validate_only=False))
    proto = cls(JOIN, 9, "JoinGroupRequestProtocol")
    member = ""
    for _ in range(50):
        r = await call(apis, conn, req(
            JOIN, 9, group_id=GROUP, session_timeout=timedelta(seconds=30),
            rebalance_timeout=timedelta(seconds=30), member_id=member,
            group_instance_id=None, protocol_type="consumer", reason=None,
            protocols=(proto(name="range", metadata=b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"),)))
        if int(r.error_code) in (79,):
            member = r.member_id
            continue
        if int(r.error_code) == 14 or int(r.error_code) == 15:  # loading / not available
            await asyncio.sleep(0.05)
            continue
        break
    assert int(r.error_code) == 0, r
    member, gen = r.member_id, int(r.generation_id)
    assign = cls(SYNC, 5, "SyncGroupRequestAssignment")
    s = await call(apis, conn, req(SYNC, 5, group_id=GROUP, generation_id=gen, member_id=member,
                                   group_instance_id=None, protocol_type="consumer",
                                   protocol_name="range",
                                   assignments=(assign(member_id=member, assignment=b""),)))
    assert int(s.error_code) == 0, s
    hb = frame(req(HEARTBEAT, 4, group_id=GROUP, generation_id=gen, member_id=member,
                   group_instance_id=None))
    ct = cls(COMMIT, 8, "OffsetCommitRequestTopic")
    cp = cls(COMMIT, 8, "OffsetCommitRequestPartition")

    def commit(offset: int) -> bytes:
        return frame(req(COMMIT, 8, group_id=COMMITS, generation_id_or_member_epoch=-1,
                         member_id="", group_instance_id=None,
                         topics=(ct(name=TOPIC, partitions=(cp(
                             partition_index=0, committed_offset=offset,
                             committed_leader_epoch=-1, committed_metadata=""),)),)))

    fg = cls(FETCH, 8, "OffsetFetchRequestGroup")
    ft = cls(FETCH, 8, "OffsetFetchRequestTopics")
    fetch = frame(req(FETCH, 8, require_stable=False, groups=(build(
        fg, group_id=COMMITS, member_id=None, member_epoch=-1,
        topics=(ft(name=TOPIC, partition_indexes=(0,)),)),)))
    commits = [commit(i) for i in range(n)]
    now_ms = int(time.time() * 1000)
    batch = build_batch([NewRecord(b"key", b"v" * 100)] * 100, timestamp=now_ms)
    pt = cls(PRODUCE, 9, "TopicProduceData")
    pp = cls(PRODUCE, 9, "PartitionProduceData")
    produce = frame(req(PRODUCE, 9, transactional_id=None, acks=1,
                        timeout=timedelta(seconds=5), topic_data=(pt(
                            name=TOPIC, partition_data=(pp(index=0, records=batch),)),)))
    versions = frame(req(18, 3, client_software_name="hot", client_software_version="1"))
    mt = cls(3, 12, "MetadataRequestTopic")
    metadata = frame(req(3, 12, topics=(mt(topic_id=None, name=TOPIC),),
                         allow_auto_topic_creation=True, include_topic_authorized_operations=False))
    dt, dp = cls(DATA_FETCH, 12, "FetchTopic"), cls(DATA_FETCH, 12, "FetchPartition")
    fetch_req = req(DATA_FETCH, 12, replica_id=-1, max_wait=timedelta(0), min_bytes=1,
                        max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                        topics=(dt(topic=TOPIC, partitions=(dp(
                            partition=0, current_leader_epoch=-1, fetch_offset=0,
                            last_fetched_epoch=-1, log_start_offset=-1,
                            partition_max_bytes=16384),)),),
                        forgotten_topics_data=(), rack_id="")
    records = frame(fetch_req)
    if os.environ.get("QUOTA"):
        from kafkalite.broker.quotas import Alteration

        apis.quota_managers.store.alter([Alteration({"client-id": "other"}, (
            ("producer_byte_rate", 1e6), ("consumer_byte_rate", 1e6)))], False)
        assert apis.quota_managers.enabled
    handle = apis.handle

    async def run_sync(frames: list[bytes]) -> float:
        gc.collect()
        if not os.environ.get("GC"):
            gc.disable()
        t0 = time.process_time()
        for f in frames:
            out = handle(conn, f)
            if inspect.isawaitable(out):
                await out
        t = time.process_time() - t0
        gc.enable()
        return t / len(frames) * 1e6

    # warm up, and check the answers
    first = await call(apis, conn, req(HEARTBEAT, 4, group_id=GROUP, generation_id=gen,
                                       member_id=member, group_instance_id=None))
    assert int(first.error_code) == 0, first
    for f in commits[:1]:
        c = apis.handle(conn, f)
        if inspect.isawaitable(c):
            c = await c
        assert bytes(c)[-40:].count(b"\x00\x00\x00\x00\x00") >= 1
    got = await call(apis, conn, req(FETCH, 8, require_stable=False, groups=(build(
        fg, group_id=COMMITS, member_id=None, member_epoch=-1,
        topics=(ft(name=TOPIC, partition_indexes=(0,)),)),)))
    p0 = got.groups[0].topics[0].partitions[0]
    assert int(p0.error_code) == 0 and int(p0.committed_offset) == 0, got
    out = apis.handle(conn, produce)
    if inspect.isawaitable(out):
        out = await out
    _corr, off = parse_response_header(bytes(out)[4:], codec(PRODUCE, 9).response_header_flexible)
    answer = decode_response(PRODUCE, 9, bytes(out)[4:], off)
    assert int(answer.responses[0].partition_responses[0].error_code) == 0, answer
    got = await call(apis, conn, fetch_req)
    assert len(got.responses[0].partitions[0].records) > 10000, got
    try:
        if os.environ.get("PROFILE"):
            import cProfile
            import pstats

            which = {"api_versions": [versions] * n, "heartbeat": [hb] * n, "commit": commits,
                     "offset_fetch": [fetch] * n, "produce": [produce] * n,
                     "metadata": [metadata] * n, "fetch": [records] * n}
            frames = which[os.environ["PROFILE"]]
            await run_sync(frames)
            pr = cProfile.Profile()
            pr.enable()
            await run_sync(frames)
            pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(40)
        else:
            await rounds_of(rounds, run_sync, versions, hb, commits, fetch, produce, records,
                            n)
            for _ in range(rounds):
                print(json.dumps({"metadata": await run_sync([metadata] * n)}), flush=True)
    finally:
        await broker.stop()
        shutil.rmtree(d, ignore_errors=True)


async def rounds_of(rounds: int, run_sync: Any, versions: bytes, hb: bytes,
                    commits: list[bytes], fetch: bytes, produce: bytes, records: bytes,
                    n: int) -> None:
    for _ in range(rounds):
        row = {
            "api_versions": await run_sync([versions] * n),
            "heartbeat": await run_sync([hb] * n),
            "commit": await run_sync(commits),
            "offset_fetch": await run_sync([fetch] * n),
            "produce": await run_sync([produce] * n),
            "fetch": await run_sync([records] * n),
        }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
