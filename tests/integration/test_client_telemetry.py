"""KIP-714 client telemetry with real clients over TCP: a subscription made with Kafka
4.4's own ``kafka-client-metrics`` tool (its output as Kafka 4.4 prints it), then
librdkafka (confluent-kafka) and the Java producer pushing their metrics, as they do by
default once subscribed, seen at ``/api/v1/clients`` and in ``/metrics``; a client that
pushes nothing is listed too, and with no subscription nothing is pushed."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from kafka import KafkaConsumer

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import java_command, run_tool, tools_log_config

CLIENT_METRICS = "org.apache.kafka.tools.ClientMetricsCommand"


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.load(resp)


def clients(b: BrokerThread) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = get_json(b.admin_url + "/api/v1/clients")["clients"]
    return rows


def wait_for(what: Callable[[], Any], seconds: float, why: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"{why} within {seconds:.0f}s")


def pushed(b: BrokerThread, client_id: str) -> dict[str, Any] | None:
    for row in clients(b):
        if row["client_id"] == client_id and row["metrics"]:
            return row
    return None


def subscribe_everything(b: BrokerThread, tmp_path: Path) -> None:
    out = run_tool(CLIENT_METRICS, "--bootstrap-server", b.bootstrap, "--alter", "--name",
                   "everything", "--metrics", "*", "--interval", "1000",
                   log_config=tools_log_config(tmp_path))
    assert out.stdout == "Altered client metrics config for everything.\n"


def test_the_client_metrics_tool(make_broker: Callable[..., BrokerThread],
                                 tmp_path: Path) -> None:
    b = make_broker()
    log = tools_log_config(tmp_path)

    def tool(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_tool(CLIENT_METRICS, "--bootstrap-server", b.bootstrap, *args,
                        log_config=log, check=check)

    assert tool("--alter", "--name", "everything", "--metrics", "*", "--interval",
                "1000").stdout == "Altered client metrics config for everything.\n"
    assert tool("--describe", "--name", "everything").stdout == (
        "Client metrics configs for everything are:\n"
        "  interval.ms=1000\n  match=\n  metrics=*\n")
    assert tool("--list").stdout == "everything\n"
    assert tool("--alter", "--name", "m2", "--metrics", "org.apache.kafka.producer.",
                "--interval", "5000", "--match",
                "client_id=abc.*,client_software_name=apache-kafka-java").stdout \
        == "Altered client metrics config for m2.\n"
    # Kafka prints the subscriptions in its map's order: compared as a set.
    described = tool("--describe").stdout.split("Client metrics configs for ")
    assert sorted(described) == sorted([
        "",
        "m2 are:\n  interval.ms=5000\n"
        "  match=client_id=abc.*,client_software_name=apache-kafka-java\n"
        "  metrics=org.apache.kafka.producer.\n",
        "everything are:\n  interval.ms=1000\n  match=\n  metrics=*\n"])
    bad = tool("--alter", "--name", "bad", "--interval", "10", check=False)
    assert bad.returncode != 0
    assert "interval must be between 100 and 3600000" in bad.stdout + bad.stderr
    # Kept with the other dynamic configs: a restarted broker has them.
    b.restart()
    assert sorted(tool("--list").stdout.split()) == ["everything", "m2"]
    assert tool("--delete", "--name", "m2").stdout == "Deleted client metrics config for m2.\n"
    assert tool("--list").stdout == "everything\n"


def test_librdkafka_pushes_and_every_client_is_listed(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    b = make_broker(admin=True)
    subscribe_everything(b, tmp_path)
    silent = KafkaConsumer(bootstrap_servers=b.bootstrap, client_id="no-telemetry")
    p = Producer({"bootstrap.servers": b.bootstrap, "client.id": "rdkafka-telemetry",
                  "linger.ms": 5})
    try:
        silent.topics()

        def produce_and_look() -> dict[str, Any] | None:
            p.produce("telemetry-t", b"x")
            p.poll(0.05)
            return pushed(b, "rdkafka-telemetry")

        row = wait_for(produce_and_look, 30, "librdkafka pushed no metrics")
        assert row["software_name"] == "confluent-kafka-python"
        assert row["software_version"].startswith(("2.",))
        assert row["listener"] == "PLAINTEXT" and row["principal"] == "User:ANONYMOUS"
        assert row["address"].startswith("127.0.0.1:")
        assert len(row["client_instance_id"]) == 22  # Kafka's Uuid text
        assert isinstance(row["connected_since"], int)
        assert row["connected_since"] <= b.now_ms()
        names = {m["name"] for m in row["metrics"]}
        assert any(n.startswith("org.apache.kafka.producer.") for n in names), names
        for m in row["metrics"]:
            assert set(m) <= {"name", "value", "unit", "attributes", "at"}
            assert isinstance(m["value"], float) and isinstance(m["at"], int)
        others = [r for r in clients(b) if r["client_id"] == "no-telemetry"]
        assert others and all(r["client_instance_id"] is None and r["metrics"] == []
                              for r in others)
        assert others[0]["software_name"] == "kafka-python"
        # Every value kept of one series, for charts.
        history = get_json(f"{b.admin_url}/api/v1/clients/{row['client_instance_id']}/metrics")
        assert {s["name"] for s in history["series"]} == names
        text = urllib.request.urlopen(b.admin_url + "/metrics", timeout=10).read().decode()
        assert f'client_instance_id="{row["client_instance_id"]}"' in text
        assert "kafkalite_client_org_apache_kafka_producer_" in text
        assert 'kafkalite_connected_clients{listener="PLAINTEXT",software_name="kafka-python"' \
            in text
    finally:
        p.flush(5)
        silent.close()


def test_with_no_subscription_nothing_is_pushed(make_broker: Callable[..., BrokerThread]
                                                ) -> None:
    b = make_broker(admin=True)
    p = Producer({"bootstrap.servers": b.bootstrap, "client.id": "unsubscribed"})
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            p.produce("quiet-t", b"x")
            p.poll(0.05)
        p.flush(5)
        rows = [r for r in clients(b) if r["client_id"] == "unsubscribed"]
        # The client asked (it has an instance id) and was told to push nothing.
        assert rows and all(r["metrics"] == [] for r in rows)
        assert any(r["client_instance_id"] is not None for r in rows)
        stats = b.inner.metrics.apis
        assert 71 in stats and stats[71].count >= 1
        assert 72 not in stats or stats[72].count == 0
    finally:
        p.flush(5)


def test_the_java_producer_pushes(make_broker: Callable[..., BrokerThread],
                                  tmp_path: Path) -> None:
    b = make_broker(admin=True)
    subscribe_everything(b, tmp_path)
    proc = subprocess.Popen(java_command("TelemetryProducer", b.bootstrap, "java-telemetry",
                                         "java-telemetry-t", "60"),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        row = wait_for(lambda: pushed(b, "java-telemetry"), 60,
                       "the Java producer pushed no metrics")
        assert row["software_name"] == "apache-kafka-java"
        assert row["software_version"] == "4.4.0"
        names = {m["name"] for m in row["metrics"]}
        assert "org.apache.kafka.producer.record.queue.time.avg" in names, sorted(names)[:20]
        out, err = proc.communicate(input="", timeout=60)  # its stdin closes: it stops
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err[-3000:]
    got = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert int(got["sent"]) > 0
    # The id the client reports is the one the broker gave it.
    assert got["instance"] == row["client_instance_id"]
