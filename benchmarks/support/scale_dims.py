"""Idle connections and consumer groups at growing sizes, kafkalite and Kafka 4.4 in one run.

```
python -m benchmarks.scale connections [--sizes 1000,10000] [--brokers kafkalite,kafka]
python -m benchmarks.scale groups [--sizes 1000,10000] [--brokers kafkalite,kafka]
```

Both brokers are one node, data on disk, their own defaults (Kafka with its start
script's heap and JVM options). The descriptor limit of this process, which the brokers
inherit, is raised to its hard limit first, as Kafka's operations guide asks of a broker's
environment (``ulimit -n``).

- **connections**: at each size, from none open, SIZE connections are opened, 256 at a
  time, each sending one ApiVersions (so the broker has accepted and served it), then
  left idle 2 s, then closed. Per step: the accept rate (connections opened and answered
  per second), the broker's RSS and open descriptors with every connection open, and the
  memory per connection (RSS growth since just before the step over the connections).
- **groups**: SIZE groups of one member each (classic protocol, 256 connections, each
  joining its groups one after another: JoinGroup, SyncGroup) then one OffsetCommit each
  with the member's generation; then a clean stop, a restart, and OffsetFetch of every
  group (100 groups per request, retried while the coordinator loads) until every offset
  is back and checked. The initial rebalance delay is 0 on both, so the join is the
  broker's work and not the wait. The groups grow from the previous size.

The brokers take turns at each size. Writes ``scale-DIM.json`` and ``scale-DIM.png``
(cost against size, both brokers on each plot) to DIR and prints a table per figure.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from benchmarks.support.aio_client import AioConnection, Member
from benchmarks.support.common import Kafka, Kafkalite, table
from benchmarks.support.scale_sizes import Side, create_range, fds, plot, raise_fd_limit, rss_mb
from kafkalite.client.kafka import request, request_class

CONCURRENCY = 256
GROUPS_PER_FETCH = 100
#: Every wait is bounded.
STEP_TIMEOUT_S = 600.0
TOPIC = "scale-00000"
COMMIT, FETCH = 8, 9
#: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR.
RETRIABLE = (14, 15, 16)


def side(name: str, overrides: dict[str, str]) -> Side:
    s = Side(name)
    if name == "kafkalite":
        s.kl = Kafkalite({"auto.create.topics.enable": "false", **overrides}, data_dir=s.root)
    else:
        s.kafka = Kafka()
        s.kafka.ref.overrides.update(overrides)
        s.kafka.format()
    return s


async def _open(bootstrap: str, n: int, into: list[AioConnection]) -> None:
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        async with sem:
            conn = await AioConnection.open(bootstrap, f"idle-{len(into) + i}")
            resp = await conn.call(request(18, 3, client_software_name="scale",
                                           client_software_version="1"))
            if int(resp.error_code):
                raise RuntimeError(f"ApiVersions: {resp.error_code}")
            into.append(conn)

    await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(n))), STEP_TIMEOUT_S)


def connections_step(s: Side, size: int,
                     loop: asyncio.AbstractEventLoop) -> dict[str, float]:
    """From none open: SIZE connections opened, measured idle, closed again (this process
    cannot hold both brokers' 10,000 at once within its own descriptor limit)."""
    rest = rss_mb(s.pid)
    conns: list[AioConnection] = []
    try:
        t = time.monotonic()
        loop.run_until_complete(_open(s.bootstrap, size, conns))
        took = time.monotonic() - t
        time.sleep(2)  # idle: what the connections cost at rest, not while being accepted
        rss = rss_mb(s.pid)
        return {
            "accept rate, ApiVersions answered (connections/s)": size / took,
            "RSS with every connection open (MB)": rss,
            "memory per connection (KB)": (rss - rest) * 1000 / size,
            "open files": fds(s.pid),
        }
    finally:
        for c in conns:
            c.close()
        loop.run_until_complete(asyncio.sleep(2))  # the broker sees them go


async def _join_commit(bootstrap: str, groups: range) -> tuple[float, float]:
    """Join every group (one member each), then commit its offset; the seconds of each."""
    ct = request_class(COMMIT, 8, "OffsetCommitRequestTopic")
    cp = request_class(COMMIT, 8, "OffsetCommitRequestPartition")
    conns = [await AioConnection.open(bootstrap, f"groups-{i}") for i in range(CONCURRENCY)]
    members: dict[int, Member] = {}
    try:
        async def join(w: int) -> None:
            for g in groups[w::CONCURRENCY]:
                m = Member(conns[w], f"scale-group-{g:05d}", TOPIC, 45_000, 60_000)
                err = await m.join()
                for _ in range(6000):  # a partition of __consumer_offsets still loading
                    if err not in RETRIABLE:
                        break
                    await asyncio.sleep(0.02)
                    err = await m.join()
                if err:
                    raise RuntimeError(f"join {m.group}: {err}")
                members[g] = m

        async def commit(w: int) -> None:
            for g in groups[w::CONCURRENCY]:
                m = members[g]
                resp = await conns[w].call(request(
                    COMMIT, 8, group_id=m.group, generation_id_or_member_epoch=m.generation,
                    member_id=m.member_id, group_instance_id=None,
                    topics=(ct(name=TOPIC, partitions=(cp(
                        partition_index=g % 10, committed_offset=g, committed_leader_epoch=-1,
                        committed_metadata=""),)),)))
                err = int(resp.topics[0].partitions[0].error_code)
                if err:
                    raise RuntimeError(f"commit {m.group}: {err}")

        t0 = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(join(w) for w in range(CONCURRENCY))),
                               STEP_TIMEOUT_S)
        t1 = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(commit(w) for w in range(CONCURRENCY))),
                               STEP_TIMEOUT_S)
        return t1 - t0, time.monotonic() - t1
    finally:
        for c in conns:
            c.close()


