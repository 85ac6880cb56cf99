"""Offsets: commit and OffsetFetch rates, and the reload time of ``__consumer_offsets``.

    python -m benchmarks.offsets [--brokers kafkalite,tansu] [--seconds 5] [--turns 10]
                                 [--records 1000000]

1. Commits per second from one client, for OffsetCommit v8 requests of 1 and of 64
   partitions (a simple group; ``--partitions`` changes the sizes): sent one at a time for
   ``--seconds`` (a consumer calling ``commitSync`` in a loop) and ``--pipelined`` of them
   with 64 in flight, on kafkalite and on Tansu in the same run, with the broker's CPU time
   per committed offset.
2. OffsetFetch per second the same two ways (one partition), taken before the commits
   (whose records start the log cleaner). First of all the round-trip floor: ApiVersions
   one at a time, a request whose handling costs the broker almost nothing. Requests
   sent one at a time cannot go faster than this on either broker, so it bounds the
   sequential ratios.

   Each broker runs alone, one after the other. With ``--turns N`` the one-at-a-time
   figures of the floor, OffsetFetch and one-partition commits are taken with both
   brokers running side by side, taking N turns of ``seconds / N`` each
   (``taking_turns``): a round trip on a small virtual machine is a quarter slower in some
   stretches of seconds than in others, and taking turns puts both brokers in the same
   stretches. (Tansu, though, is faster side by side: docs/benchmarks.md.)
3. Reload: a ``__consumer_offsets`` partition holding ``--records`` commit records over
   1,000 keys is loaded by a starting broker, before and after compaction (start-up time
   to listening).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.support.common import (
    Broker,
    Kafkalite,
    broker_args,
    broker_names,
    collector_paused,
    create_topic,
    parse_sets,
    percentile,
    ratio,
    running,
    table,
)
from kafkalite.client.kafka import RawConnection, one_at_a_time, pipeline, request, request_class
from kafkalite.protocol.build import build

OFFSET_COMMIT, OFFSET_FETCH, API_VERSIONS = 8, 9, 18
TOPIC = "bench-offsets"
GROUP = "bench-offsets-group"
TOPIC_PARTITIONS = 64
#: One-at-a-time commits of up to this many partitions are measured with the brokers
#: taking turns; larger ones write enough to start kafkalite's log cleaner, whose thread
#: would run during the other broker's turns, so each broker has its own run of them.
TURNS_UP_TO = 1


def commit_request(version: int, offset: int, partitions: int = 1) -> Any:
    topic_t = request_class(OFFSET_COMMIT, version, "OffsetCommitRequestTopic")
    part_t = request_class(OFFSET_COMMIT, version, "OffsetCommitRequestPartition")
    return request(
        OFFSET_COMMIT, version, group_id=GROUP, generation_id_or_member_epoch=-1,
        member_id="", group_instance_id=None,
        topics=(topic_t(name=TOPIC, partitions=tuple(part_t(
            partition_index=p, committed_offset=offset, committed_leader_epoch=-1,
            committed_metadata="") for p in range(partitions))),),
    )


def fetch_request(version: int) -> Any:
    group_t = request_class(OFFSET_FETCH, version, "OffsetFetchRequestGroup")
    topics_t = request_class(OFFSET_FETCH, version, "OffsetFetchRequestTopics")
    return request(OFFSET_FETCH, version, require_stable=False, groups=(build(
        group_t, group_id=GROUP, member_id=None, member_epoch=-1,
        topics=(topics_t(name=TOPIC, partition_indexes=(0,)),)),))


def _commit_error_offset() -> int:
    # correlation id, header tags, throttle, topics count, name, partitions count, index:
    # the first partition's error.
    return 4 + 1 + 4 + 1 + 1 + len(TOPIC) + 1 + 4


def _fetch_error_offset() -> int:
    # ... group id, topics, name, partitions, index, offset, epoch, metadata (empty)
    return 4 + 1 + 4 + 1 + 1 + len(GROUP) + 1 + 1 + len(TOPIC) + 1 + 4 + 8 + 4 + 1


def _cpu_us_per(broker: Broker, before: float, count: int) -> float:
    return (broker.cpu_seconds() - before) * 1e6 / count if count else float("nan")


def sequential(lat: list[float]) -> dict[str, float]:
    return {"seq": len(lat) / (sum(lat) / 1000), "p50_ms": percentile(lat, 50),
            "p99_ms": percentile(lat, 99)}


def taking_turns(conns: dict[str, RawConnection], frames: dict[str, list[bytes]],
                 seconds: float, turns: int) -> dict[str, list[float]]:
    """Round-trip milliseconds of each broker's ``frames`` sent one at a time, the brokers
    taking ``turns`` turns of ``seconds / turns`` each. A one-at-a-time round trip on a
    small virtual machine moves by a quarter from one stretch of seconds to the next (where
    the scheduler has put the processes, what the host is doing): taking turns puts both
    brokers in the same stretches instead of one after the other."""
    out: dict[str, list[float]] = {name: [] for name in conns}
    for _ in range(turns):
        for name, conn in conns.items():
            sent = len(out[name])
            out[name] += one_at_a_time(conn, frames[name][sent:], seconds / turns)
    return out


def _commit_frames(conn: RawConnection, version: int, partitions: int, name: str) -> list[bytes]:
    first = conn.call(commit_request(version, 1, partitions))
    errs = {int(p.error_code) for p in first.topics[0].partitions}
    assert errs == {0}, f"{name}: commit failed with {errs}"
    return conn.frames(commit_request(version, 42, partitions), 200_000)


def one_at_a_time_rates(names: list[str], seconds: float, turns: int, sizes: list[int],
                        overrides: dict[str, str]) -> dict[str, dict[str, dict[str, float]]]:
    """The one-at-a-time figures of every broker, running side by side and taking turns:
    {name: {"floor" | "fetch" | "commit-<n>": {...}}}. Only sizes of at most one
    partition: the 64-partition commits write enough to start kafkalite's log cleaner,
    whose thread would then run during the other broker's turns."""
    with contextlib.ExitStack() as stack:
        brokers = {name: stack.enter_context(running(name, overrides)) for name in names}
        conns: dict[str, RawConnection] = {}
        versions: dict[str, tuple[int, int]] = {}
        for name, broker in brokers.items():
            create_topic(broker.bootstrap, TOPIC, TOPIC_PARTITIONS)
            conn = conns[name] = RawConnection(broker.bootstrap)
            stack.callback(conn.close)
            versions[name] = _versions(conn, name)
        out: dict[str, dict[str, dict[str, float]]] = {name: {} for name in names}
        # First the floor: ApiVersions, whose handling costs a broker almost nothing.
        floor = taking_turns(conns, {name: floor_frames(c) for name, c in conns.items()},
                             seconds, turns)
        for name, lat in floor.items():
            out[name]["floor"] = sequential(lat)
        # OffsetFetch of one offset committed here.
        for name, conn in conns.items():
            conn.call(commit_request(versions[name][0], 42))
        fetch = taking_turns(conns, {name: c.frames(fetch_request(versions[name][1]), 200_000)
                                     for name, c in conns.items()}, seconds, turns)
        for name, lat in fetch.items():
            out[name]["fetch"] = sequential(lat)
        for n in sizes:
            frames = {name: _commit_frames(c, versions[name][0], n, name)
                      for name, c in conns.items()}
            cpu = {name: b.cpu_seconds() for name, b in brokers.items()}
            lat_by = taking_turns(conns, frames, seconds, turns)
            for name, lat in lat_by.items():
                out[name][f"commit-{n}"] = {
                    **sequential(lat),
                    # Includes the little the broker does during the other's turns.
                    "seq_cpu_us": _cpu_us_per(brokers[name], cpu[name], len(lat) * n)}
        return out


