"""Crash safety: a ``--durable`` broker killed by SIGKILL while an acks=-1 producer
writes keeps every acknowledged message, and a segment cut mid-batch by hand is
recovered to its last whole batch on start."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from kafkalite.broker.testing.fixtures import BrokerProcess, BrokerThread


def read_all(bootstrap: str, topic: str, expect: int, timeout: float = 20) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "check",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    idle = 0
    while time.monotonic() < deadline and (len(values) < expect or idle < 2):
        got = [m.value() for m in c.consume(10000, 0.5) if m.error() is None]
        idle = 0 if got else idle + 1
        values += got
        if len(values) >= expect and not got:
            break
    c.close()
    return values


def whole_batches(segment: Path) -> bool:
    data = segment.read_bytes()
    pos = 0
    while pos + 12 <= len(data):
        pos += int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
    return pos == len(data)


def test_sigkill_during_durable_produce_keeps_acknowledged(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data, extra_args=["--durable"]).start()
    acked: set[bytes] = set()
    stop = threading.Event()
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 1,
                  "message.timeout.ms": 30000, "retries": 0})

    def on_delivery(err: object, msg: object) -> None:
        if err is None:
            acked.add(msg.value())  # type: ignore[attr-defined]

    def produce() -> None:
        i = 0
        while not stop.is_set():
            try:
                p.produce("crash", f"m{i}".encode(), on_delivery=on_delivery)
                i += 1
            except BufferError:
                pass
            p.poll(0.0005 if i % 50 == 0 else 0)

    t = threading.Thread(target=produce)
    t.start()
    deadline = time.monotonic() + 20
    while len(acked) < 1500 and time.monotonic() < deadline:
        time.sleep(0.02)
    broker.kill()  # SIGKILL in the middle of the stream
    stop.set()
    t.join(10)
    p.poll(0.5)  # deliveries acknowledged before the kill still arrive
    confirmed = set(acked)
    assert len(confirmed) >= 1500
    p.purge()
    p.flush(0)

    restarted = BrokerProcess(data).start()
    try:
        values = read_all(restarted.bootstrap, "crash", len(confirmed))
        assert confirmed <= set(values), f"lost {len(confirmed - set(values))} acked messages"
        assert len(values) == len(set(values))
        segments = sorted((data / "crash-0").glob("*.log"))
        assert segments and all(whole_batches(s) for s in segments)
    finally:
        restarted.stop()


def test_segment_cut_mid_batch_recovers(tmp_path: Path) -> None:
    b = BrokerThread(tmp_path / "data").start()
    try:
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
        for i in range(20):
            p.produce("cut", f"v{i}".encode())
            p.flush(10)  # one batch per message
        assert b.broker is not None
        assert b.broker.logs.get("cut", 0).log_end_offset == 20
        port = b.port
        b.stop()
        seg = tmp_path / "data" / "cut-0" / "00000000000000000000.log"
        size = seg.stat().st_size
        with open(seg, "r+b") as f:
            f.truncate(size - 5)  # the last batch is now torn
        (tmp_path / "data" / "cut-0" / "00000000000000000000.index").write_bytes(b"\x01" * 5)
        b.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{port}"
        b.start()
        assert b.broker is not None
        plog = b.broker.logs.get("cut", 0)
        assert plog.log_end_offset == 19
        assert whole_batches(seg) and seg.stat().st_size < size - 5
        assert read_all(b.bootstrap, "cut", 19) == [f"v{i}".encode() for i in range(19)]
        # New writes continue at the recovered end.
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
        p.produce("cut", b"after")
        assert p.flush(10) == 0
        assert plog.log_end_offset == 20
    finally:
        b.stop()
