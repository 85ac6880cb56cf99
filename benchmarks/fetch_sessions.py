"""Fetch request and response sizes with and without incremental fetch sessions (KIP-227).

    python -m benchmarks.fetch_sessions [--partitions 1000] [--seconds 10] [--rate 50]
                                        [--brokers kafkalite,kafka] [--out DIR]

One kafka-python consumer (which keeps fetch sessions, as the Java consumer does) is
assigned every partition of a topic and polls while a producer writes ``--rate`` records
a second to random partitions. The same run is made against each broker with its
default ``max.incremental.fetch.session.cache.slots`` (sessions) and with 0 (every Fetch
full): kafkalite, and Apache Kafka 4.4 (one KRaft node, its start script's JVM options,
the jars of jvm/pom.xml), the brokers taking turns in each mode. The consumer talks to
the broker through a proxy in this process that reads the Kafka frames both ways (the
broker advertises the proxy's address), so the sizes are the bytes on the wire, size
prefix included. The warm-up (a first record in every partition, read from the
beginning, then a second of idle fetches) is left out of the figures. Broker CPU is the
broker process's user + system time over the measured seconds (the JVM's included).
Prints a table and writes ``fetch-sessions.json`` and ``fetch-sessions.png`` to DIR.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.support.common import Broker, Kafka, Kafkalite, create_topic, fmt, header, table

FETCH = 1
_SIZE = struct.Struct(">i")
_REQUEST_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id


@dataclass
class Wire:
    """Frames and bytes per API key, each way."""

    requests: Counter[int] = field(default_factory=Counter)
    request_bytes: Counter[int] = field(default_factory=Counter)
    response_bytes: Counter[int] = field(default_factory=Counter)

    def reset(self) -> None:
        self.requests.clear()
        self.request_bytes.clear()
        self.response_bytes.clear()


class Proxy:
    """A TCP proxy on 127.0.0.1 that counts Kafka frames per API, in its own thread."""

    def __init__(self) -> None:
        self.wire = Wire()
        self.target = 0
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self._server: asyncio.AbstractServer | None = None
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        ready.wait(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self._server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _serve(self, client_r: asyncio.StreamReader,
                     client_w: asyncio.StreamWriter) -> None:
        broker_r, broker_w = await asyncio.open_connection("127.0.0.1", self.target)
        pending: dict[int, int] = {}
        wire = self.wire

        async def upstream() -> None:
            while True:
                head = await client_r.readexactly(4)
                body = await client_r.readexactly(_SIZE.unpack(head)[0])
                api, _version, corr = _REQUEST_HEAD.unpack_from(body)
                pending[corr] = api
                wire.requests[api] += 1
                wire.request_bytes[api] += 4 + len(body)
                broker_w.write(head + body)

        async def downstream() -> None:
            while True:
                head = await broker_r.readexactly(4)
                body = await broker_r.readexactly(_SIZE.unpack(head)[0])
                api = pending.pop(_SIZE.unpack_from(body)[0], -1)
                wire.response_bytes[api] += 4 + len(body)
                client_w.write(head + body)

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        with contextlib.suppress(Exception):
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in tasks:
            t.cancel()
        for w in (client_w, broker_w):
            w.close()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


def make(name: str, slots: int, proxy_port: int) -> Broker:
    """The broker NAME with SLOTS session slots, advertising the proxy's address."""
    if name == "kafkalite":
        return Kafkalite({"max.incremental.fetch.session.cache.slots": str(slots)},
                         extra_args=["--advertise", f"127.0.0.1:{proxy_port}"])
    if name == "kafka":
        kafka = Kafka()
        kafka.ref.overrides.update({
            "max.incremental.fetch.session.cache.slots": str(slots),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}",
        })
        return kafka
    raise ValueError(name)


def run(name: str, slots: int, partitions: int, seconds: float,
        rate: float) -> dict[str, Any]:
    from confluent_kafka import Producer
    from kafka import KafkaConsumer, TopicPartition

    proxy = Proxy()
    broker = make(name, slots, proxy.port)
    try:
        broker.start()
        proxy.target = broker.port
        create_topic(broker.bootstrap, "sessions", partitions)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        for p in range(partitions):  # one record everywhere: the start is a busy full fetch
            producer.produce("sessions", b"first", partition=p)
        producer.flush(30)
        consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{proxy.port}",
                                 fetch_max_wait_ms=100, max_poll_records=10_000)
        consumer.assign([TopicPartition("sessions", p) for p in range(partitions)])
        consumer.seek_to_beginning()
        # Warm-up, left out of the figures: the first records of every partition, then a
        # second of fetches that find nothing new.
        read = 0
        deadline = time.monotonic() + 60
        while read < partitions and time.monotonic() < deadline:
            for records in consumer.poll(100).values():
                read += len(records)
        settle = time.monotonic() + 1
        while time.monotonic() < settle:
            consumer.poll(100)
        done = threading.Event()
        proxy.loop.call_soon_threadsafe(lambda: (proxy.wire.reset(), done.set()))
        done.wait(5)
        cpu0 = broker.cpu_seconds()
        read = 0
        started = next_send = time.monotonic()
        while (now := time.monotonic()) - started < seconds:
            while rate > 0 and next_send <= now:
                producer.produce("sessions", b"x" * 100, partition=random.randrange(partitions))
                next_send += 1 / rate
            producer.poll(0)
            for records in consumer.poll(20).values():
                read += len(records)
        cpu = broker.cpu_seconds() - cpu0
        consumer.close()
        producer.flush(10)
        del producer
        wire = proxy.wire
        return {"fetches": wire.requests[FETCH], "request": wire.request_bytes[FETCH],
                "response": wire.response_bytes[FETCH], "records": read, "cpu": cpu}
    finally:
        broker.stop()
        if isinstance(broker, Kafkalite):
            broker.cleanup()
        proxy.close()


