"""Transactions: small transactions per second and the read_committed consume rate, with
confluent-kafka clients, on kafkalite and Tansu in one run.

1. **small transactions**: one transactional producer, initialized once, then for
   ``--txns`` transactions (or ``--time-limit`` seconds): begin, one record, commit; and
   the same with ``send_offsets_to_transaction`` before each commit (the end of a
   consume-transform-produce loop). Prints transactions/s, the broker's CPU ms per
   transaction and the commit latency p50/p99.
2. **read_committed consume**: ``--records`` records of ``--size`` bytes written in
   transactions of ``--batch`` records, every ``--abort-every``-th one aborted; then one
   consumer reads the partition from the start with ``isolation.level=read_committed``
   (and, for reference, read_uncommitted) to the end of the partition. Prints the committed
   and aborted records delivered (values of aborted transactions start with "a"),
   records/s, MB/s and the broker's CPU s per GB delivered.

    .venv/bin/python -m benchmarks.transactions [--txns 3000] [--records 500000]
        [--size 100] [--batch 1000] [--abort-every 10] [--time-limit 20]
"""

from __future__ import annotations

import argparse
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from benchmarks.support.common import (
    Broker,
    broker_args,
    broker_names,
    create_topic,
    guarded,
    header,
    parse_sets,
    percentile,
    ratio,
    running,
    table,
)


@dataclass
class TxnRate:
    count: int = 0
    seconds: float = float("nan")
    cpu: float = float("nan")
    complete: bool = False
    commit_ms: list[float] = field(default_factory=list)

    @property
    def per_s(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else float("nan")

    @property
    def cpu_ms(self) -> float:
        return 1000 * self.cpu / self.count if self.count else float("nan")


@dataclass
class ReadRate:
    messages: int = 0
    seconds: float = float("nan")
    cpu: float = float("nan")
    size: int = 0
    complete: bool = False
    #: Records of aborted transactions delivered (their values start with "a").
    aborted: int = 0

    @property
    def per_s(self) -> float:
        """Records delivered per second (aborted ones too, where a broker delivers them)."""
        n = self.messages + self.aborted
        return n / self.seconds if self.seconds > 0 else float("nan")

    @property
    def mb_s(self) -> float:
        return self.per_s * self.size / 1e6

    @property
    def cpu_per_gb(self) -> float:
        gb = (self.messages + self.aborted) * self.size / 1e9
        return self.cpu / gb if gb > 0 else float("nan")


def small_transactions(broker: Broker, topic: str, count: int, limit: float,
                       offsets: bool) -> TxnRate:
    from confluent_kafka import Consumer, Producer, TopicPartition

    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "log_level": 3,
                  "transactional.id": f"bench-{uuid.uuid4().hex[:8]}"})
    p.init_transactions(30)
    group = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bench-txn-group"})
    meta = group.consumer_group_metadata()
    out = TxnRate()
    # One transaction before the clock starts: connections, coordinators, metadata.
    p.begin_transaction()
    p.produce(topic, b"warmup")
    p.commit_transaction(30)
    cpu0 = broker.cpu_seconds()
    t0 = time.perf_counter()
    deadline = t0 + limit
    while out.count < count and time.perf_counter() < deadline:
        p.begin_transaction()
        p.produce(topic, b"x" * 100)
        if offsets:
            p.send_offsets_to_transaction([TopicPartition(topic, 0, out.count)], meta, 30)
        c0 = time.perf_counter()
        p.commit_transaction(30)
        out.commit_ms.append((time.perf_counter() - c0) * 1000)
        out.count += 1
    out.seconds = time.perf_counter() - t0
    out.cpu = broker.cpu_seconds() - cpu0
    out.complete = out.count >= count
    group.close()
    return out


