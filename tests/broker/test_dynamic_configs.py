"""Dynamic broker configs (KIP-226) through the config handlers: both levels, Kafka's
sources, synonyms and read-only flags, refusals with Kafka's messages, persistence across
a restart and live effect on topics without their own value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kio.schema.alter_configs.v2 import request as ac
from kio.schema.describe_configs.v4 import request as dc
from kio.schema.incremental_alter_configs.v1 import request as ia

from kafkalite.broker.config.dynamic import FILE_NAME
from kafkalite.protocol.errors import ErrorCode

from .harness import Handlers
from .test_handlers import CREATE_TOPICS, create_topics

DESCRIBE, ALTER, INCREMENTAL = 32, 33, 44
BROKER, TOPIC = 4, 2
SET, DELETE, APPEND = 0, 1, 2
SOURCES = {1: "TOPIC", 2: "DYNAMIC_BROKER", 3: "DYNAMIC_DEFAULT", 4: "STATIC", 5: "DEFAULT"}


async def incremental(h: Handlers, name: str, *ops: tuple[str, int, str | None],
                      validate_only: bool = False, rtype: int = BROKER) -> tuple[int, str | None]:
    req = ia.IncrementalAlterConfigsRequest(  # type: ignore[call-arg]
        resources=(ia.AlterConfigsResource(  # type: ignore[call-arg]
            resource_type=rtype, resource_name=name,  # type: ignore[arg-type]
            configs=tuple(ia.AlterableConfig(name=n, config_operation=op, value=v)  # type: ignore[arg-type]
                          for n, op, v in ops)),),
        validate_only=validate_only)
    r = (await h.call(INCREMENTAL, 1, req)).responses[0]
    return r.error_code, r.error_message


async def describe(h: Handlers, name: str, *keys: str, rtype: int = BROKER) -> dict[str, Any]:
    req = dc.DescribeConfigsRequest(  # type: ignore[call-arg]
        resources=(dc.DescribeConfigsResource(  # type: ignore[call-arg]
            resource_type=rtype, resource_name=name,  # type: ignore[arg-type]
            configuration_keys=keys or None),),
        include_synonyms=True, include_documentation=False)
    res = (await h.call(DESCRIBE, 4, req)).results[0]
    assert res.error_code == ErrorCode.none, res.error_message
    return {c.name: c for c in res.configs}


def chain(entry: Any) -> list[tuple[str, str | None, str]]:
    return [(s.name, s.value, SOURCES[s.source]) for s in entry.synonyms]


async def test_levels_sources_and_synonyms(handlers: Handlers) -> None:
    assert await incremental(handlers, "", ("log.retention.ms", SET, "7200000")) == (
        ErrorCode.none, None)
    got = await describe(handlers, "1", "log.retention.ms", "log.retention.hours")
    entry = got["log.retention.ms"]
    assert (entry.value, SOURCES[entry.config_source], entry.read_only) == (
        "7200000", "DYNAMIC_DEFAULT", False)
    assert chain(entry) == [("log.retention.ms", "7200000", "DYNAMIC_DEFAULT"),
                            ("log.retention.hours", "168", "DEFAULT")]
    hours = got["log.retention.hours"]
    assert hours.read_only and SOURCES[hours.config_source] == "DEFAULT"

    assert (await incremental(handlers, "1", ("log.retention.ms", SET, "3600000")))[0] == 0
    entry = (await describe(handlers, "1", "log.retention.ms"))["log.retention.ms"]
    assert (entry.value, SOURCES[entry.config_source]) == ("3600000", "DYNAMIC_BROKER")
    assert chain(entry) == [("log.retention.ms", "3600000", "DYNAMIC_BROKER"),
                            ("log.retention.ms", "7200000", "DYNAMIC_DEFAULT"),
                            ("log.retention.hours", "168", "DEFAULT")]
    # The cluster level shows only its own values.
    default = await describe(handlers, "")
    assert list(default) == ["log.retention.ms"]
    assert chain(default["log.retention.ms"]) == [
        ("log.retention.ms", "7200000", "DYNAMIC_DEFAULT")]

    # Topics without their own value follow at once; their synonyms show the levels.
    await handlers.call(CREATE_TOPICS, 7, create_topics("events", partitions=2))
    plog = handlers.broker.logs.get("events", 1)
    assert plog is not None and plog.config.retention_ms == 3600000
    topic = (await describe(handlers, "events", "retention.ms", rtype=TOPIC))["retention.ms"]
    assert (topic.value, SOURCES[topic.config_source]) == ("3600000", "DYNAMIC_BROKER")
    assert chain(topic)[:2] == [("log.retention.ms", "3600000", "DYNAMIC_BROKER"),
                                ("log.retention.ms", "7200000", "DYNAMIC_DEFAULT")]
    assert (await incremental(handlers, "1", ("log.retention.ms", DELETE, None)))[0] == 0
    assert plog.config.retention_ms == 7200000
    assert (await incremental(handlers, "", ("log.retention.ms", DELETE, None)))[0] == 0
    assert plog.config.retention_ms == 604800000
    assert await describe(handlers, "") == {}


async def test_refusals_carry_kafkas_messages(handlers: Handlers) -> None:
    bad = ErrorCode.invalid_request
    assert await incremental(handlers, "1", ("num.partitions", SET, "3")) == (
        bad, "Cannot update these configs dynamically: Set(num.partitions)")
    assert await incremental(handlers, "1", ("ssl.keystore.location", SET, "/k")) == (
        bad, "These security configs can be dynamically updated only per-listener using the "
             "listener prefix: Set(ssl.keystore.location)")
    assert await incremental(handlers, "", ("listener.name.ssl.ssl.keystore.location", SET,
                                            "/k")) == (
        bad, "Cannot update these configs at default cluster level, broker id must be "
             "specified: Set(listener.name.ssl.ssl.keystore.location)")
    assert await incremental(handlers, "1", ("log.retention.ms", SET, "soon")) == (
        bad, "Invalid value soon for configuration log.retention.ms: Not a number of type LONG")
    assert await incremental(handlers, "1", ("compression.type", SET, "brotli")) == (
        bad, "Invalid value brotli for configuration compression.type: String must be one of: "
             "uncompressed, zstd, lz4, snappy, gzip, producer")
    assert await incremental(handlers, "2", ("log.retention.ms", SET, "1")) == (
        bad, "Unexpected broker id, expected 1, but received 2")
    assert await incremental(handlers, "x", ("log.retention.ms", SET, "1")) == (
        bad, "Node id must be an integer, but it is: x")
    assert await incremental(handlers, "1", ("log.retention.ms", APPEND, "1")) == (
        ErrorCode.invalid_config, "Config value append is not allowed for config key: "
                                  "log.retention.ms")
    assert await incremental(handlers, "1", ("a", SET, "1"), ("a", SET, "2")) == (
        bad, "Error due to duplicate config keys")
    # Nothing was applied or persisted.
    assert handlers.broker.config.dynamic_broker == {}
    assert not (handlers.broker.data_dir / FILE_NAME).exists()
    # validate_only checks and keeps nothing.
    assert (await incremental(handlers, "1", ("log.retention.ms", SET, "5"),
                              validate_only=True))[0] == 0
    assert handlers.broker.config.dynamic_broker == {}


async def test_list_append_and_custom_properties(handlers: Handlers) -> None:
    assert (await incremental(handlers, "1", ("log.cleanup.policy", APPEND, "compact")))[0] == 0
    assert handlers.broker.config.dynamic_broker == {"log.cleanup.policy": "delete,compact"}
    # Kafka keeps names it does not know (custom properties), described as sensitive.
    assert (await incremental(handlers, "1", ("my.plugin.setting", SET, "on")))[0] == 0
    entry = (await describe(handlers, "1", "my.plugin.setting"))["my.plugin.setting"]
    assert entry.is_sensitive and entry.value is None and entry.read_only


async def test_legacy_alter_replaces_the_level(handlers: Handlers) -> None:
    req = ac.AlterConfigsRequest(  # type: ignore[call-arg]
        resources=(ac.AlterConfigsResource(  # type: ignore[call-arg]
            resource_type=BROKER, resource_name="1",  # type: ignore[arg-type]
            configs=(ac.AlterableConfig(name="log.segment.bytes", value="1048576"),  # type: ignore[arg-type]
                     ac.AlterableConfig(name="log.cleaner.backoff.ms", value="250"))),),  # type: ignore[arg-type]
        validate_only=False)
    assert (await handlers.call(ALTER, 2, req)).responses[0].error_code == ErrorCode.none
    assert handlers.broker.config.int("log.cleaner.backoff.ms") == 250
    req2 = ac.AlterConfigsRequest(  # type: ignore[call-arg]
        resources=(ac.AlterConfigsResource(  # type: ignore[call-arg]
            resource_type=BROKER, resource_name="1",  # type: ignore[arg-type]
            configs=(ac.AlterableConfig(name="log.segment.bytes", value="2097152"),)),),  # type: ignore[arg-type]
        validate_only=False)
    assert (await handlers.call(ALTER, 2, req2)).responses[0].error_code == ErrorCode.none
    assert handlers.broker.config.dynamic_broker == {"log.segment.bytes": "2097152"}
    assert handlers.broker.config.int("log.cleaner.backoff.ms") == 15000


async def test_persisted_and_found_after_a_restart(tmp_path: Path) -> None:
    h = Handlers(tmp_path / "data", {"log.retention.hours": "24"})
    await h.open()
    try:
        assert (await incremental(h, "", ("log.segment.bytes", SET, "1048576")))[0] == 0
        assert (await incremental(h, "1", ("log.retention.ms", SET, "1000")))[0] == 0
        stored = json.loads((tmp_path / "data" / FILE_NAME).read_text())
        assert stored["default"] == {"log.segment.bytes": "1048576"}
        assert stored["brokers"] == {"1": {"log.retention.ms": "1000"}}
    finally:
        await h.close()
    h2 = Handlers(tmp_path / "data", {"log.retention.hours": "24"})
    await h2.open()
    try:
        entry = (await describe(h2, "1", "log.retention.ms"))["log.retention.ms"]
        assert chain(entry) == [("log.retention.ms", "1000", "DYNAMIC_BROKER"),
                                ("log.retention.hours", "24", "STATIC"),
                                ("log.retention.hours", "168", "DEFAULT")]
        await h2.call(CREATE_TOPICS, 7, create_topics("t", partitions=1))
        plog = h2.broker.logs.get("t", 0)
        assert plog is not None
        assert (plog.config.retention_ms, plog.config.segment_bytes) == (1000, 1048576)
    finally:
        await h2.close()


async def test_static_hours_apply_without_a_dynamic_value(tmp_path: Path) -> None:
    h = Handlers(tmp_path / "data", {"log.retention.hours": "2"})
    await h.open()
    try:
        await h.call(CREATE_TOPICS, 7, create_topics("t", partitions=1))
        plog = h.broker.logs.get("t", 0)
        assert plog is not None and plog.config.retention_ms == 2 * 3600_000
        topic = (await describe(h, "t", "retention.ms", rtype=TOPIC))["retention.ms"]
        # Kafka drops synonyms listed before the first log.retention.ms entry.
        assert topic.value == "7200000" and chain(topic) == []
    finally:
        await h.close()


async def test_advertised_listeners_is_read_only_as_on_kafka_4(handlers: Handlers) -> None:
    entry = (await describe(handlers, "1", "advertised.listeners"))["advertised.listeners"]
    assert entry.read_only
    assert await incremental(handlers, "1", ("advertised.listeners", SET,
                                             "PLAINTEXT://localhost:9092")) == (
        ErrorCode.invalid_request,
        "Cannot update these configs dynamically: Set(advertised.listeners)")
