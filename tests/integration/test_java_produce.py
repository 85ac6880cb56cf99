"""The Java producer with enable.idempotence=true against kafkalite; a transactional one
initializes (the transaction tests exercise it further)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from kafkalite.broker.testing.fixtures import BrokerThread


def _classpath() -> str:
    import pyflink  # a namespace package from shigawire-apache-flink-libraries

    lib = Path(next(iter(pyflink.__path__))) / "lib"
    return ":".join(str(lib / j) for j in ("kafka-clients.jar", "slf4j-api.jar", "lz4-java.jar",
                                           "snappy-java.jar", "zstd-jni.jar"))


def test_java_idempotent_producer(broker: BrokerThread, tmp_path: Path) -> None:
    javac, java = shutil.which("javac"), shutil.which("java")
    assert javac and java, "a JDK (javac, java) is needed"
    cp = _classpath()
    src = Path(__file__).parent / "java" / "IdempotentProduce.java"
    subprocess.run([javac, "-d", str(tmp_path), "-cp", cp, str(src)], check=True, timeout=120)
    out = subprocess.run(
        [java, "-cp", f"{tmp_path}:{cp}", "IdempotentProduce", broker.bootstrap, "javaidem",
         "5000"],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert lines["last.offset"] == "4999"
    assert lines["read"] == "5000"
    assert lines["in.order"] == "true"
    assert lines["transactions"] == "accepted"
