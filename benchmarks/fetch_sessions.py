"""Fetch request and response sizes with and without incremental fetch sessions (KIP-227).

    python -m benchmarks.fetch_sessions [--partitions 1000] [--seconds 10] [--rate 50]

One kafka-python consumer (which keeps fetch sessions, as the Java consumer does) is
assigned every partition of a topic and polls while a producer writes ``--rate`` records
a second to random partitions. The same run is made against a kafkalite broker with its
default ``max.incremental.fetch.session.cache.slots`` (sessions) and with 0 (every Fetch
full). The consumer talks to the broker through a proxy in this process that reads the
Kafka frames both ways (the broker advertises the proxy's address), so the sizes are
the bytes on the wire, size prefix included. The warm-up (a first record in every
partition, read from the beginning, then a second of idle fetches) is left out of the
figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .common import Kafkalite, create_topic, fmt, header, table

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


def run(slots: int, partitions: int, seconds: float, rate: float) -> dict[str, Any]:
    from confluent_kafka import Producer
    from kafka import KafkaConsumer, TopicPartition

    proxy = Proxy()
    broker = Kafkalite({"max.incremental.fetch.session.cache.slots": str(slots)},
                       extra_args=["--advertise", f"127.0.0.1:{proxy.port}"])
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
        broker.cleanup()
        proxy.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="measured time per run (after one second of warm-up)")
    parser.add_argument("--rate", type=float, default=50.0,
                        help="records produced per second, to random partitions")
    args = parser.parse_args()
    header(f"Fetch sizes, kafka-python consumer on {args.partitions} partitions, "
           f"{args.rate:g} records/s, {args.seconds:g} s")
    rows = []
    for label, slots in (("sessions (1000 slots)", 1000), ("no sessions (0 slots)", 0)):
        r = run(slots, args.partitions, args.seconds, args.rate)
        n = max(r["fetches"], 1)
        rows.append([label, r["fetches"], r["request"] / n, r["response"] / n,
                     r["request"] / 1e6, r["response"] / 1e6, r["records"], r["cpu"]])
        print(f"   {label}: done", flush=True)
    print(table(["mode", "fetches", "avg request B", "avg response B", "request MB",
                 "response MB", "records", "broker CPU s"], rows))
    if rows[0][1] and rows[1][1]:
        print(f"   per fetch, sessions / no sessions: request "
              f"{fmt(rows[0][2] / rows[1][2], 3)}, response {fmt(rows[0][3] / rows[1][3], 3)}")


if __name__ == "__main__":
    main()
