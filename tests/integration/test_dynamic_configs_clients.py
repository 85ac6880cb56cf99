"""Dynamic broker configs (KIP-226) with real admin clients: confluent-kafka's AdminClient
and the Java Admin alter a broker config at the broker and the cluster-default level,
describe it with its source, see it take effect on a topic without its own value, and
find it again after a restart; ``kafkalite configs`` changes them offline."""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from kafkalite.broker.cli.main import main as cli_main
from kafkalite.broker.security.certs import make_certs
from kafkalite.broker.security.fixture import SecuritySetup
from kafkalite.broker.testing.fixtures import BrokerProcess, BrokerThread

from .java_support import run_java

HOUR = 3600_000
#: Retention runs often, so a new retention default shows within the test.
FAST_RETENTION = {"log.retention.check.interval.ms": "100"}


def _set(admin: AdminClient, broker: str, name: str, value: str | None) -> None:
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    res = ConfigResource("broker", broker, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op)])
    admin.incremental_alter_configs([res])[res].result(10)


def _describe(admin: AdminClient, broker: str) -> dict[str, ConfigEntry]:
    res = ConfigResource("broker", broker)
    out: dict[str, ConfigEntry] = admin.describe_configs([res])[res].result(10)
    return out


def _old_segments(broker: BrokerThread, topic: str) -> None:
    """A topic with small segments full of records two hours old."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": "2000"})])[
        topic].result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    old = int(time.time() * 1000) - 2 * HOUR
    for i in range(60):
        p.produce(topic, key=b"k", value=b"x" * 100, partition=0, timestamp=old + i)
        p.poll(0)
    assert p.flush(10) == 0


def _low_watermark(broker: BrokerThread, topic: str, until: Callable[[int], bool],
                   wait: float = 15) -> int:
    """The partition's log start offset once ``until`` holds, or after ``wait`` seconds."""
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "lw"})
    try:
        deadline = time.monotonic() + wait
        low = -1
        while time.monotonic() < deadline:
            low, _high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)
            if until(low):
                break
            time.sleep(0.1)
        return low
    finally:
        c.close()


