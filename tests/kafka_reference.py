"""A real Apache Kafka (single-node KRaft, combined broker and controller) for tests and
benchmarks: the reference kafkalite is compared with.

The jars come from ``scripts/kafka-jars.sh`` (Maven, pinned in ``jvm/pom.xml``, cached).
``KafkaReference(workdir).start()`` formats a log directory under ``workdir`` with
Kafka's storage tool, starts ``kafka.Kafka`` on 127.0.0.1 with free ports and short group
settings, and waits until the broker answers Metadata. ``stop()`` ends the JVM.

``shared_kafka(lock_dir)`` runs one Kafka for several processes (pytest-xdist workers): the
first user starts it, the others find its address in a state file under ``lock_dir``, and
the last one to leave stops it (a reference count under a file lock).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
JARS_SCRIPT = REPO / "scripts" / "kafka-jars.sh"
#: The release pinned in jvm/pom.xml, as kafkalite's release table names it ("4.4").
KAFKA_RELEASE = ".".join(re.search(r"<kafka.version>([^<]+)</kafka.version>", (
    REPO / "jvm" / "pom.xml").read_text()).group(1).split(".")[:2])  # type: ignore[union-attr]

#: Settings that keep a one-node Kafka quick to start and quick to form groups, as the
#: kafkalite integration tests use (tests/… and broker/testing/fixtures.py TEST_DEFAULTS).
TEST_SETTINGS: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "100",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "false",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "log.initial.task.delay.ms": "0",
    "unstable.api.versions.enable": "false",
}


#: JVM flags for a test broker: start quickly, run a short while (small heap, the serial
#: collector, the first JIT tier only). A benchmark passes Kafka's own (bin/kafka-run-class.sh).
QUICK_START: tuple[str, ...] = ("-Xms128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                "-Xshare:auto")


#: The users of the SASL_PLAINTEXT listener (mechanism PLAIN).
SASL_USERS: dict[str, str] = {"alice": "alice-secret"}


class KafkaUnavailable(RuntimeError):
    """Kafka's jars could not be had (Maven or its registry unreachable) or it did not
    start: the tests that need it fail with this message, they are never skipped."""


def kafka_jars() -> Path:
    """The folder with Kafka's jars, resolving them with Maven on the first call."""
    env_dir = os.environ.get("KAFKALITE_KAFKA_JARS_DIR")
    if env_dir and (Path(env_dir) / ".complete").exists():
        return Path(env_dir)
    proc = subprocess.run(["bash", str(JARS_SCRIPT)], capture_output=True, text=True,
                          timeout=900, check=False)
    if proc.returncode != 0:
        raise KafkaUnavailable(
            "Apache Kafka's jars are needed for this test and could not be resolved: "
            + (proc.stderr.strip() or f"scripts/kafka-jars.sh exited {proc.returncode}"))
    return Path(proc.stdout.strip().splitlines()[-1])


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports on 127.0.0.1. Every socket stays bound until all are
    drawn, so no two can be the same port (one drawn, closed, then drawn again)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]


def free_port() -> int:
    return free_ports(1)[0]


