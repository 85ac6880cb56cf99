"""Record the seed corpus of the fuzz targets from real clients.

``python -m tests.fuzz.capture`` starts a broker, puts a recording proxy on 127.0.0.1 in
front of it (the broker advertises the proxy, so every client connection goes through
it), runs kafka-python, aiokafka and confluent-kafka workloads (produce with every
codec, consumer groups, commits, admin calls) and writes under ``tests/fuzz/corpus/``:

- ``request/``: request frame bodies as the clients sent them (a few per client, api and
  version);
- ``stream/``: the first bytes each client connection sent, size prefixes included;
- ``records/``: record batches from the Produce requests and the broker's own segments;
- ``offsets/``: ``__consumer_offsets`` records (uint16 key length, key, value) and the
  consumer protocol subscriptions and assignments carried by JoinGroup and SyncGroup.

The corpus is kept in the repository; run this again only to refresh it.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import struct
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.headers import parse_request_header
from kafkalite.protocol.records import iter_batch_headers

CORPUS = Path(__file__).resolve().parent / "corpus"
PER_KEY = 3
STREAM_BYTES = 16384


class Recorder:
    """A TCP proxy that keeps the client-to-broker bytes of every connection."""

    def __init__(self) -> None:
        self.streams: list[tuple[str, bytearray]] = []
        self.label = "unknown"
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self.upstream = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Recorder:
        self._thread.start()
        self._ready.wait(10)
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        buf = bytearray()
        self.streams.append((self.label, buf))
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                       keep: bytearray | None) -> None:
            try:
                while data := await src.read(65536):
                    if keep is not None:
                        keep += data
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_w, buf), pipe(up_r, writer, None))


def split(stream: bytes) -> list[bytes]:
    out = []
    pos = 0
    while pos + 4 <= len(stream):
        (n,) = struct.unpack_from(">i", stream, pos)
        if n < 0 or pos + 4 + n > len(stream):
            break
        out.append(stream[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return out


def save(directory: Path, name: str, data: bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:10]
    (directory / f"{name}-{digest}.bin").write_bytes(data)


# --- client workloads ------------------------------------------------------------------


def kafka_python(bootstrap: str) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import ConfigResource, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("kp-topic", 2, 1)])
    for codec in ("gzip", "snappy", "lz4", "zstd", None):
        p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, linger_ms=5)
        for i in range(20):
            p.send("kp-topic", key=f"k{i}".encode(), value=f"v{i}".encode() * 3,
                   headers=[("h", b"x")])
        p.flush()
        p.close()
    c = KafkaConsumer("kp-topic", bootstrap_servers=bootstrap, group_id="kp-group",
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      consumer_timeout_ms=3000)
    n = 0
    for _m in c:
        n += 1
        if n >= 50:
            break
    c.commit()
    c.close()
    for call in (lambda: admin.describe_groups(["kp-group"]), admin.list_groups,
                 lambda: admin.list_group_offsets("kp-group"), admin.describe_cluster,
                 lambda: admin.describe_configs([ConfigResource("TOPIC", "kp-topic")])):
        try:
            call()
        except Exception as e:  # an admin call the broker refuses still sent its frame
            print("  kafka-python admin:", type(e).__name__, e)
    admin.delete_topics(["kp-topic"])
    admin.close()


def aiokafka_clients(bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def run() -> None:
        for codec in ("gzip", "lz4", "zstd", None):
            p = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=codec,
                                 enable_idempotence=codec == "zstd")
            await p.start()
            for i in range(20):
                await p.send("aio-topic", f"v{i}".encode(), key=b"k", headers=[("h", b"y")])
            await p.flush()
            await p.stop()
        c = AIOKafkaConsumer("aio-topic", bootstrap_servers=bootstrap, group_id="aio-group",
                             auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        got = await c.getmany(timeout_ms=3000)
        await c.commit()
        await c.stop()
        assert got

    asyncio.run(run())


def confluent(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic("ck-topic", 2, 1)]).values():
        f.result(10)
    for codec in ("gzip", "snappy", "lz4", "zstd", "none"):
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec,
                      "enable.idempotence": True, "linger.ms": 5})
        for i in range(20):
            p.produce("ck-topic", f"v{i}".encode() * 4, key=f"k{i}", headers={"h": b"z"})
        p.flush(10)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ck-group",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": 6000})
    c.subscribe(["ck-topic"])
    got = 0
    deadline = time.monotonic() + 15
    while got < 50 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
    c.commit(asynchronous=False)
    c.committed([TopicPartition("ck-topic", 0)], 5)
    c.get_watermark_offsets(TopicPartition("ck-topic", 0), 5)
    c.offsets_for_times([TopicPartition("ck-topic", 0, 0)], 5)
    c.close()
    admin.list_topics(timeout=5)
    for f in admin.describe_configs([ConfigResource("TOPIC", "ck-topic")]).values():
        f.result(10)
    admin.list_consumer_groups().result(10)
    for f in admin.describe_consumer_groups(["ck-group"]).values():
        f.result(10)
    for f in admin.create_partitions([NewPartitions("ck-topic", 3)]).values():
        f.result(10)
    for f in admin.delete_topics(["ck-topic"]).values():
        f.result(10)


WORKLOADS = {"kafka-python": kafka_python, "aiokafka": aiokafka_clients,
             "confluent": confluent}


def main() -> None:
    rec = Recorder().start()
    data = Path(tempfile.mkdtemp(prefix="kafkalite-capture-"))
    broker = BrokerThread(data, {
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{rec.port}",
        "group.initial.rebalance.delay.ms": "0",
    }).start()
    rec.upstream = broker.port
    bootstrap = f"127.0.0.1:{rec.port}"
    try:
        for label, fn in WORKLOADS.items():
            rec.label = label
            print("capturing", label, flush=True)
            fn(bootstrap)
    finally:
        time.sleep(0.5)
        broker.stop()
    for sub in ("request", "stream", "records", "offsets"):
        shutil.rmtree(CORPUS / sub, ignore_errors=True)
    kept: Counter[tuple[str, int, int]] = Counter()
    for label, stream in rec.streams:
        raw = bytes(stream)
        if raw:
            save(CORPUS / "stream", label, raw[:STREAM_BYTES])
        for body in split(raw):
            key, version = struct.unpack_from(">hh", body, 0)
            name = codecs.API_NAMES.get(key, str(key))
            if kept[(label, key, version)] < PER_KEY:
                kept[(label, key, version)] += 1
                save(CORPUS / "request", f"{label}-{name}-v{version}", body)
            extract(label, key, version, body)
    for seg in data.rglob("*.log"):
        raw = seg.read_bytes()
        for pos, h in iter_batch_headers(raw):
            batch = raw[pos : pos + h.size]
            save(CORPUS / "records", f"segment-{seg.parent.name}", batch)
            if seg.parent.name.startswith("__consumer_offsets"):
                offsets_records(batch)
    shutil.rmtree(data, ignore_errors=True)
    for sub in ("request", "stream", "records", "offsets"):
        print(sub, len(list((CORPUS / sub).glob("*.bin"))), "files")


def extract(label: str, key: int, version: int, body: bytes) -> None:
    """Record batches from Produce, consumer protocol payloads from JoinGroup/SyncGroup."""
    try:
        c = codecs.codec(key, version)
    except Exception:
        return
    header = parse_request_header(body, c.request_flexible)
    req = c.decode_request(body, header.body_offset)
    if key == 0:
        for t in req.topic_data:
            for p in t.partition_data:
                if p.records:
                    save(CORPUS / "records", f"{label}-produce-v{version}", bytes(p.records))
    elif key == 11:
        for proto in req.protocols:
            save(CORPUS / "offsets", f"{label}-subscription", b"\xff\xfe" + bytes(proto.metadata))
    elif key == 14:
        for a in req.assignments:
            save(CORPUS / "offsets", f"{label}-assignment", b"\xff\xff" + bytes(a.assignment))


def offsets_records(batch: bytes) -> None:
    from kafkalite.protocol.records import decode_batch

    _h, records = decode_batch(batch)
    for r in records:
        k = r.key or b""
        save(CORPUS / "offsets", "record", struct.pack(">H", len(k)) + k + (r.value or b""))


if __name__ == "__main__":
    main()