def test_confluent_admin_broker_level_effect_and_restart(
        make_broker: Callable[..., BrokerThread]) -> None:
    # librdkafka cannot name the cluster-default resource (it requires an int32 broker
    # id, against Kafka as here); the Java Admin test below covers that level.
    broker = make_broker(FAST_RETENTION)
    _old_segments(broker, "old")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    _set(admin, "1", "log.retention.ms", str(3 * HOUR))
    entry = _describe(admin, "1")["log.retention.ms"]
    assert (entry.value, entry.source, entry.is_read_only) == (
        str(3 * HOUR), ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
    assert [(s.name, s.value, s.source) for s in entry.synonyms.values()] == [
        ("log.retention.ms", str(3 * HOUR), ConfigSource.DYNAMIC_BROKER_CONFIG.value),
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG.value)]
    # Nothing is 3 h old: ten retention passes delete nothing.
    assert _low_watermark(broker, "old", lambda low: low > 0, wait=1) == 0

    _set(admin, "1", "log.retention.ms", str(HOUR))
    # The new value reaches the topic, which has no retention.ms of its own: its old
    # segments go.
    assert _low_watermark(broker, "old", lambda low: low > 0) > 0
    topic = ConfigResource("topic", "old")
    retention = admin.describe_configs([topic])[topic].result(10)["retention.ms"]
    assert (retention.value, retention.source) == (str(HOUR),
                                                   ConfigSource.DYNAMIC_BROKER_CONFIG.value)

    read_only = ConfigResource("broker", "1", incremental_configs=[
        ConfigEntry("auto.create.topics.enable", "false",
                    incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException, match=r"Cannot update these configs dynamically: "
                                             r"Set\(auto.create.topics.enable\)"):
        admin.incremental_alter_configs([read_only])[read_only].result(10)

    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    entry = _describe(admin, "1")["log.retention.ms"]
    assert (entry.value, entry.source) == (str(HOUR), ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    _set(admin, "1", "log.retention.ms", None)
    assert _describe(admin, "1")["log.retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_java_admin_both_levels_and_restart(
        make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker(FAST_RETENTION)
    _old_segments(broker, "old")
    out = run_java("DynamicConfigs", broker.bootstrap,
                   "set::log.retention.ms:10800000",
                   "set:1:log.cleaner.backoff.ms:500",
                   "describe:1:log.retention.ms",
                   "describe::log.retention.ms",
                   "set::ssl.client.auth:required",
                   "set:1:num.partitions:4",
                   "describe:1:num.partitions")
    assert out["1.result"] == "ok" and out["2.result"] == "ok"
    assert out["3.value"] == "10800000"
    assert out["3.source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    assert out["3.read.only"] == "false"
    assert out["3.synonyms"] == ("log.retention.ms=10800000@DYNAMIC_DEFAULT_BROKER_CONFIG, "
                                 "log.retention.hours=168@DEFAULT_CONFIG")
    assert out["4.source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
    assert out["5.result"] == (
        "InvalidRequestException: Cannot update these configs at default cluster level, "
        "broker id must be specified: Set(ssl.client.auth)")
    assert out["6.result"] == ("InvalidRequestException: Cannot update these configs "
                               "dynamically: Set(num.partitions)")
    assert out["7.read.only"] == "true" and out["7.source"] == "DEFAULT_CONFIG"
    # The scheduler reads the cleaner's interval from the config before each pass.
    assert broker.broker is not None
    assert broker.broker.config.int("log.cleaner.backoff.ms") == 500

    out = run_java("DynamicConfigs", broker.bootstrap, "set:1:log.retention.ms:3600000")
    assert out["1.result"] == "ok"
    assert _low_watermark(broker, "old", lambda low: low > 0) > 0

    broker.restart()
    out = run_java("DynamicConfigs", broker.bootstrap,
                   "describe:1:log.retention.ms", "describe:1:log.cleaner.backoff.ms",
                   "delete:1:log.retention.ms", "describe:1:log.retention.ms")
    assert (out["1.value"], out["1.source"]) == ("3600000", "DYNAMIC_BROKER_CONFIG")
    assert (out["2.value"], out["2.source"]) == ("500", "DYNAMIC_BROKER_CONFIG")
    assert out["3.result"] == "ok"
    assert (out["4.value"], out["4.source"]) == ("10800000", "DYNAMIC_DEFAULT_BROKER_CONFIG")


def test_configs_cli_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()

    def configs(*args: str) -> tuple[int, str, str]:
        rc = cli_main(["configs", *args])
        out = capsys.readouterr()
        return rc, out.out, out.err

    assert configs("set", "--data-dir", str(data), "--broker", "1",
                   "log.retention.ms=5000", "log.segment.bytes=1048576")[0] == 0
    assert configs("set", "--data-dir", str(data), "--default",
                   "log.cleaner.backoff.ms=700")[0] == 0
    rc, _out, err = configs("set", "--data-dir", str(data), "--broker", "1", "num.partitions=3")
    assert rc == 1 and "Cannot update these configs dynamically: Set(num.partitions)" in err
    assert configs("delete", "--data-dir", str(data), "--broker", "1",
                   "log.segment.bytes")[0] == 0
    assert configs("list", "--data-dir", str(data))[1].splitlines() == [
        "default\tlog.cleaner.backoff.ms=700", "broker 1\tlog.retention.ms=5000"]

    with BrokerProcess(data) as proc:
        entries = _describe(AdminClient({"bootstrap.servers": proc.bootstrap}), "1")
        assert (entries["log.retention.ms"].value, entries["log.retention.ms"].source) == (
            "5000", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        assert entries["log.cleaner.backoff.ms"].source == \
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
        # While the broker runs, the offline command refuses to change its directory.
        rc, _out, err = configs("set", "--data-dir", str(data), "--broker", "1",
                                "log.retention.ms=1")
        assert rc == 1 and "a broker is running" in err


def test_ssl_keystore_rotated_live(make_broker: Callable[..., BrokerThread],
                                   tmp_path: Path) -> None:
    broker = make_broker(security=SecuritySetup("SSL"))
    address = ("127.0.0.1", broker.port)
    before = ssl.get_server_certificate(address)
    admin = AdminClient(broker.client().librdkafka())
    key = "listener.name.ssl.ssl.keystore.location"

    missing = ConfigResource("broker", "1", incremental_configs=[
        ConfigEntry(key, str(tmp_path / "nope.pem"), incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException, match="Invalid dynamic configuration"):
        admin.incremental_alter_configs([missing])[missing].result(10)
    assert ssl.get_server_certificate(address) == before

    rotated = make_certs(tmp_path / "rotated")
    _set(admin, "1", key, str(rotated.broker_keystore))
    # New connections get the new certificate; the admin client's own connection goes on.
    after = ssl.get_server_certificate(address)
    assert after != before
    assert ssl.PEM_cert_to_DER_cert(after) == ssl.PEM_cert_to_DER_cert(
        rotated.broker_cert.read_text().split("-----END CERTIFICATE-----")[0]
        + "-----END CERTIFICATE-----\n")
    entry = _describe(admin, "1")[key]
    assert (entry.value, entry.source) == (str(rotated.broker_keystore),
                                           ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    # A client trusting only the new CA connects (list_topics raises if it cannot).
    fresh = AdminClient({**broker.client().librdkafka(), "ssl.ca.location": str(rotated.ca)})
    assert list(fresh.list_topics(timeout=10).brokers) == [1]
