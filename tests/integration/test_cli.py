"""The ``kafkalite`` command end to end: version, properties from a file, the environment
and ``--set`` (in that order of precedence), the health check, and SIGTERM shutdown."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from kafkalite import __version__
from kafkalite.broker.testing.fixtures import BrokerProcess


def broker_configs(bootstrap: str) -> dict[str, tuple[str, int]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource("broker", "1")
    entries = admin.describe_configs([res])[res].result(10)
    return {name: (e.value, e.source) for name, e in entries.items()}


def test_version() -> None:
    exe = Path(sys.executable).with_name("kafkalite")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "kafkalite"]
    out = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=60,
                         check=True)
    assert out.stdout.strip() == f"kafkalite {__version__}"


def test_config_file_env_and_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    props = tmp_path / "server.properties"
    props.write_text(
        "# a Kafka-style properties file\n"
        "num.partitions=5\n"
        "log.retention.ms: 1000\n"
        "message.max.bytes=2000000\n"
    )
    monkeypatch.setenv("KAFKALITE_LOG_RETENTION_MS", "2000")
    monkeypatch.setenv("KAFKALITE_MESSAGE_MAX_BYTES", "3000000")
    proc = BrokerProcess(tmp_path / "data", {"message.max.bytes": "4000000"},
                         extra_args=["--config", str(props)])
    with proc:
        cfg = broker_configs(proc.bootstrap)
        assert cfg["num.partitions"] == ("5", 4)  # STATIC_BROKER_CONFIG, from the file
        assert cfg["log.retention.ms"][0] == "2000"  # the environment beats the file
        assert cfg["message.max.bytes"][0] == "4000000"  # --set beats the environment
        assert cfg["auto.create.topics.enable"] == ("true", 5)  # DEFAULT_CONFIG


def test_sigterm_shuts_down_gracefully(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "data").start()
    assert subprocess.run(
        [sys.executable, "-m", "kafkalite.broker.cli.healthcheck", proc.bootstrap],
        capture_output=True,
        timeout=30,
    ).returncode == 0
    rc = proc.stop()
    assert rc == 0
    events = [json.loads(line).get("event") for line in proc.log_path.read_text().splitlines()
              if line.startswith("{")]
    assert "broker.stopping" in events and "broker.stopped" in events
    assert events.index("broker.stopped") > events.index("broker.stopping")


def test_healthcheck_fails_without_a_broker() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = subprocess.run(
        [sys.executable, "-m", "kafkalite.broker.cli.healthcheck", f"127.0.0.1:{port}",
         "--timeout", "2"],
        capture_output=True, text=True, timeout=30, env={**os.environ},
    )
    assert out.returncode == 1
    assert "unhealthy" in out.stderr


def test_bad_property_is_a_configuration_error(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kafkalite", "serve", "--data-dir", str(tmp_path / "d"),
         "--listen", "127.0.0.1:0", "--set", "num.partitions=many"],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 1
    assert "num.partitions" in out.stderr
