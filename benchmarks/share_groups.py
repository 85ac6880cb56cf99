"""Share groups (KIP-932): a share group's throughput beside a classic consumer group's on
the same topic, and how soon a record whose acquisition lock expired is delivered again.

    .venv/bin/python -m benchmarks.share_groups [--peer kafka] [--count 40000]
        [--size 1024] [--consumers 4] [--lock-ms 15000] [--lock-samples 3]
        [--time-limit 60]

For each broker (kafkalite, and Apache Kafka with ``--peer kafka``), alone on the machine:

1. ``--count`` records of ``--size`` bytes on one 4-partition topic.
2. ``--consumers`` confluent-kafka ``ShareConsumer``s of one share group (implicit
   acknowledgement: every record accepted) read them all: records/s from the first
   record received to the last, broker CPU per record over the whole phase (joining
   included).
3. In the same run, one classic consumer group (one confluent-kafka ``Consumer``) reads
   the same records: the same figures.
4. Lock expiry on the real clock: a share group with ``share.record.lock.duration.ms`` =
   ``--lock-ms``; a member acquires one record over ShareFetch and does not acknowledge
   it, then waits in a ShareFetch for it to come back: the time from the lock's deadline
   (the acquiring ShareFetch's round-trip midpoint plus the lock duration) to the record
   delivered again, ``--lock-samples`` times.

Every loop is bounded by a count and by ``--time-limit`` seconds (the lock-expiry loop
by that plus each sample's lock duration).
"""

from __future__ import annotations

import argparse
import datetime
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from benchmarks.support.common import (
    Broker,
    create_topic,
    fmt,
    guarded,
    header,
    peers,
    percentile,
    ratio,
    running,
    table,
)
from kafkalite.client.kafka import RawConnection, request, request_class

TOPIC, LOCK_TOPIC, PARTITIONS = "share-bench", "share-lock", 4
HEARTBEAT, SHARE_FETCH, METADATA = 76, 78, 3


@dataclass
class Phase:
    records: int = 0
    seconds: float = 0.0
    cpu_s: float = 0.0
    cut_short: bool = False

    @property
    def rate(self) -> float | None:
        return self.records / self.seconds if self.seconds > 0 else None

    @property
    def cpu_us_per_record(self) -> float | None:
        return self.cpu_s / self.records * 1e6 if self.records else None