MODES = (("sessions (1000 slots)", 1000), ("no sessions (0 slots)", 0))


def plot(results: dict[str, dict[str, dict[str, Any]]], out: Path) -> None:
    """Four panels (fetches, bytes per request, bytes per response, broker CPU per fetch),
    a bar per broker in each mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (
        ("Fetch requests in the measured time", lambda r: r["fetches"], False),
        ("bytes per Fetch request", lambda r: r["request"] / max(r["fetches"], 1), True),
        ("bytes per Fetch response", lambda r: r["response"] / max(r["fetches"], 1), True),
        ("broker CPU per Fetch (ms)", lambda r: 1000 * r["cpu"] / max(r["fetches"], 1),
         False),
    )
    brokers = list(results)
    modes = [label for label, _ in MODES if all(label in results[b] for b in brokers)]
    width = 0.8 / max(len(brokers), 1)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6))
    for ax, (title, value, log) in zip(axes, panels, strict=True):
        for i, broker in enumerate(brokers):
            xs = [m + (i - (len(brokers) - 1) / 2) * width for m in range(len(modes))]
            ys = [value(results[broker][mode]) for mode in modes]
            bars = ax.bar(xs, ys, width, label=broker)
            ax.bar_label(bars, labels=[fmt(y) for y in ys], fontsize=7)
        ax.set_xticks(range(len(modes)), [m.split(" (")[0] for m in modes])
        ax.set_title(title, fontsize=9)
        if log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="measured time per run (after one second of warm-up)")
    parser.add_argument("--rate", type=float, default=50.0,
                        help="records produced per second, to random partitions")
    parser.add_argument("--brokers", default="kafkalite,kafka",
                        help="of kafkalite and kafka (Apache Kafka 4.4 from jvm/pom.xml)")
    parser.add_argument("--out", default="fetch-sessions",
                        help="directory for fetch-sessions.json and fetch-sessions.png")
    args = parser.parse_args()
    brokers = [b for b in args.brokers.split(",") if b]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    header(f"Fetch sizes, kafka-python consumer on {args.partitions} partitions, "
           f"{args.rate:g} records/s, {args.seconds:g} s: {', '.join(brokers)}")
    results: dict[str, dict[str, dict[str, Any]]] = {b: {} for b in brokers}
    for label, slots in MODES:
        for broker in brokers:  # in turns: a change in the machine's load reaches both
            results[broker][label] = run(broker, slots, args.partitions, args.seconds,
                                         args.rate)
            print(f"   {broker}, {label}: done, load {os.getloadavg()[0]:.1f}", flush=True)
            (out / "fetch-sessions.json").write_text(json.dumps(results, indent=1))
    rows = []
    for label, _ in MODES:
        for broker in brokers:
            r = results[broker][label]
            n = max(r["fetches"], 1)
            rows.append([broker, label, r["fetches"], r["request"] / n, r["response"] / n,
                         r["request"] / 1e6, r["response"] / 1e6, r["records"], r["cpu"],
                         1000 * r["cpu"] / n])
    print(table(["broker", "mode", "fetches", "avg request B", "avg response B",
                 "request MB", "response MB", "records", "broker CPU s",
                 "CPU per fetch ms"], rows))
    if len(brokers) == 2:
        a, b = brokers
        for label, _ in MODES:
            ra, rb = results[a][label], results[b][label]
            na, nb = max(ra["fetches"], 1), max(rb["fetches"], 1)
            print(f"   {label}, {a} / {b} per fetch: request "
                  f"{fmt((ra['request'] / na) / max(rb['request'] / nb, 1e-9), 3)}, response "
                  f"{fmt((ra['response'] / na) / max(rb['response'] / nb, 1e-9), 3)}, CPU "
                  f"{fmt((ra['cpu'] / na) / max(rb['cpu'] / nb, 1e-9), 3)}")
    plot(results, out / "fetch-sessions.png")
    print(f"\nwrote {out / 'fetch-sessions.json'} and {out / 'fetch-sessions.png'}",
          flush=True)


if __name__ == "__main__":
    main()