def _versions(conn: RawConnection, name: str) -> tuple[int, int]:
    cv = conn.version(OFFSET_COMMIT, 8)
    fv = conn.version(OFFSET_FETCH, 8)
    assert cv == 8 and fv == 8, f"{name}: OffsetCommit v{cv}, OffsetFetch v{fv}"
    return cv, fv


def commit_rates(broker: Broker, conn: RawConnection, version: int, partitions: int,
                 seconds: float, pipelined: int, one_by_one: bool) -> dict[str, float]:
    """The pipelined commit rate, and with ``one_by_one`` first the one-at-a-time one."""
    frames = _commit_frames(conn, version, partitions, broker.name)
    out: dict[str, float] = {}
    if one_by_one:
        cpu = broker.cpu_seconds()
        lat = one_at_a_time(conn, frames, seconds)
        out = {**sequential(lat),
               "seq_cpu_us": _cpu_us_per(broker, cpu, len(lat) * partitions)}
    # A fixed count, all sent before the time limit: the rate is count / time.
    cpu = broker.cpu_seconds()
    p = pipeline(conn, conn.frames(commit_request(version, 43, partitions), pipelined),
                 _commit_error_offset(), 64, 120)
    assert set(p.errors) == {0}, f"{broker.name}: commit errors {p.errors}"
    out["pipe"] = p.per_second
    out["pipe_cpu_us"] = _cpu_us_per(broker, cpu, p.count * partitions)
    return out


