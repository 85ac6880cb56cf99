"""Group configs (resource type GROUP) with real admin clients: confluent-kafka's
AdminClient sets a share group's and a consumer group's configs, describes them with
their sources, is refused out-of-bounds values with Kafka's message, and finds them again
after a restart; Kafka's own ``kafka-configs --entity-type groups`` does the same."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_tool, tools_log_config

GROUP_CONFIG_SOURCE = 8  # Kafka's ConfigSource.GROUP_CONFIG


def _set(admin: AdminClient, group: str, **values: str | None) -> None:
    res = ConfigResource("group", group, incremental_configs=[
        ConfigEntry(n.replace("_", "."), v,
                    incremental_operation=AlterConfigOpType.SET if v is not None
                    else AlterConfigOpType.DELETE)
        for n, v in values.items()])
    admin.incremental_alter_configs([res])[res].result(10)


def _describe(admin: AdminClient, group: str) -> dict[str, ConfigEntry]:
    res = ConfigResource("group", group)
    out: dict[str, ConfigEntry] = admin.describe_configs([res])[res].result(10)
    return out


def test_confluent_admin_group_configs(make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    _set(admin, "shares", share_auto_offset_reset="earliest",
         share_record_lock_duration_ms="20000", share_isolation_level="read_committed")
    _set(admin, "consumers", consumer_heartbeat_interval_ms="6000")

    got = _describe(admin, "shares")
    reset = got["share.auto.offset.reset"]
    assert (reset.value, reset.source) == ("earliest", GROUP_CONFIG_SOURCE)
    assert got["share.isolation.level"].value == "read_committed"
    lock = got["share.record.lock.duration.ms"]
    assert [(s.name, s.value, s.source) for s in lock.synonyms.values()] == [
        ("share.record.lock.duration.ms", "20000", GROUP_CONFIG_SOURCE),
        ("group.share.record.lock.duration.ms", "30000", ConfigSource.DEFAULT_CONFIG.value)]
    session = got["share.session.timeout.ms"]
    assert (session.value, session.source) == ("45000", ConfigSource.DEFAULT_CONFIG.value)
    assert _describe(admin, "consumers")["consumer.heartbeat.interval.ms"].value == "6000"

    with pytest.raises(KafkaException, match=r"share.record.lock.duration.ms must be in the "
                                             r"range 15000 to 60000 inclusive."):
        _set(admin, "shares", share_record_lock_duration_ms="90000")
    with pytest.raises(KafkaException, match=r"Unknown group config name: share\.nonsense"):
        _set(admin, "shares", share_nonsense="1")

    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    got = _describe(admin, "shares")
    assert got["share.auto.offset.reset"].value == "earliest"
    assert got["share.record.lock.duration.ms"].value == "20000"
    _set(admin, "shares", share_auto_offset_reset=None)
    # Back to its default, which Kafka describes (source DEFAULT_CONFIG).
    assert _describe(admin, "shares")["share.auto.offset.reset"].value == "latest"


def test_kafka_configs_tool_entity_type_groups(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    broker = make_broker()
    log = tools_log_config(tmp_path)

    def kafka_configs(*args: str) -> str:
        return run_tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server",
                        broker.bootstrap, "--entity-type", "groups", "--entity-name", "q",
                        *args, log_config=log).stdout

    kafka_configs("--alter", "--add-config",
                  "share.auto.offset.reset=earliest,share.delivery.count.limit=3")
    out = kafka_configs("--describe")
    assert "share.auto.offset.reset=earliest" in out
    assert "share.delivery.count.limit=3" in out
    kafka_configs("--alter", "--delete-config", "share.delivery.count.limit")
    out = kafka_configs("--describe")
    assert "share.delivery.count.limit" not in out
    assert "share.auto.offset.reset=earliest" in out
