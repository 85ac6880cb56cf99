"""Live-server fuzz: mutated real-client request frames over TCP to a running broker.

A broker child process (``BrokerProcess``) is sent frames made from the request corpus
(``tests/fuzz/corpus/request``) by a few random mutations each (bit flips, interesting
integers, inserted, deleted or repeated bytes, truncation), with correct size prefixes.
Each mutated frame is followed by an ApiVersions request on the same connection, and the
next frame goes out when its answer arrives or when the broker has closed the connection
(what it does with a malformed frame); several such connections run at once. Meanwhile a
witness — a confluent-kafka producer and a consumer in a group — keeps producing and
consuming on its own topic.

``run`` returns what happened: frames sent, connections closed by the broker, frames
cut by a stall, the broker's RSS over time, witness messages produced and consumed,
rebalances of the witness group, and error lines (unhandled exceptions) in the broker's
log. CreateTopics, CreatePartitions and DeleteTopics frames are left out of the pool
(their mutations would create or delete thousands of topics, which is growth by request,
not a leak); their decoding is fuzzed in-process by the ``request`` target.
"""

from __future__ import annotations

import os
import random
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafkalite.protocol import apis as codecs

CORPUS = Path(__file__).resolve().parent / "corpus" / "request"
EXCLUDED = {19, 20, 37}  # CreateTopics, DeleteTopics, CreatePartitions
_I32 = struct.Struct(">i")
_INTERESTING = (0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, -0x8000, 0x7FFFFFFF, -0x80000000,
                0x10000, 1 << 24)
WITNESS_TOPIC = "witness"
TOPICS = ("kp-topic", "aio-topic", "ck-topic", WITNESS_TOPIC)


def load_pool() -> list[bytes]:
    pool = []
    for p in sorted(CORPUS.glob("*.bin")):
        data = p.read_bytes()
        if struct.unpack_from(">h", data, 0)[0] not in EXCLUDED:
            pool.append(data)
    return pool


def mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        # Mostly past the api key and version, so most frames reach a body decoder.
        lo = 0 if rng.random() < 0.1 else min(4, len(buf))
        if len(buf) <= lo:
            buf += bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            continue
        pos = rng.randrange(lo, len(buf))
        op = rng.randrange(7)
        if op == 0:
            buf[pos] ^= 1 << rng.randrange(8)
        elif op == 1:
            buf[pos] = rng.randrange(256)
        elif op == 2:
            width = rng.choice((1, 2, 4))
            v = rng.choice(_INTERESTING)
            chunk = (v & ((1 << (8 * width)) - 1)).to_bytes(width, "big")
            buf[pos : pos + width] = chunk
        elif op == 3:
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op == 4:
            del buf[pos : pos + rng.randint(1, 16)]
        elif op == 5:
            del buf[pos:]
        else:
            end = min(len(buf), pos + rng.randint(1, 64))
            buf[pos:pos] = buf[pos:end] * rng.randint(1, 8)
    return bytes(buf)