def fill(broker: Broker, topic: str, records: int, size: int, batch: int, abort_every: int,
         limit: float) -> int:
    """Transactions of ``batch`` records; every ``abort_every``-th aborted. Returns the
    number of committed records."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "log_level": 3,
                  "batch.num.messages": 10000, "queue.buffering.max.messages": 1_000_000,
                  "transactional.id": f"bench-fill-{uuid.uuid4().hex[:8]}"})
    p.init_transactions(30)
    committed = written = n = 0
    deadline = time.monotonic() + limit
    while written < records and time.monotonic() < deadline:
        n += 1
        p.begin_transaction()
        k = min(batch, records - written)
        # Records of the transactions to abort say so: a reader can count them.
        value = (b"a" if n % abort_every == 0 else b"c") * size
        for _ in range(k):
            try:
                p.produce(topic, value)
            except BufferError:
                p.poll(0.05)
                p.produce(topic, value)
        written += k
        if n % abort_every == 0:
            p.flush(60)
            p.abort_transaction(60)
        else:
            p.commit_transaction(60)
            committed += k
    return committed


def read(broker: Broker, topic: str, isolation: str, expect: int, size: int,
         limit: float) -> ReadRate:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"bench-{isolation}",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "enable.partition.eof": True, "enable.auto.offset.store": False,
                  "fetch.wait.max.ms": 500,
                  "max.partition.fetch.bytes": 8_388_608, "queued.min.messages": 2_000_000,
                  "fetch.queue.backoff.ms": 5, "log_level": 3})
    out = ReadRate(size=size)
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        cpu0 = broker.cpu_seconds()
        t0 = time.perf_counter()
        deadline = t0 + limit
        at_end = False
        while not at_end and time.perf_counter() < deadline:
            for m in c.consume(10000, 0.5):
                if m.error() is not None:
                    at_end = out.messages + out.aborted >= expect
                    continue
                value = m.value()
                if len(value) == size:
                    if value[:1] == b"a":
                        out.aborted += 1
                    else:
                        out.messages += 1
        out.seconds = time.perf_counter() - t0
        out.cpu = broker.cpu_seconds() - cpu0
        out.complete = at_end
    finally:
        c.close()
    return out


@dataclass
class Result:
    small: TxnRate | None = None
    with_offsets: TxnRate | None = None
    committed: int = 0
    read_committed: ReadRate | None = None
    read_uncommitted: ReadRate | None = None


def run(name: str, args: argparse.Namespace) -> Result:
    res = Result()
    overrides = parse_sets(args.set)
    with running(name, overrides) as broker:
        for t in ("bench-txn", "bench-read"):
            create_topic(broker.bootstrap, t, 1)
        res.small = guarded(f"{name} small", lambda: small_transactions(
            broker, "bench-txn", args.txns, args.time_limit, offsets=False))
        res.with_offsets = guarded(f"{name} offsets", lambda: small_transactions(
            broker, "bench-txn", args.txns, args.time_limit, offsets=True))
        committed = guarded(f"{name} fill", lambda: fill(
            broker, "bench-read", args.records, args.size, args.batch, args.abort_every,
            4 * args.time_limit))
        if committed:
            res.committed = committed
            total = args.records
            res.read_committed = guarded(f"{name} read_committed", lambda: read(
                broker, "bench-read", "read_committed", committed, args.size, args.time_limit))
            res.read_uncommitted = guarded(f"{name} read_uncommitted", lambda: read(
                broker, "bench-read", "read_uncommitted", total, args.size, args.time_limit))
    return res


def _note(complete: bool) -> str:
    return "" if complete else "time limit"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    broker_args(ap)
    ap.add_argument("--txns", type=int, default=3000, help="small transactions per variant")
    ap.add_argument("--records", type=int, default=500_000, help="records for the read test")
    ap.add_argument("--size", type=int, default=100, help="record size (bytes)")
    ap.add_argument("--batch", type=int, default=1000, help="records per transaction (fill)")
    ap.add_argument("--abort-every", type=int, default=10,
                    help="every N-th transaction of the fill is aborted")
    ap.add_argument("--time-limit", type=float, default=20.0, help="seconds per measurement")
    args = ap.parse_args(argv)
    header("transactions (confluent-kafka, 1 partition)")
    results = {name: run(name, args) for name in broker_names(args)}

    rows: list[list[Any]] = []
    for label, attr in (("begin, 1 record, commit", "small"),
                        ("... + send_offsets_to_transaction", "with_offsets")):
        for name, r in results.items():
            t: TxnRate | None = getattr(r, attr)
            if t is None:
                rows.append([label, name, "error", None, None, None, None, None])
                continue
            rows.append([label, name, t.count, t.per_s, t.cpu_ms,
                         percentile(t.commit_ms, 50), percentile(t.commit_ms, 99),
                         _note(t.complete)])
    print()
    print(table(["small transactions", "broker", "txns", "txns/s", "broker CPU ms/txn",
                 "commit p50 ms", "commit p99 ms", "note"], rows))

    rows = []
    for attr in ("read_committed", "read_uncommitted"):
        for name, r in results.items():
            rr: ReadRate | None = getattr(r, attr)
            if rr is None:
                rows.append([attr, name, "error", None, None, None, None, None])
                continue
            rows.append([attr, name, rr.messages, rr.aborted, rr.per_s, rr.mb_s,
                         rr.cpu_per_gb, _note(rr.complete)])
    print()
    print(table([f"consume ({args.size} B, 1 in {args.abort_every} transactions aborted)",
                 "broker", "committed", "aborted", "records/s", "MB/s", "broker CPU s/GB",
                 "note"], rows))

    if "kafkalite" in results and "tansu" in results:
        k, t = results["kafkalite"], results["tansu"]

        def pair(a: Any, b: Any, get: str) -> float | None:
            return ratio(getattr(a, get) if a else None, getattr(b, get) if b else None)

        print()
        print(table(["kafkalite / tansu", "rate ratio", "broker CPU ratio"], [
            ["small transactions", pair(k.small, t.small, "per_s"),
             pair(k.small, t.small, "cpu_ms")],
            ["with offsets", pair(k.with_offsets, t.with_offsets, "per_s"),
             pair(k.with_offsets, t.with_offsets, "cpu_ms")],
            ["read_committed", pair(k.read_committed, t.read_committed, "per_s"),
             pair(k.read_committed, t.read_committed, "cpu_per_gb")],
            ["read_uncommitted", pair(k.read_uncommitted, t.read_uncommitted, "per_s"),
             pair(k.read_uncommitted, t.read_uncommitted, "cpu_per_gb")],
        ]))


if __name__ == "__main__":
    main()
