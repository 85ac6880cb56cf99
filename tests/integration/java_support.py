"""Kafka's own jars (Apache Kafka 4.4 from Maven, scripts/kafka-jars.sh) for the Java tests:
the programs under tests/integration/java compiled once, Kafka Streams, and the command-line
tools run as users run them (``java -cp <jars> <main class>``)."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from ..kafka_reference import KafkaUnavailable
from ..kafka_reference import kafka_jars as resolve_jars

JAVA_DIR = Path(__file__).parent / "java"
# What a plain Java client needs (the compression codecs load lazily, but a test may use them).
CLIENT_JARS = ("kafka-clients", "slf4j-api", "lz4-java", "snappy-java", "zstd-jni")
# JVM flags for short-lived tools: start quickly rather than run fast for long.
QUICK_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto")


@functools.cache
def kafka_jars() -> Path:
    """The folder holding Kafka's jars (tests/kafka_reference.py resolves them with
    scripts/kafka-jars.sh); where they cannot be had the test fails saying why."""
    try:
        return resolve_jars()
    except KafkaUnavailable as e:
        pytest.fail(str(e), pytrace=False)


def jar(name: str) -> Path:
    """The jar ``name-<version>.jar`` in the Kafka jars folder."""
    found = sorted(kafka_jars().glob(f"{name}-[0-9]*.jar"))
    assert found, f"no {name} jar in {kafka_jars()}"
    return found[-1]


def classpath() -> str:
    """The Java client and what it loads."""
    return ":".join(str(jar(n)) for n in CLIENT_JARS)


def full_classpath() -> str:
    """Every jar: the broker's, the tools', Streams' and their dependencies."""
    return f"{kafka_jars()}/*"


def _java(tool: str) -> str:
    found = shutil.which(tool)
    assert found, "a JDK (javac, java) is needed"
    return found


@functools.cache
def java_classes() -> Path:
    """Every program under tests/integration/java, compiled against kafka-clients and
    kafka-streams into a cache folder keyed by their sources and the jars (so once, not once
    per test, and not again in a later session while nothing changed)."""
    sources = sorted(JAVA_DIR.glob("*.java"))
    digest = hashlib.sha256(str(kafka_jars()).encode())
    for src in sources:
        digest.update(src.name.encode() + src.read_bytes())
    dest = kafka_jars().parent / f"java-classes-{digest.hexdigest()[:12]}"
    with open(f"{dest}.lock", "w") as lock:  # xdist workers compile one at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (dest / ".complete").exists():
            tmp = Path(tempfile.mkdtemp(prefix=dest.name, dir=dest.parent))
            cp = ":".join(str(jar(n)) for n in (*CLIENT_JARS, "kafka-streams"))
            subprocess.run([_java("javac"), "-nowarn", "-d", str(tmp), "-cp", cp,
                            *map(str, sources)], check=True, timeout=300)
            (tmp / ".complete").touch()
            shutil.rmtree(dest, ignore_errors=True)
            os.rename(tmp, dest)
    return dest


def java_command(main: str, *args: str, cp: str | None = None,
                 jvm_args: tuple[str, ...] = ()) -> list[str]:
    """The command line that runs one of the compiled programs."""
    return [_java("java"), *jvm_args, "-cp", f"{java_classes()}:{cp or classpath()}", main,
            *args]


def run_java(main: str, *args: str, timeout: float = 180,
             cp: str | None = None) -> dict[str, str]:
    """Run ``main`` and return its ``key=value`` output lines; fail on a non-zero exit."""
    out = subprocess.run(java_command(main, *args, cp=cp), capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, out.stdout + out.stderr[-4000:]
    return dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)


def tools_log_config(folder: Path) -> Path:
    """A log4j2 configuration that keeps the tools' own logging to warnings on stderr (what
    Kafka's bin/ scripts do with config/tools-log4j2.yaml)."""
    path = folder / "tools-log4j2.properties"
    path.write_text("appender.err.type=Console\nappender.err.name=STDERR\n"
                    "appender.err.target=SYSTEM_ERR\nappender.err.layout.type=PatternLayout\n"
                    "appender.err.layout.pattern=[%d] %p %m (%c)%n\n"
                    "rootLogger.level=WARN\nrootLogger.appenderRef.err.ref=STDERR\n")
    return path


def run_tool(main: str, *args: str, log_config: Path, timeout: float = 120,
             check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's command-line tools as ``bin/kafka-*.sh`` does: its main class on
    the full classpath, in its own JVM."""
    out = subprocess.run([_java("java"), *QUICK_JVM,
                          f"-Dlog4j2.configurationFile={log_config}",
                          "-cp", full_classpath(), main, *args],
                         capture_output=True, text=True, timeout=timeout, input=input)
    if check:
        assert out.returncode == 0, (f"{main} {' '.join(args)} exited {out.returncode}\n"
                                     + out.stdout[-3000:] + out.stderr[-3000:])
    return out