def _api_versions(corr: int) -> bytes:
    body = struct.pack(">hhih", 18, 0, corr, -1)
    return _I32.pack(len(body)) + body


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def alive(pid: int) -> bool:
    """The process exists and has not exited (a zombie, exited and not yet reaped by its
    parent, still has its /proc entry)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@dataclass
class LiveResult:
    frames: int = 0
    #: Responses to fuzz frames (the rest were refused by closing the connection, or
    #: were produce requests with acks=0).
    answered: int = 0
    closed_by_broker: int = 0
    stalled: int = 0
    seconds: float = 0.0
    rss_mb: list[tuple[float, float]] = field(default_factory=list)
    witness_produced: int = 0
    witness_acked: int = 0
    witness_consumed: int = 0
    witness_assignments: int = 0
    witness_max_ack_ms: float = 0.0
    witness_errors: list[str] = field(default_factory=list)
    broker_alive: bool = True
    #: The broker's exit status if it stopped before the end (negative: the signal that
    #: killed it; 0: it was stopped, by a SIGTERM from outside, without failing).
    broker_exit: int | None = None

    @property
    def rss_start(self) -> float:
        return self.rss_mb[0][1] if self.rss_mb else float("nan")

    @property
    def rss_max(self) -> float:
        return max((r for _t, r in self.rss_mb), default=float("nan"))


class Witness:
    """A producer and a group consumer that must be served while the fuzz runs."""

    def __init__(self, bootstrap: str, result: LiveResult) -> None:
        self.bootstrap = bootstrap
        self.result = result
        self.stop = threading.Event()
        self.drain = threading.Event()
        self._threads = [threading.Thread(target=self._produce, daemon=True),
                         threading.Thread(target=self._consume, daemon=True)]
        self._sent: dict[bytes, float] = {}
        self.consumed: set[bytes] = set()
        self.ready = threading.Event()

    def start(self) -> Witness:
        self._threads[1].start()
        self.ready.wait(30)
        self._threads[0].start()
        return self

    def _produce(self) -> None:
        from confluent_kafka import Producer

        r = self.result
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                      "enable.idempotence": True, "linger.ms": 0})

        def done(err: object, msg: object) -> None:
            if err is not None:
                r.witness_errors.append(str(err))
                return
            r.witness_acked += 1
            ms = (time.monotonic() - self._sent[msg.value()]) * 1000  # type: ignore[attr-defined]
            r.witness_max_ack_ms = max(r.witness_max_ack_ms, ms)

        i = 0
        while not self.stop.is_set():
            v = f"w{i}".encode()
            self._sent[v] = time.monotonic()
            p.produce(WITNESS_TOPIC, v, on_delivery=done)
            r.witness_produced += 1
            i += 1
            p.poll(0.02)
        p.flush(30)

    def _consume(self) -> None:
        from confluent_kafka import Consumer

        r = self.result
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "witness-group",
                      "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                      "heartbeat.interval.ms": 500})

        def assigned(_c: object, parts: list[object]) -> None:
            r.witness_assignments += 1
            self.ready.set()

        c.subscribe([WITNESS_TOPIC], on_assign=assigned)
        drain_until = None
        while True:
            if self.drain.is_set() and drain_until is None:
                drain_until = time.monotonic() + 15
            if drain_until is not None and (
                    time.monotonic() > drain_until or len(self.consumed) >= r.witness_acked):
                break
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                self.consumed.add(m.value())
        r.witness_consumed = len(self.consumed)
        c.close()

    def finish(self) -> None:
        self.stop.set()
        self._threads[0].join(60)
        self.drain.set()  # every acknowledgement is in: the consumer reads up to them
        self._threads[1].join(60)


def _sender(host: str, port: int, rng: random.Random, pool: list[bytes], quota: int,
            deadline: float, r: LiveResult, lock: threading.Lock, stop: threading.Event,
            corr_base: int) -> None:
    """One fuzzing connection: ``quota`` frames, each followed by an ApiVersions probe."""
    sock: socket.socket | None = None
    corr = corr_base
    sent = 0
    while sent < quota and time.monotonic() < deadline and not stop.is_set():
        try:
            if sock is None:
                sock = socket.create_connection((host, port), 5)
                sock.settimeout(2)
        except OSError:
            time.sleep(0.05)
            continue
        body = mutate(rng, rng.choice(pool))
        corr += 1
        closed = stalled = False
        answered = 0
        try:
            sock.sendall(_I32.pack(len(body)) + body + _api_versions(corr))
            sent += 1
            ok, answered = _await_answer(sock, corr)
            closed = not ok
        except TimeoutError:
            stalled = True
        except OSError:
            closed = True
        if closed or stalled:
            sock.close()
            sock = None
        with lock:
            r.frames += 1
            r.answered += answered
            r.closed_by_broker += closed
            r.stalled += stalled
    if sock is not None:
        sock.close()


def fuzz(bootstrap: str, pid: int, frames: int, seconds: float, seed: int,
         result: LiveResult | None = None, connections: int = 1) -> LiveResult:
    """Send up to ``frames`` mutated frames within ``seconds`` over ``connections``
    concurrent connections (each waits for its probe's answer, so more than one keeps the
    broker busy where a single round trip would set the pace)."""
    r = result or LiveResult()
    pool = load_pool()
    host, _, port = bootstrap.rpartition(":")
    t0 = time.monotonic()
    deadline = t0 + seconds
    lock = threading.Lock()
    stop = threading.Event()
    quotas = [frames // connections + (1 if i < frames % connections else 0)
              for i in range(connections)]
    threads = [threading.Thread(
        target=_sender, daemon=True,
        args=(host, int(port), random.Random(seed * 1000 + i), pool, quotas[i], deadline, r,
              lock, stop, (1 << 30) + i * (1 << 24)))
        for i in range(connections)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        r.rss_mb.append((time.monotonic() - t0, rss_mb(pid)))
        if not alive(pid):
            r.broker_alive = False
            stop.set()
            break
        for t in threads:
            t.join(1.0 / connections)
    for t in threads:
        t.join(10)
    r.seconds = time.monotonic() - t0
    r.rss_mb.append((r.seconds, rss_mb(pid)))
    r.broker_alive = r.broker_alive and alive(pid)
    return r


def _await_answer(sock: socket.socket, corr: int) -> tuple[bool, int]:
    """Read responses until the one for ``corr`` (True) or the connection's end (False);
    also return how many other responses came."""
    buf = bytearray()
    want = _I32.pack(corr)
    got = 0
    while True:
        data = sock.recv(1 << 16)
        if not data:
            return False, got
        buf += data
        pos = 0
        while len(buf) - pos >= 8:
            (size,) = _I32.unpack_from(buf, pos)
            if len(buf) - pos - 4 < size:
                break
            if buf[pos + 4 : pos + 8] == want:
                return True, got
            got += 1
            pos += 4 + size
        del buf[:pos]


def broker_errors(log_path: Path) -> list[str]:
    """Lines of the broker's log that report an unhandled exception or an error."""
    if not log_path.exists():
        return []
    bad = []
    with open(log_path, errors="replace") as f:
        for line in f:
            if ('"level": "error"' in line or '"level": "critical"' in line
                    or "Traceback" in line or "Exception in callback" in line):
                bad.append(line.strip())
    return bad


