"""Kafka 4.4 as a KRaft controller and N broker processes for ``benchmarks.scale sizes
--nodes N``: started and stopped as a whole, as one node's restart is, with every wait
bounded. Each process has its own descriptor limit, so N brokers hold N times the
partitions one can."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import psutil

from benchmarks.support.common import wait_port
from benchmarks.support.kafka_cluster import KafkaCluster, KafkaNode


class ClusterSide:
    """The cluster's processes; formatted once, before the first start is timed."""

    def __init__(self, brokers: int) -> None:
        self.cluster = KafkaCluster(brokers)
        self.formatted = False

    @property
    def nodes(self) -> list[KafkaNode]:
        return [self.cluster.controller, *self.cluster.brokers.values()]

    @property
    def bootstrap(self) -> str:
        return self.cluster.brokers[1].bootstrap

    @property
    def procs(self) -> list[subprocess.Popen[bytes]]:
        return [n.proc for n in self.cluster.brokers.values() if n.proc is not None]

    @property
    def log_paths(self) -> list[Path]:
        return [Path(n.log_path) for n in self.nodes]

    def controller_rss_mb(self) -> float:
        proc = self.cluster.controller.proc
        return float(psutil.Process(proc.pid).memory_info().rss) / 1e6 if proc else 0.0

    def start(self, timeout: float) -> tuple[float, float]:
        """Every process launched at once; the seconds until every broker's port accepts
        and until each answers a Metadata naming all the brokers."""
        from benchmarks.support.scale_sizes import first_metadata
        from tests.kafka_reference import kafka_jars

        if not self.formatted:
            for node in self.nodes:
                node.format()
            self.formatted = True
        jars = kafka_jars()
        t0 = time.monotonic()
        for node in self.nodes:
            with node.log_path.open("ab") as log:
                node.proc = subprocess.Popen(
                    node._java(jars, "kafka.Kafka", str(node.workdir / "server.properties")),
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = t0 + timeout
        for node in self.cluster.brokers.values():
            assert node.proc is not None
            wait_port(node.port, node.proc, deadline - time.monotonic())
        listening = time.monotonic() - t0
        for node in self.cluster.brokers.values():
            first_metadata(node.bootstrap, max(deadline - time.monotonic(), 1.0),
                           brokers=len(self.cluster.brokers))
        return listening, time.monotonic() - t0

    def stop(self, timeout: float) -> None:
        """SIGTERM to every broker at once (a controlled shutdown each), then the
        controller they report to; killed only past TIMEOUT."""
        for group in (list(self.cluster.brokers.values()), [self.cluster.controller]):
            running = [n for n in group if n.proc is not None and n.proc.poll() is None]
            for n in running:
                assert n.proc is not None
                n.proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout
            for n in running:
                assert n.proc is not None
                try:
                    n.proc.wait(max(deadline - time.monotonic(), 1.0))
                except subprocess.TimeoutExpired:
                    print(f"   kafka node {n.node_id}: not stopped in {timeout:.0f} s, killed",
                          flush=True)
                    n.proc.kill()
                    n.proc.wait(30)
            for n in group:
                n.proc = None

    def cleanup(self) -> None:
        self.cluster.stop()
