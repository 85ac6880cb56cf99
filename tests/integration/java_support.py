"""Compile and run the Java programs under tests/integration/java with Kafka's own client
(kafka-clients.jar from the shigawire-apache-flink-libraries wheel)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

JAVA_DIR = Path(__file__).parent / "java"


def classpath() -> str:
    import pyflink  # a namespace package from shigawire-apache-flink-libraries

    lib = Path(next(iter(pyflink.__path__))) / "lib"
    return ":".join(str(lib / j) for j in ("kafka-clients.jar", "slf4j-api.jar", "lz4-java.jar",
                                           "snappy-java.jar", "zstd-jni.jar"))


def compile_java(source: str, out_dir: Path) -> None:
    javac = shutil.which("javac")
    assert javac, "a JDK (javac, java) is needed"
    subprocess.run([javac, "-d", str(out_dir), "-cp", classpath(), str(JAVA_DIR / source)],
                   check=True, timeout=180)


def run_java(out_dir: Path, main: str, *args: str, timeout: float = 180) -> dict[str, str]:
    """Run ``main`` and return its ``key=value`` output lines; fail on a non-zero exit."""
    java = shutil.which("java")
    assert java, "a JDK (javac, java) is needed"
    out = subprocess.run([java, "-cp", f"{out_dir}:{classpath()}", main, *args],
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stdout + out.stderr[-4000:]
    return dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