def _cluster_id() -> str:
    """A random id as Kafka's ``Uuid.randomUuid`` makes one: never starting with "-",
    which the tools' argument parser would take for an option."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class KafkaReference:
    """One Kafka JVM. ``bootstrap`` is "127.0.0.1:PORT" once started."""

    def __init__(self, workdir: Path, overrides: Mapping[str, str] | None = None,
                 heap: str = "512m", jvm_flags: Sequence[str] = QUICK_START) -> None:
        self.workdir = Path(workdir)
        self.overrides = dict(overrides or {})
        self.heap = heap
        self.jvm_flags = tuple(jvm_flags)
        self.port = 0
        self.sasl_port = 0
        self.controller_port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.workdir / "kafka.log"

    @property
    def bootstrap(self) -> str:
        """The PLAINTEXT listener: its principal (ANONYMOUS) is a super user."""
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap(self) -> str:
        """The SASL_PLAINTEXT listener (mechanism PLAIN, ``SASL_USERS``): ACLs apply, and
        with none a user may do nothing."""
        return f"127.0.0.1:{self.sasl_port}"

    def _java(self, jars: Path, main: str, *args: str) -> list[str]:
        log4j = self.workdir / "log4j2.properties"
        return ["java", f"-Xmx{self.heap}", *self.jvm_flags,
                "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}",
                "-cp", f"{jars}/*", main, *args]

    def _write_config(self) -> Path:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port, self.sasl_port, self.controller_port = free_ports(3)
        users = " ".join(f'user_{u}="{p}"' for u, p in SASL_USERS.items())
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": (f"PLAINTEXT://127.0.0.1:{self.port},"
                          f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port},"
                          f"CONTROLLER://127.0.0.1:{self.controller_port}"),
            "advertised.listeners": (f"PLAINTEXT://127.0.0.1:{self.port},"
                                     f"SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"),
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f"{users};"),
            "authorizer.class.name":
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "false",
            "log.dirs": str(self.workdir / "data"),
            **TEST_SETTINGS,
            **self.overrides,
        }
        path = self.workdir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.workdir / "log4j2.properties").write_text(
            "rootLogger.level=WARN\nrootLogger.appenderRef.out.ref=OUT\n"
            "appender.out.type=Console\nappender.out.name=OUT\n"
            "appender.out.layout.type=PatternLayout\n"
            "appender.out.layout.pattern=[%d] %p %m (%c)%n\n")
        return path

    def start(self, timeout: float = 120.0) -> KafkaReference:
        self.format()
        return self.launch(timeout)

    def format(self) -> None:
        """Write the configuration and format the log directory (kafka-storage format),
        what an installation does once before its first start."""
        config = self._write_config()
        fmt = subprocess.run(
            self._java(kafka_jars(), "kafka.tools.StorageTool", "format", "-t",
                       _cluster_id(), "-c", str(config), "--ignore-formatted"),
            capture_output=True, text=True, timeout=180, check=False)
        if fmt.returncode != 0:
            raise KafkaUnavailable(f"kafka-storage format failed: {fmt.stdout}{fmt.stderr}")

    def launch(self, timeout: float = 120.0) -> KafkaReference:
        """Start the formatted broker (kafka-server-start) and wait until it is ready."""
        config = self.workdir / "server.properties"
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(self._java(kafka_jars(), "kafka.Kafka", str(config)),
                                     stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        log.close()
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        # Ready when the broker answers Metadata with itself as a live broker (KRaft
        # registration done), not merely when the port accepts.
        from kafkalite.client.kafka import RawConnection, request

        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise KafkaUnavailable(
                    f"Kafka exited with {self.proc.returncode}: {self.tail()}")
            try:
                conn = RawConnection(self.bootstrap, "kafka-reference-probe")
                try:
                    resp = conn.call(request(3, 12, topics=None,
                                             allow_auto_topic_creation=False,
                                             include_topic_authorized_operations=False))
                    if resp.brokers:
                        return
                finally:
                    conn.close()
            except (OSError, RuntimeError, ConnectionError) as e:
                last = e
            # Start-up benchmarks time the launch through this: a short poll.
            time.sleep(0.01)
        self.stop()
        raise KafkaUnavailable(f"Kafka did not become ready in {timeout:.0f}s ({last}): "
                               f"{self.tail()}")

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _stop_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@dataclass(frozen=True)
class KafkaAddress:
    """A running reference Kafka: ``bootstrap`` (PLAINTEXT, super user) and
    ``sasl_bootstrap`` (SASL_PLAINTEXT/PLAIN with ``SASL_USERS``, ACLs enforced)."""

    bootstrap: str
    sasl_bootstrap: str


@contextmanager
def shared_kafka(lock_dir: Path) -> Iterator[KafkaAddress]:
    """One Kafka for every process that enters with the same ``lock_dir``; yields its
    addresses. The last process to leave stops it."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    lock, state_path = lock_dir / "kafka.lock", lock_dir / "kafka.json"
    with _locked(lock):
        state = json.loads(state_path.read_text()) if state_path.exists() else None
        if state is not None and not _alive(state["pid"]):
            state = None
        if state is None:
            kafka = KafkaReference(lock_dir / "kafka").start()
            assert kafka.proc is not None
            state = {"pid": kafka.proc.pid, "bootstrap": kafka.bootstrap,
                     "sasl_bootstrap": kafka.sasl_bootstrap, "users": 0}
        state["users"] += 1
        state_path.write_text(json.dumps(state))
    try:
        yield KafkaAddress(str(state["bootstrap"]), str(state["sasl_bootstrap"]))
    finally:
        with _locked(lock):
            state = json.loads(state_path.read_text())
            state["users"] -= 1
            if state["users"] <= 0:
                _stop_pid(int(state["pid"]))
                state_path.unlink()
            else:
                state_path.write_text(json.dumps(state))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


if __name__ == "__main__":  # pragma: no cover - a hand check: start, print, stop
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        t0 = time.monotonic()
        k = KafkaReference(Path(d)).start()
        print(f"Kafka at {k.bootstrap} in {time.monotonic() - t0:.1f}s")
        k.stop()
