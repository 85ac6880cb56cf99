"""Produce and consume throughput and end-to-end latency with confluent-kafka clients.

For each broker (kafkalite, Tansu) and each message size: one producer writes COUNT
messages (acks=1, no compression) to a fresh topic, one consumer (assign, no group) reads
them all back; then single messages go round trip one at a time for latency. Prints
messages/s, MB/s, the broker's CPU seconds per GB moved, and the kafkalite/Tansu ratios.

    .venv/bin/python -m benchmarks.produce_consume [--sizes 100,1024]
        [--counts 2000000,500000] [--latency-samples 2000] [--time-limit 20]
"""

from __future__ import annotations

import argparse
import time
import uuid
from dataclasses import dataclass, field

from benchmarks.support.common import (
    Broker,
    broker_args,
    broker_names,
    collector_paused,
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
class Phase:
    messages: int = 0
    seconds: float = float("nan")
    cpu: float = float("nan")
    complete: bool = False
    size: int = 0
    client_cpu: float = float("nan")

    @property
    def client_pct(self) -> float:
        """CPU of this client process (Python plus librdkafka threads) as % of one core."""
        return 100 * self.client_cpu / self.seconds if self.seconds > 0 else float("nan")

    @property
    def msgs_per_s(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else float("nan")

    @property
    def mb_per_s(self) -> float:
        return self.msgs_per_s * self.size / 1e6

    @property
    def cpu_per_gb(self) -> float:
        gb = self.messages * self.size / 1e9
        return self.cpu / gb if gb > 0 else float("nan")


@dataclass
class Result:
    produce: dict[int, Phase] = field(default_factory=dict)
    consume: dict[int, Phase] = field(default_factory=dict)
    latency_ms: list[float] = field(default_factory=list)


def producer_config(bootstrap: str, linger_ms: int) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "acks": 1,
        "linger.ms": linger_ms,
        "batch.size": 1_000_000,
        "compression.type": "none",
        "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
        "enable.idempotence": False,
        "log_level": 3,
    }


def consumer_config(bootstrap: str) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": f"bench-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 500,
        "fetch.min.bytes": 1,
        "max.partition.fetch.bytes": 8_388_608,
        # librdkafka stops fetching for fetch.queue.backoff.ms (1 s) once its local queue
        # passes queued.min.messages; with those defaults the client paces itself.
        "queued.min.messages": 2_000_000,
        "fetch.queue.backoff.ms": 5,
        "log_level": 3,
    }


def produce(broker: Broker, topic: str, size: int, count: int, limit: float) -> Phase:
    from confluent_kafka import Producer

    p = Producer(producer_config(broker.bootstrap, 5))
    value = b"x" * size
    errors: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None and len(errors) < 5:
            errors.append(str(err))

    # Warm the connection and metadata before the clock starts.
    p.produce(topic, b"warmup", on_delivery=on_delivery)
    if p.flush(10) or errors:
        raise RuntimeError(f"warm-up message not delivered: {errors[:1]}")
    cpu0 = broker.cpu_seconds()
    c0 = time.process_time()
    t0 = time.perf_counter()
    deadline = t0 + limit
    sent = 0
    produce_fn = p.produce
    while sent < count:
        try:
            # A Python callback per message would cost the client more than the broker's
            # work; sample one in 10,000 (a shortfall also shows in the consumed count).
            if sent % 10_000:
                produce_fn(topic, value)
            else:
                produce_fn(topic, value, on_delivery=on_delivery)
            sent += 1
        except BufferError:
            p.poll(0.001)
            if time.perf_counter() > deadline:
                break
            continue
        if not sent % 10_000:
            p.poll(0)
            if time.perf_counter() > deadline:
                break
    remaining = p.flush(max(1.0, deadline - time.perf_counter() + 5))
    t1 = time.perf_counter()
    if errors:
        raise RuntimeError(f"delivery failed: {errors[0]}")
    phase = Phase(messages=sent - remaining, seconds=t1 - t0, cpu=broker.cpu_seconds() - cpu0,
                  complete=remaining == 0 and sent == count, size=size,
                  client_cpu=time.process_time() - c0)
    return phase


def consume(broker: Broker, topic: str, size: int, count: int, limit: float) -> Phase:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(consumer_config(broker.bootstrap))
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        # The warm-up message comes first: the clock starts once the consumer has it, so
        # connection set-up and the offset lookup are not counted.
        warm_deadline = time.monotonic() + 15
        while time.monotonic() < warm_deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                break
        else:
            raise RuntimeError("warm-up message not consumed")
        got = 0
        cpu0 = broker.cpu_seconds()
        c0 = time.process_time()
        t0 = time.perf_counter()
        deadline = t0 + limit
        while got < count and time.perf_counter() < deadline:
            # consume() waits its whole timeout unless it fills the batch: ask for no more
            # than what is left.
            msgs = c.consume(min(10_000, count - got), 0.5)
            for m in msgs:
                err = m.error()
                if err is not None and not err.code() == -191:  # _PARTITION_EOF
                    raise RuntimeError(f"consume error: {err}")
            got += len(msgs)
        t1 = time.perf_counter()
        return Phase(messages=min(got, count), seconds=t1 - t0,
                     cpu=broker.cpu_seconds() - cpu0, complete=got >= count, size=size,
                     client_cpu=time.process_time() - c0)
    finally:
        c.close()