def rates(name: str, seconds: float, pipelined: int, sizes: list[int],
          overrides: dict[str, str], alone: bool) -> dict[str, dict[str, float]]:
    """The figures of one broker running alone: {"floor" | "fetch" | "commit-<n>": {...}}.
    Without ``alone`` only those ``one_at_a_time_rates`` leaves out: the pipelined ones
    and the one-at-a-time commits of more than ``TURNS_UP_TO`` partitions."""
    with running(name, overrides) as broker:
        create_topic(broker.bootstrap, TOPIC, TOPIC_PARTITIONS)
        conn = RawConnection(broker.bootstrap)
        try:
            cv, fv = _versions(conn, name)
            out: dict[str, dict[str, float]] = {}
            if alone:
                # First, while the broker has nothing else to do (a log cleaning running
                # later keeps a core busy, which shortens wake-ups and so every round trip).
                out["floor"] = sequential(one_at_a_time(conn, floor_frames(conn), seconds))
            # OffsetFetch next, of one offset committed here: the commit measurements write
            # enough for the log cleaner to start, on a thread that shares the GIL.
            conn.call(commit_request(cv, 42))
            fetch = out["fetch"] = (sequential(one_at_a_time(
                conn, conn.frames(fetch_request(fv), 200_000), seconds)) if alone else {})
            p = pipeline(conn, conn.frames(fetch_request(fv), pipelined),
                         _fetch_error_offset(), 64, 120)
            assert set(p.errors) == {0}, f"{name}: fetch errors {p.errors}"
            fetch["pipe"] = p.per_second
            out.update({f"commit-{n}": commit_rates(broker, conn, cv, n, seconds,
                                                    max(pipelined // n, 500),
                                                    alone or n > TURNS_UP_TO)
                        for n in sizes})
            return out
        finally:
            conn.close()


def floor_frames(conn: RawConnection) -> list[bytes]:
    return conn.frames(request(API_VERSIONS, 3, client_software_name="bench",
                               client_software_version="1"), 200_000)


# --- reload ------------------------------------------------------------------------------

SEGMENT_BYTES = 8 * 1024 * 1024


def _fill(data_dir: Path, records: int, keys: int) -> float:
    """Append ``records`` offset commits over ``keys`` keys to __consumer_offsets-0."""
    from kafkalite.protocol import consumer_offsets as co
    from kafkalite.protocol.records import NewRecord, build_batch
    from kafkalite.storage.log import PartitionLog
    from kafkalite.storage.log_config import LogConfig

    plog = PartitionLog(data_dir / "__consumer_offsets-0", "__consumer_offsets", 0,
                        LogConfig(segment_bytes=SEGMENT_BYTES, cleanup_policy="compact"))
    encoded_keys = [co.encode_key(co.OffsetCommitKey(f"g{k % 100}", f"t{k}", 0))
                    for k in range(keys)]
    now = int(time.time() * 1000)
    t0 = time.perf_counter()
    per_batch = 1000
    for start in range(0, records, per_batch):
        batch = [NewRecord(encoded_keys[i % keys],
                           co.encode_offset_value(co.OffsetCommitValue(i, "", now)), now)
                 for i in range(start, min(start + per_batch, records))]
        plog.append(build_batch(batch, timestamp=now))
    plog.close()
    return time.perf_counter() - t0


def _compact(data_dir: Path) -> tuple[float, int, int]:
    from kafkalite.protocol.records import iter_batch_headers
    from kafkalite.storage.compaction import clean_log
    from kafkalite.storage.log import PartitionLog
    from kafkalite.storage.log_config import LogConfig

    plog = PartitionLog(data_dir / "__consumer_offsets-0", "__consumer_offsets", 0,
                        LogConfig(segment_bytes=SEGMENT_BYTES, cleanup_policy="compact"))
    t0 = time.perf_counter()
    stats = clean_log(plog, int(time.time() * 1000), 86_400_000)
    took = time.perf_counter() - t0
    kept = sum(h.record_count for b in plog.iter_batches(0) for _p, h in iter_batch_headers(b))
    plog.close()
    return took, stats.records_read, kept


def _start_time(root: Path, overrides: dict[str, str]) -> float:
    """Seconds from launch until the broker listens (it loads __consumer_offsets first)."""
    broker = Kafkalite(overrides, data_dir=root)
    t0 = time.perf_counter()
    broker.start(timeout=600)
    took = time.perf_counter() - t0
    broker.stop()
    return took


def reload(records: int, overrides: dict[str, str]) -> list[list[Any]]:
    root = Path(tempfile.mkdtemp(prefix="kafkalite-bench-offsets-"))
    try:
        base = {**overrides, "offsets.topic.num.partitions": "1",
                "offsets.topic.segment.bytes": str(SEGMENT_BYTES)}
        # A first run creates the catalogue and, on the first commit, __consumer_offsets.
        first = Kafkalite(base, data_dir=root)
        first.start()
        create_topic(first.bootstrap, TOPIC, 1)
        conn = RawConnection(first.bootstrap)
        conn.call(commit_request(conn.version(OFFSET_COMMIT, 8), 0))
        conn.close()
        first.stop()
        data = root / "data"
        fill = _fill(data, records, 1000)
        before = _start_time(root, base)
        took, read, kept = _compact(data)
        after = _start_time(root, base)
        return [
            ["records written", records, f"{fill:.1f} s to write"],
            ["start-up before compaction (s)", before, ""],
            ["compaction (s)", took, f"{read:,} records read, {kept:,} kept"],
            ["start-up after compaction (s)", after, ""],
        ]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    broker_args(ap)
    ap.add_argument("--seconds", type=float, default=5.0, help="time per measurement")
    ap.add_argument("--pipelined", type=int, default=20_000,
                    help="one-partition requests sent with 64 in flight (fewer for larger)")
    ap.add_argument("--partitions", default="1,64",
                    help="partitions per OffsetCommit request, comma-separated")
    ap.add_argument("--records", type=int, default=1_000_000,
                    help="records in the __consumer_offsets partition to reload")
    ap.add_argument("--turns", type=int, default=0,
                    help="run the brokers side by side, taking this many turns in each "
                         "one-at-a-time measurement (0: each broker alone, one after the "
                         "other)")
    ap.add_argument("--skip-reload", action="store_true")
    args = ap.parse_args(argv)
    overrides = parse_sets(args.set)
    sizes = [int(n) for n in args.partitions.split(",")]
    names = broker_names(args)
    alone = args.turns <= 0
    with collector_paused():
        results: dict[str, dict[str, dict[str, float]]] = (
            {name: {} for name in names} if alone else one_at_a_time_rates(
                names, args.seconds, args.turns, [n for n in sizes if n <= TURNS_UP_TO],
                overrides))
        for name in names:
            for key, figures in rates(name, args.seconds, args.pipelined, sizes, overrides,
                                      alone).items():
                results[name].setdefault(key, {}).update(figures)
    rows = []
    for name, r in results.items():
        for n in sizes:
            c = r[f"commit-{n}"]
            rows.append([name, n, c["seq"], c["p50_ms"], c["p99_ms"], c["seq_cpu_us"],
                         c["pipe"], c["pipe_cpu_us"]])
    print(table(["broker", "partitions per commit", "commits/s (1 at a time)", "p50 ms",
                 "p99 ms", "broker CPU µs per offset", "commits/s (64 in flight)",
                 "broker CPU µs per offset"], rows))
    print()
    print(table(["broker", "fetches/s (1 at a time)", "p50 ms", "fetches/s (64 in flight)",
                 "ApiVersions/s (1 at a time: the floor)", "p50 ms"],
                [[name, r["fetch"]["seq"], r["fetch"]["p50_ms"], r["fetch"]["pipe"],
                  r["floor"]["seq"], r["floor"]["p50_ms"]]
                 for name, r in results.items()]))
    k, t = results.get("kafkalite"), results.get("tansu")
    if k is not None and t is not None:
        ratios = []
        for n in sizes:
            ratios.append([f"commits/s, {n} partition(s), 1 at a time",
                           ratio(k[f"commit-{n}"]["seq"], t[f"commit-{n}"]["seq"])])
            ratios.append([f"commits/s, {n} partition(s), 64 in flight",
                           ratio(k[f"commit-{n}"]["pipe"], t[f"commit-{n}"]["pipe"])])
        ratios.append(["OffsetFetch/s, 1 at a time", ratio(k["fetch"]["seq"], t["fetch"]["seq"])])
        ratios.append(["OffsetFetch/s, 64 in flight",
                       ratio(k["fetch"]["pipe"], t["fetch"]["pipe"])])
        ratios.append(["ApiVersions/s, 1 at a time (the floor)",
                       ratio(k["floor"]["seq"], t["floor"]["seq"])])
        print()
        print(table(["kafkalite / tansu", "ratio"], ratios))
    if not args.skip_reload and "kafkalite" in results:
        print()
        print(table(["__consumer_offsets reload", "value", "note"],
                    reload(args.records, overrides)))


if __name__ == "__main__":
    main()
