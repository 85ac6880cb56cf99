"""A Spark standalone cluster from the pyspark distribution: one master and workers, each a
separate JVM started with pyspark's own ``bin/spark-class``, bound to 127.0.0.1."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).parent
_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_REGISTERED = "Successfully registered with master"


class Cluster:
    def __init__(self, workdir: Path, workers: int = 2, cores: int = 1,
                 memory: str = "1g") -> None:
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1",
                        SPARK_DAEMON_MEMORY="256m", SPARK_LOG_DIR=str(workdir),
                        SPARK_WORKER_DIR=str(workdir / "work"))
        # A port chosen up front lets the workers start beside the master (they retry until
        # it listens): JVM start-up is most of the wait on a busy machine.
        self.url = f"spark://127.0.0.1:{_free_port()}"
        try:
            master_log = self._start("master", "org.apache.spark.deploy.master.Master",
                                     "--host", "127.0.0.1", "--port", self.url.rsplit(":", 1)[1],
                                     "--webui-port", "0")
            logs = [
                self._start(f"worker-{i}", "org.apache.spark.deploy.worker.Worker",
                            "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                            "--cores", str(cores), "--memory", memory,
                            "--work-dir", str(workdir / f"work-{i}"), self.url)
                for i in range(workers)
            ]
            _wait_for(master_log, _MASTER_URL, self.procs[0])
            for i, log in enumerate(logs):
                _wait_for(log, re.compile(re.escape(_REGISTERED)), self.procs[i + 1])
        except BaseException:
            self.stop()
            raise

    def _start(self, name: str, cls: str, *args: str) -> Path:
        log = self.workdir / f"{name}.log"
        with open(log, "wb") as out:
            self.procs.append(subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), cls, *args], env=self.env,
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            ))
        return log

    def stop(self) -> None:
        """Workers first (each stops its executors), then the master; by PID."""
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_for(log: Path, pattern: re.Pattern[str], proc: subprocess.Popen[bytes],
              timeout: float = 300) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = pattern.search(log.read_text(errors="replace")) if log.exists() else None
        if m:
            return m
        if proc.poll() is not None:
            raise RuntimeError(f"{log.name} exited: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.2)
    raise TimeoutError(f"{pattern.pattern} not in {log} after {timeout}s")