def produce(bootstrap: str, count: int, size: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
    value = b"x" * size
    for i in range(count):
        while True:
            try:
                p.produce(TOPIC, value, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def set_group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource("group", group, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
        for k, v in configs.items()])
    for f in admin.incremental_alter_configs([res]).values():
        f.result(timeout=30)


class Counter:
    """Records received by every consumer of a phase, and when the first and last came."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.n = 0
        self.first = 0.0
        self.last = 0.0
        self.lock = threading.Lock()

    def add(self, k: int) -> None:
        with self.lock:
            now = time.perf_counter()
            if self.n == 0:
                self.first = now
            self.n += k
            self.last = now

    @property
    def done(self) -> bool:
        return self.n >= self.target


def share_phase(broker: Broker, group: str, consumers: int, count: int,
                time_limit: float) -> Phase:
    from confluent_kafka import ShareConsumer

    set_group_configs(broker.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    counter = Counter(count)
    deadline = time.monotonic() + time_limit
    cpu0 = broker.cpu_seconds()

    def run() -> None:
        c = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                           "share.acknowledgement.mode": "implicit", "log_level": 3})
        c.subscribe([TOPIC])
        try:
            while not counter.done and time.monotonic() < deadline:
                got = [m for m in c.poll(0.5) if m.error() is None]
                if got:
                    counter.add(len(got))
            c.commit_sync(10)  # the last batch accepted
        finally:
            c.close()

    threads = [threading.Thread(target=run, daemon=True) for _ in range(consumers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(time_limit + 30)
    return Phase(counter.n, counter.last - counter.first, broker.cpu_seconds() - cpu0,
                 not counter.done)


def classic_phase(broker: Broker, group: str, count: int, time_limit: float) -> Phase:
    from confluent_kafka import Consumer

    counter = Counter(count)
    deadline = time.monotonic() + time_limit
    cpu0 = broker.cpu_seconds()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "log_level": 3})
    c.subscribe([TOPIC])
    try:
        while not counter.done and time.monotonic() < deadline:
            got = [m for m in c.consume(500, 0.5) if m.error() is None]
            if got:
                counter.add(len(got))
    finally:
        c.close()
    return Phase(counter.n, counter.last - counter.first, broker.cpu_seconds() - cpu0,
                 not counter.done)


# --- lock expiry, over the share-group protocol itself ------------------------------------

def topic_id(conn: RawConnection, name: str) -> uuid.UUID:
    topic_t = request_class(METADATA, 12, "MetadataRequestTopic")
    resp = conn.call(request(METADATA, 12, topics=(topic_t(name=name, topic_id=None),),
                             allow_auto_topic_creation=False,
                             include_topic_authorized_operations=False))
    tid: uuid.UUID = resp.topics[0].topic_id
    return tid


class Member:
    """One share group member on one connection: its heartbeat and its share session."""

    def __init__(self, bootstrap: str, group: str, tid: uuid.UUID) -> None:
        self.conn = RawConnection(bootstrap, "share-bench-lock")
        self.group, self.tid = group, tid
        self.member = str(uuid.uuid4())
        self.epoch = 0
        self.session = 0

    def heartbeat(self, topics: tuple[str, ...] | None = None) -> Any:
        resp = self.conn.call(request(HEARTBEAT, 1, group_id=self.group, member_id=self.member,
                                      member_epoch=self.epoch, rack_id=None,
                                      subscribed_topic_names=topics))
        if int(resp.error_code) == 0:
            self.epoch = int(resp.member_epoch)
        return resp

    def join(self, deadline: float) -> None:
        resp = self.heartbeat((LOCK_TOPIC,))
        while not (resp.assignment and resp.assignment.topic_partitions):
            if time.monotonic() > deadline:
                raise TimeoutError("the member was never assigned the partition")
            time.sleep(0.2)
            resp = self.heartbeat((LOCK_TOPIC,))

    def fetch(self, wait_ms: int, acks: tuple[tuple[int, int, int], ...] = ()) -> Any:
        """One ShareFetch of partition 0 (acknowledging ``acks``: first, last, type)."""
        ft = request_class(SHARE_FETCH, 1, "FetchTopic")
        fp = request_class(SHARE_FETCH, 1, "FetchPartition")
        ab = request_class(SHARE_FETCH, 1, "AcknowledgementBatch")
        topics = (ft(topic_id=self.tid, partitions=(fp(
            partition_index=0, acknowledgement_batches=tuple(
                ab(first_offset=f, last_offset=last, acknowledge_types=(t,))
                for f, last, t in acks)),)),) if self.session == 0 or acks else ()
        resp = self.conn.call(request(
            SHARE_FETCH, 1, group_id=self.group, member_id=self.member,
            share_session_epoch=self.session, max_wait=datetime.timedelta(milliseconds=wait_ms),
            min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500, topics=topics,
            forgotten_topics_data=()))
        if int(resp.error_code) != 0:
            raise RuntimeError(f"ShareFetch: error {resp.error_code}")
        self.session += 1
        return resp

    def acquired(self, resp: Any) -> list[tuple[int, int, int]]:
        return [(int(a.first_offset), int(a.last_offset), int(a.delivery_count))
                for t in resp.responses for p in t.partitions for a in p.acquired_records]


def lock_expiry(broker: Broker, lock_ms: int, samples: int, time_limit: float) -> list[float]:
    """Milliseconds from each lock's deadline to the record's second delivery."""
    from confluent_kafka import Producer

    group = f"share-lock-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, LOCK_TOPIC, 1)
    set_group_configs(broker.bootstrap, group, {"share.auto.offset.reset": "earliest",
                                                "share.record.lock.duration.ms": str(lock_ms)})
    deadline = time.monotonic() + time_limit
    conn = RawConnection(broker.bootstrap, "share-bench-meta")
    tid = topic_id(conn, LOCK_TOPIC)
    conn.close()
    m = Member(broker.bootstrap, group, tid)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0,
                         "log_level": 3})
    out: list[float] = []
    pending: tuple[tuple[int, int, int], ...] = ()
    try:
        m.join(deadline)
        for _ in range(samples):
            if time.monotonic() > deadline:
                break
            m.heartbeat()
            producer.produce(LOCK_TOPIC, b"lock")
            assert producer.flush(10) == 0
            got: list[tuple[int, int, int]] = []
            while not got and time.monotonic() < deadline:
                sent = time.perf_counter()
                resp = m.fetch(500, pending)
                pending = ()
                got = [a for a in m.acquired(resp) if a[2] == 1]
            if not got:
                break
            expires = (sent + time.perf_counter()) / 2 + lock_ms / 1000
            again: list[tuple[int, int, int]] = []
            while not again and time.monotonic() < deadline:
                resp = m.fetch(lock_ms + 2000)
                again = [a for a in m.acquired(resp) if a[2] >= 2]
            if not again:
                break
            out.append((time.perf_counter() - expires) * 1000)
            pending = ((again[0][0], again[-1][1], 1),)  # accepted with the next fetch
    finally:
        m.conn.close()
    return out


def run_broker(name: str, args: argparse.Namespace) -> dict[str, Any]:
    with running(name) as broker:
        create_topic(broker.bootstrap, TOPIC, PARTITIONS)
        produce(broker.bootstrap, args.count, args.size)
        share = guarded(f"{name} share group", lambda: share_phase(
            broker, "bench-share", args.consumers, args.count, args.time_limit))
        classic = guarded(f"{name} classic group", lambda: classic_phase(
            broker, "bench-classic", args.count, args.time_limit))
        lock = guarded(f"{name} lock expiry", lambda: lock_expiry(
            broker, args.lock_ms, args.lock_samples,
            args.time_limit + args.lock_samples * (args.lock_ms / 1000 + 5)))
        return {"share": share, "classic": classic, "lock": lock}


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", type=peers, default=[],
                        help="kafka: Apache Kafka beside kafkalite")
    parser.add_argument("--count", type=int, default=40_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--lock-ms", type=int, default=15_000,
                        help="share.record.lock.duration.ms of the lock-expiry group (at "
                        "least group.share.min.record.lock.duration.ms, 15000 by default)")
    parser.add_argument("--lock-samples", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=60)
    args = parser.parse_args(argv)
    names = ["kafkalite", *[p for p in args.peer if p == "kafka"]]
    header(f"share groups: {args.consumers} share consumers and one classic consumer, "
           f"{args.count} records of {args.size} B on {PARTITIONS} partitions")
    results = {name: run_broker(name, args) for name in names}

    def phase_cells(p: Phase | None) -> list[str]:
        if p is None:
            return ["failed", "-"]
        rate = fmt(p.rate, 0) + (" (time limit)" if p.cut_short else "")
        return [rate, fmt(p.cpu_us_per_record, 1)]

    rows = []
    for name in names:
        r = results[name]
        share, classic, lock = r["share"], r["classic"], r["lock"]
        lock_cells = ["failed", "-"] if not lock else [
            f"{fmt(percentile(lock, 50), 1)} / {fmt(max(lock), 1)}", str(len(lock))]
        rows.append([name, *phase_cells(share), *phase_cells(classic),
                     fmt(ratio(share.rate if share else None,
                               classic.rate if classic else None), 2),
                     *lock_cells])
    print(table(["broker", "share records/s", "share CPU µs/record", "classic records/s",
                 "classic CPU µs/record", "share / classic",
                 "lock expiry → redelivery, p50 / max ms", "samples"], rows))


if __name__ == "__main__":
    main()
