"""A three-broker Apache Kafka (the jars of jvm/pom.xml) on 127.0.0.1 for the failover
benchmark: one KRaft controller process and N broker processes, each a ``KafkaReference``
of the tests with its own configuration, ports and log directory under one temporary
folder, formatted once with one cluster id. A broker is stopped as ``kafka-server-stop``
stops it (SIGTERM: a controlled shutdown) and started again on the same ports and log
directory. Every wait is bounded in time."""

from __future__ import annotations

import shutil
import socket
import tempfile
import time
from pathlib import Path

from benchmarks.support.common import KAFKA_BENCH_SETTINGS, KAFKA_JVM
from tests.kafka_reference import (
    TEST_SETTINGS,
    KafkaReference,
    KafkaUnavailable,
    _cluster_id,
    free_ports,
)

CONTROLLER_ID = 100
LOG4J = ("rootLogger.level=WARN\nrootLogger.appenderRef.out.ref=OUT\n"
         "appender.out.type=Console\nappender.out.name=OUT\n"
         "appender.out.layout.type=PatternLayout\n"
         "appender.out.layout.pattern=[%d] %p %m (%c)%n\n")


class KafkaNode(KafkaReference):
    """One process of the cluster: the controller (``port`` is then its controller
    listener) or a broker (``port`` its PLAINTEXT listener)."""

    def __init__(self, workdir: Path, node_id: int, controller: bool, voters: str,
                 settings: dict[str, str], heap: str) -> None:
        # The controller does little: Kafka's flags without the 1 GB initial heap.
        flags = KAFKA_JVM if not controller else tuple(f for f in KAFKA_JVM
                                                       if not f.startswith("-Xms"))
        super().__init__(workdir, settings, heap=heap, jvm_flags=flags)
        self.node_id = node_id
        self.controller = controller
        self.voters = voters
        self.cluster_id = ""

    def _write_config(self) -> Path:
        self.workdir.mkdir(parents=True, exist_ok=True)
        listener = "CONTROLLER" if self.controller else "PLAINTEXT"
        props = {
            **TEST_SETTINGS,
            **self.overrides,
            "process.roles": "controller" if self.controller else "broker",
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.voters,
            "controller.listener.names": "CONTROLLER",
            "listeners": f"{listener}://127.0.0.1:{self.port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
        }
        if not self.controller:
            props["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{self.port}"
            props["inter.broker.listener.name"] = "PLAINTEXT"
        path = self.workdir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items() if v != ""))
        (self.workdir / "log4j2.properties").write_text(LOG4J)
        return path

    def format(self) -> None:
        """kafka-storage format with the cluster's id (every node the same)."""
        import subprocess

        from tests.kafka_reference import kafka_jars

        config = self._write_config()
        fmt = subprocess.run(
            self._java(kafka_jars(), "kafka.tools.StorageTool", "format", "-t",
                       self.cluster_id, "-c", str(config), "--ignore-formatted"),
            capture_output=True, text=True, timeout=180, check=False)
        if fmt.returncode != 0:
            raise KafkaUnavailable(f"kafka-storage format failed: {fmt.stdout}{fmt.stderr}")

    def _wait_ready(self, timeout: float) -> None:
        if not self.controller:
            super()._wait_ready(timeout)
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise KafkaUnavailable(f"the controller exited: {self.tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), 1):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise KafkaUnavailable(f"the controller did not listen in {timeout:.0f}s")


class KafkaCluster:
    """A KRaft controller and ``brokers`` brokers with node ids 1..N."""

    def __init__(self, brokers: int = 3, heap: str = "1G") -> None:
        self.root = Path(tempfile.mkdtemp(prefix="kafka-cluster-"))
        cluster_id = _cluster_id()
        # Every node's port drawn at once, so no two nodes can get the same one.
        controller_port, *broker_ports = free_ports(brokers + 1)
        voters = f"{CONTROLLER_ID}@127.0.0.1:{controller_port}"
        replicated = str(min(brokers, 3))
        settings = {
            **KAFKA_BENCH_SETTINGS,
            "offsets.topic.replication.factor": replicated,
            "transaction.state.log.replication.factor": replicated,
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": replicated,
            "default.replication.factor": "1",
        }
        self.controller = KafkaNode(self.root / "controller", CONTROLLER_ID, True, voters,
                                    settings, "256m")
        self.controller.port = controller_port
        self.brokers = {i: KafkaNode(self.root / f"broker-{i}", i, False, voters, settings,
                                     heap)
                        for i in range(1, brokers + 1)}
        for node in (self.controller, *self.brokers.values()):
            node.cluster_id = cluster_id
        for node, port in zip(self.brokers.values(), broker_ports, strict=True):
            node.port = port

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.brokers.values())

    def start(self, timeout: float = 180) -> KafkaCluster:
        try:
            for node in (self.controller, *self.brokers.values()):
                node.format()
            self.controller.launch(timeout)
            for node in self.brokers.values():
                node.launch(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop_broker(self, node_id: int) -> None:
        """SIGTERM, as kafka-server-stop: the broker shuts down controlled (its
        leadership moves first); returns when the process has exited."""
        self.brokers[node_id].stop()

    def start_broker(self, node_id: int, timeout: float = 120) -> None:
        self.brokers[node_id].launch(timeout)

    def stop(self) -> None:
        for node in (*self.brokers.values(), self.controller):
            node.stop()
        shutil.rmtree(self.root, ignore_errors=True)