async def _find_coordinator(bootstrap: str) -> None:
    """FindCoordinator until it names one: Kafka creates __consumer_offsets on the first."""
    conn = await AioConnection.open(bootstrap, "groups-find")
    try:
        for _ in range(1200):
            resp = await conn.call(request(10, 4, key="", key_type=0,
                                           coordinator_keys=("scale-group-99999",)))
            if all(int(c.error_code) == 0 for c in resp.coordinators):
                return
            await asyncio.sleep(0.1)
        raise TimeoutError("no group coordinator")
    finally:
        conn.close()


async def _fetch_all(bootstrap: str, groups: int) -> None:
    """OffsetFetch of every group until each answers its committed offset."""
    fg = request_class(FETCH, 8, "OffsetFetchRequestGroup")
    ft = request_class(FETCH, 8, "OffsetFetchRequestTopics")
    deadline = time.monotonic() + STEP_TIMEOUT_S
    pending = list(range(groups))
    conn = None
    while pending:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} groups' offsets not back")
        try:
            if conn is None:
                conn = await AioConnection.open(bootstrap, "groups-fetch")
            batch = pending[:GROUPS_PER_FETCH]
            resp = await conn.call(request(FETCH, 8, require_stable=False, groups=tuple(
                fg(group_id=f"scale-group-{g:05d}",
                   topics=(ft(name=TOPIC, partition_indexes=(g % 10,)),)) for g in batch)))
        except (OSError, asyncio.IncompleteReadError):
            conn = None
            await asyncio.sleep(0.01)
            continue
        done = set()
        for group in resp.groups:
            if int(group.error_code):
                continue  # loading: asked again
            g = int(group.group_id.rsplit("-", 1)[1])
            offset = int(group.topics[0].partitions[0].committed_offset)
            if offset != g:
                raise RuntimeError(f"{group.group_id}: offset {offset}, committed {g}")
            done.add(g)
        if not done:
            await asyncio.sleep(0.01)
        pending = [g for g in pending if g not in done]
    if conn is not None:
        conn.close()


def groups_step(s: Side, have: int, size: int,
                loop: asyncio.AbstractEventLoop) -> dict[str, float]:
    join_s, commit_s = loop.run_until_complete(_join_commit(s.bootstrap, range(have, size)))
    added = size - have
    row = {
        "join and sync, per 1,000 groups (s)": join_s * 1000 / added,
        "commit, per 1,000 groups (s)": commit_s * 1000 / added,
        "RSS with every group (MB)": rss_mb(s.pid),
    }
    s.stop()
    t0 = time.monotonic()
    listening, _ = s.start()
    row["restart to listening (s)"] = listening
    loop.run_until_complete(_fetch_all(s.bootstrap, size))
    row["restart to every group's offset fetched (s)"] = time.monotonic() - t0
    row["RSS after restart and fetch (MB)"] = rss_mb(s.pid)
    return row


def report(dim: str, results: dict[str, dict[int, dict[str, float]]], brokers: list[str],
           sizes: list[int], out: Path, what: str) -> None:
    (out / f"scale-{dim}.json").write_text(json.dumps(results, indent=1))
    figures = list(next(iter(results[brokers[0]].values())))
    for figure in figures:
        rows = [(size, *(results[b][size][figure] for b in brokers)) for size in sizes]
        print(f"\n{figure}\n" + table([what, *brokers], rows), flush=True)
    plot(results, out / f"scale-{dim}.png", what)
    print(f"\nwrote {out / f'scale-{dim}.json'} and {out / f'scale-{dim}.png'}", flush=True)


def run(dim: str, sizes: list[int], brokers: list[str], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    print(f"   descriptor limit raised to {raise_fd_limit()}", flush=True)
    overrides = {"group.initial.rebalance.delay.ms": "0"} if dim == "groups" else {}
    results: dict[str, dict[int, dict[str, float]]] = {b: {} for b in brokers}
    loop = asyncio.new_event_loop()
    sides = [side(b, overrides) for b in brokers]
    try:
        for s in sides:
            s.start()
            if dim == "groups":
                create_range(s.bootstrap, 0, 1, 10)
                # __consumer_offsets made and loaded before any clock starts.
                loop.run_until_complete(_find_coordinator(s.bootstrap))
                loop.run_until_complete(_join_commit(s.bootstrap, range(99_999, 100_000)))
        time.sleep(3)
        for size in sizes:
            for s in sides:  # in turns: a change in the machine's load reaches both
                print(f"   {s.name}: {size} {dim}, load {os.getloadavg()[0]:.1f}", flush=True)
                if dim == "connections":
                    results[s.name][size] = connections_step(s, size, loop)
                else:
                    have = max((k for k in results[s.name]), default=0)
                    results[s.name][size] = groups_step(s, have, size, loop)
                print(f"   {results[s.name][size]}", flush=True)
    finally:
        loop.close()
        for s in sides:
            s.cleanup()
    report(dim, results, brokers, sizes, out,
           "idle connections" if dim == "connections" else "groups")