def run(data_dir: Path, frames: int, seconds: float, seed: int = 1,
        connections: int = 1) -> tuple[LiveResult, list[str]]:
    """Start a broker, the witness and the fuzz; return the result and the broker's errors."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkalite.broker.testing.fixtures import BrokerProcess

    broker = BrokerProcess(data_dir, {"auto.create.topics.enable": "false",
                                      "group.initial.rebalance.delay.ms": "0"},
                           extra_args=["--log-level", "warning"]).start()
    result = LiveResult()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for f in admin.create_topics([NewTopic(t, 2, 1) for t in TOPICS]).values():
            f.result(20)
        assert broker.proc is not None
        pid = broker.proc.pid
        witness = Witness(broker.bootstrap, result).start()
        try:
            fuzz(broker.bootstrap, pid, frames, seconds, seed, result=result,
                 connections=connections)
            time.sleep(1)  # the witness keeps going a moment after the last frame
        finally:
            witness.finish()
        result.broker_alive = result.broker_alive and broker.proc.poll() is None
        if not result.broker_alive:
            result.broker_exit = broker.proc.poll()
    finally:
        broker.stop()
    return result, broker_errors(broker.log_path)


def api_name(frame: bytes) -> str:
    return codecs.API_NAMES.get(struct.unpack_from(">h", frame, 0)[0], "?")


if __name__ == "__main__":  # pragma: no cover - see benchmarks/fuzz.py
    import tempfile

    res, errs = run(Path(tempfile.mkdtemp()) / "data", int(os.environ.get("FRAMES", "5000")), 60)
    print(res, errs[:5])