def latency(broker: Broker, samples: int, limit: float) -> list[float]:
    """Produce one message, wait until the consumer has it; repeat. Milliseconds each."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    topic = f"lat-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 1)
    p = Producer(producer_config(broker.bootstrap, 0))
    c = Consumer(consumer_config(broker.bootstrap))
    out: list[float] = []
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        # Let the consumer reach the end and park in a long-poll Fetch.
        p.produce(topic, b"warmup")
        p.flush(10)
        warm_deadline = time.monotonic() + 15
        while time.monotonic() < warm_deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                break
        deadline = time.monotonic() + limit
        for i in range(samples):
            if time.monotonic() > deadline:
                break
            key = str(i).encode()
            t0 = time.perf_counter()
            p.produce(topic, b"v" * 100, key=key)
            p.poll(0)
            while True:
                m = c.poll(1.0)
                if m is not None and m.error() is None and m.key() == key:
                    out.append((time.perf_counter() - t0) * 1000)
                    break
                if time.monotonic() > deadline + 5:
                    return out
            p.poll(0)
        p.flush(5)
    finally:
        c.close()
    return out


def run(name: str, args: argparse.Namespace, sizes: list[int], counts: list[int]) -> Result:
    res = Result()
    overrides = parse_sets(args.set)
    with running(name, overrides) as broker:
        for size, count in zip(sizes, counts, strict=True):
            topic = f"bench-{size}-{uuid.uuid4().hex[:8]}"
            if not guarded(f"{name} create",
                           lambda t=topic: create_topic(broker.bootstrap, t, 1)):
                continue
            with collector_paused():
                ph = guarded(f"{name} produce {size}B", lambda t=topic, s=size, n=count:
                             produce(broker, t, s, n, args.time_limit))
            if ph is None:
                continue
            res.produce[size] = ph
            print(f"   {name}: produced {ph.messages:,} x {size} B in {ph.seconds:.2f} s"
                  f"{'' if ph.complete else ' (time limit)'}", flush=True)
            with collector_paused():
                ch = guarded(f"{name} consume {size}B",
                             lambda t=topic, s=size, n=ph.messages: consume(
                                 broker, t, s, n, args.time_limit))
            if ch is not None:
                res.consume[size] = ch
                print(f"   {name}: consumed {ch.messages:,} x {size} B in {ch.seconds:.2f} s"
                      f"{'' if ch.complete else ' (time limit)'}", flush=True)
        with collector_paused():
            lat = guarded(f"{name} latency", lambda: latency(broker, args.latency_samples,
                                                              args.latency_time_limit))
        if lat:
            res.latency_ms = lat
        print(f"   {name}: broker RSS {broker.rss_mb():.0f} MB", flush=True)
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    broker_args(ap)
    ap.add_argument("--sizes", default="100,1024", help="message sizes in bytes")
    ap.add_argument("--counts", default="2000000,500000", help="messages per size")
    ap.add_argument("--latency-samples", type=int, default=2000)
    ap.add_argument("--time-limit", type=float, default=20.0,
                    help="seconds allowed per phase (produce, consume)")
    ap.add_argument("--latency-time-limit", type=float, default=10.0,
                    help="seconds allowed for the latency samples")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    counts = [int(s) for s in args.counts.split(",")]
    if len(counts) != len(sizes):
        ap.error("--counts needs one count per size")
    header("produce / consume (confluent-kafka, acks=1, 1 partition, no compression)")
    results: dict[str, Result] = {}
    for name in broker_names(args):
        results[name] = run(name, args, sizes, counts)

    names = list(results)
    rows = []
    for size in sizes:
        for phase in ("produce", "consume"):
            for name in names:
                ph = getattr(results[name], phase).get(size)
                if ph is None:
                    rows.append([f"{phase} {size} B", name, "error", None, None, None, None,
                                 None])
                    continue
                rows.append([f"{phase} {size} B", name, ph.messages, ph.msgs_per_s, ph.mb_per_s,
                             ph.cpu_per_gb, ph.client_pct, "" if ph.complete else "time limit"])
    print()
    print(table(["phase", "broker", "messages", "msgs/s", "MB/s", "broker CPU s/GB",
                 "client CPU %", "note"], rows))

    lat_rows = []
    for name in names:
        lat = results[name].latency_ms
        lat_rows.append([name, len(lat), percentile(lat, 50) if lat else None,
                         percentile(lat, 99) if lat else None, max(lat) if lat else None])
    print()
    print(table(["end-to-end latency (one in flight)", "samples", "p50 ms", "p99 ms", "max ms"],
                lat_rows))

    if "kafkalite" in results and "tansu" in results:
        k, t = results["kafkalite"], results["tansu"]
        r_rows = []
        for size in sizes:
            for phase in ("produce", "consume"):
                kp, tp = getattr(k, phase).get(size), getattr(t, phase).get(size)
                r_rows.append([f"{phase} {size} B",
                               ratio(kp.msgs_per_s if kp else None, tp.msgs_per_s if tp else None),
                               ratio(kp.cpu_per_gb if kp else None, tp.cpu_per_gb if tp else None)])
        r_rows.append(["latency p50", ratio(percentile(k.latency_ms, 50) if k.latency_ms else None,
                                            percentile(t.latency_ms, 50) if t.latency_ms else None),
                       None])
        print()
        print(table(["kafkalite / tansu", "throughput ratio", "CPU per GB ratio"], r_rows))


if __name__ == "__main__":
    main()
