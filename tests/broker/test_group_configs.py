"""Group configs (resource type GROUP) through the config handlers: what Kafka describes and
from where, refusals with Kafka 4.4's messages (taken from its GroupConfig), persistence
across a restart, and the KIP-848 coordinator using a group's session timeout and
heartbeat interval."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from kio.schema.alter_configs.v2 import request as ac
from kio.schema.consumer_group_heartbeat.v0 import request as cgh

from kafkalite.broker.config.dynamic import FILE_NAME
from kafkalite.broker.config.properties import Config, ConfigError
from kafkalite.coordinator.partitions import session_key
from kafkalite.protocol.errors import ErrorCode

from .harness import Handlers
from .test_dynamic_configs import DELETE, SET, chain, describe, incremental

GROUP = 32
APPEND = 2
SOURCES_GROUP = 8

#: What Kafka 4.4 describes for a group that sets nothing: every group config that is not
#: internal (the differential suite's group-configs scenario compares them with Kafka's).
DESCRIBED = [
    "consumer.assignment.interval.ms", "consumer.heartbeat.interval.ms",
    "consumer.session.timeout.ms", "errors.deadletterqueue.copy.record.enable",
    "errors.deadletterqueue.topic.name", "share.assignment.interval.ms",
    "share.auto.offset.reset", "share.delivery.count.limit", "share.heartbeat.interval.ms",
    "share.isolation.level", "share.partition.max.record.locks",
    "share.record.lock.duration.ms", "share.renew.acknowledge.enable",
    "share.session.timeout.ms", "streams.assignment.interval.ms", "streams.assignor.name",
    "streams.heartbeat.interval.ms", "streams.initial.rebalance.delay.ms",
    "streams.num.standby.replicas", "streams.rack.aware.assignment.tags",
    "streams.session.timeout.ms",
]


async def group_set(h: Handlers, group: str, *items: tuple[str, str | None],
                    op: int = SET) -> tuple[int, str | None]:
    return await incremental(h, group, *((n, op, v) for n, v in items), rtype=GROUP)


async def test_describe_a_group_without_configs(handlers: Handlers) -> None:
    got = await describe(handlers, "g", rtype=GROUP)
    assert sorted(got) == DESCRIBED
    session = got["consumer.session.timeout.ms"]
    assert (session.value, session.config_source, session.read_only, session.config_type) == (
        "45000", 5, False, 3)
    assert chain(session) == [("group.consumer.session.timeout.ms", "45000", "DEFAULT")]
    locks = got["share.record.lock.duration.ms"]
    assert chain(locks) == [("group.share.record.lock.duration.ms", "30000", "DEFAULT")]
    assert got["streams.assignor.name"].value == "sticky"
    assert got["streams.rack.aware.assignment.tags"].config_type == 7


async def test_broker_set_value_is_still_the_default_source(tmp_path: Path) -> None:
    """A group config the group does not set reads as DEFAULT_CONFIG with the broker's
    value, even when that value is a static broker setting (Kafka 4.4 answers so)."""
    h = Handlers(tmp_path / "data", {"group.streams.initial.rebalance.delay.ms": "3000",
                                     "group.consumer.session.timeout.ms": "50000"})
    await h.open()
    try:
        got = await describe(h, "g", rtype=GROUP)
        delay = got["streams.initial.rebalance.delay.ms"]
        session = got["consumer.session.timeout.ms"]
        assert (delay.value, delay.config_source) == ("3000", 5)
        assert (session.value, session.config_source) == ("50000", 5)
    finally:
        await h.close()


async def test_set_describe_delete(handlers: Handlers) -> None:
    assert await group_set(handlers, "g", ("share.auto.offset.reset", "earliest"),
                           ("share.isolation.level", "read_committed"),
                           ("share.record.lock.duration.ms", "20000")) == (ErrorCode.none, None)
    got = await describe(handlers, "g", rtype=GROUP)
    assert sorted(got) == DESCRIBED
    reset = got["share.auto.offset.reset"]
    assert (reset.value, reset.config_source, reset.config_type) == ("earliest",
                                                                     SOURCES_GROUP, 2)
    assert [(s.name, s.value, s.source) for s in reset.synonyms] == [
        ("share.auto.offset.reset", "earliest", SOURCES_GROUP),
        ("share.auto.offset.reset", "latest", 5)]
    lock = got["share.record.lock.duration.ms"]
    assert [(s.name, s.value, s.source) for s in lock.synonyms] == [
        ("share.record.lock.duration.ms", "20000", SOURCES_GROUP),
        ("group.share.record.lock.duration.ms", "30000", 5)]
    # Other groups see the broker's values; the keys asked for filter the answer.
    other = await describe(handlers, "h", "share.record.lock.duration.ms", rtype=GROUP)
    assert other["share.record.lock.duration.ms"].value == "30000"
    assert await group_set(handlers, "g", ("share.isolation.level", None),
                           op=DELETE) == (ErrorCode.none, None)
    isolation = (await describe(handlers, "g", rtype=GROUP))["share.isolation.level"]
    assert (isolation.value, isolation.config_source) == ("read_uncommitted", 5)
    assert handlers.broker.dynamic.groups.get("g") == {
        "share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "20000"}


async def test_refusals_carry_kafkas_messages(handlers: Handlers) -> None:
    bad = ErrorCode.invalid_config
    cases: list[tuple[tuple[str, str], str]] = [
        (("consumer.session.timeout.ms", "10"),
         "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
        (("consumer.session.timeout.ms", "0"),
         "Invalid value 0 for configuration consumer.session.timeout.ms: "
         "Value must be at least 1"),
        (("consumer.session.timeout.ms", "x"),
         "Invalid value x for configuration consumer.session.timeout.ms: "
         "Not a number of type INT"),
        (("share.isolation.level", "foo"),
         "Invalid value foo for configuration share.isolation.level: String must be one of: "
         "read_committed, read_uncommitted"),
        (("share.auto.offset.reset", "none"),
         "Invalid value none for configuration share.auto.offset.reset: Invalid value `none` "
         "for configuration share.auto.offset.reset. The value must be either 'earliest', "
         "'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."),
        (("share.auto.offset.reset", "by_duration:xx"),
         "Invalid value by_duration:xx for configuration share.auto.offset.reset: Invalid "
         "value `by_duration:xx` for configuration share.auto.offset.reset. The value must be "
         "either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."),
        (("foo", "1"), "Unknown group config name: foo"),
        (("consumer.assignor.offload.enable", "maybe"),
         "Invalid value maybe for configuration consumer.assignor.offload.enable: "
         "Expected value to be either true or false"),
        (("share.delivery.count.limit", "11"),
         "share.delivery.count.limit must be in the range 2 to 10 inclusive."),
        (("share.record.lock.duration.ms", "999"),
         "Invalid value 999 for configuration share.record.lock.duration.ms: "
         "Value must be at least 1000"),
        (("share.partition.max.record.locks", "4001"),
         "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."),
        (("errors.deadletterqueue.topic.name", "__x"),
         "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"),
        (("streams.assignor.name", "foo"),
         "streams.assignor.name 'foo' is not a registered task assignor. Registered "
         "assignors are: [sticky]."),
        (("streams.num.standby.replicas", "3"),
         "streams.num.standby.replicas must be less than or equal to 2"),
    ]
    for item, message in cases:
        assert await group_set(handlers, "g", item) == (bad, message), item
    for ok in (("share.auto.offset.reset", "by_duration:PT1H"),
               ("share.auto.offset.reset", "by_duration:P1DT2H3M4.5S"),
               ("share.renew.acknowledge.enable", "TRUE"),
               ("share.heartbeat.interval.ms", "15000")):
        assert await group_set(handlers, "g2", ok) == (ErrorCode.none, None), ok
    assert await incremental(handlers, "", ("share.auto.offset.reset", SET, "earliest"),
                             rtype=GROUP) == (ErrorCode.invalid_request,
                                              "Default group resources are not allowed.")
    assert await group_set(handlers, "g", ("share.session.timeout.ms", "1"), op=APPEND) == (
        bad, "Can't APPEND to key share.session.timeout.ms because its type is not LIST.")
    assert handlers.broker.dynamic.groups.get("g") == {}
    assert handlers.broker.dynamic.groups.get("g2") == {
        "share.auto.offset.reset": "by_duration:P1DT2H3M4.5S",
        "share.renew.acknowledge.enable": "TRUE", "share.heartbeat.interval.ms": "15000"}


async def test_empty_group_name_is_refused_on_describe(handlers: Handlers) -> None:
    from kio.schema.describe_configs.v4 import request as dc
    req = dc.DescribeConfigsRequest(  # type: ignore[call-arg]
        resources=(dc.DescribeConfigsResource(  # type: ignore[call-arg]
            resource_type=GROUP, resource_name="", configuration_keys=None),),  # type: ignore[arg-type]
        include_synonyms=False, include_documentation=False)
    res = (await handlers.call(32, 4, req)).results[0]
    assert (res.error_code, res.error_message) == (ErrorCode.invalid_request,
                                                   "Group name must not be empty")


async def test_session_must_exceed_heartbeat_with_the_broker_value(tmp_path: Path) -> None:
    h = Handlers(tmp_path / "data", {"group.share.min.session.timeout.ms": "10000",
                                     "group.share.min.heartbeat.interval.ms": "1000",
                                     "group.share.max.heartbeat.interval.ms": "20000"})
    await h.open()
    try:
        # Both within their bounds, the session timeout not above the heartbeat interval;
        # with one of them set, the broker's value stands for the other.
        assert await group_set(h, "g", ("share.session.timeout.ms", "12000"),
                               ("share.heartbeat.interval.ms", "12000")) == (
            ErrorCode.invalid_config,
            "share.session.timeout.ms must be greater than share.heartbeat.interval.ms")
        assert await group_set(h, "g", ("share.session.timeout.ms", "10000")) == (
            ErrorCode.none, None)
        assert await group_set(h, "g", ("share.heartbeat.interval.ms", "15000")) == (
            ErrorCode.invalid_config,
            "share.session.timeout.ms must be greater than share.heartbeat.interval.ms")
    finally:
        await h.close()


async def test_legacy_alter_replaces_a_groups_configs(handlers: Handlers) -> None:
    assert (await group_set(handlers, "g", ("share.auto.offset.reset", "earliest")))[0] == 0

    def request(*items: tuple[str, str]) -> ac.AlterConfigsRequest:
        return ac.AlterConfigsRequest(  # type: ignore[call-arg]
            resources=(ac.AlterConfigsResource(  # type: ignore[call-arg]
                resource_type=GROUP, resource_name="g",  # type: ignore[arg-type]
                configs=tuple(ac.AlterableConfig(name=n, value=v)  # type: ignore[arg-type]
                              for n, v in items)),),
            validate_only=False)

    r = (await handlers.call(33, 2, request(("share.delivery.count.limit", "3")))).responses[0]
    assert r.error_code == ErrorCode.none
    assert handlers.broker.dynamic.groups.get("g") == {"share.delivery.count.limit": "3"}
    r = (await handlers.call(33, 2, request(("share.delivery.count.limit", "1")))).responses[0]
    assert (r.error_code, r.error_message) == (
        ErrorCode.invalid_config, "Invalid value 1 for configuration share.delivery.count.limit:"
                                  " Value must be at least 2")


async def test_persisted_and_found_after_a_restart(tmp_path: Path) -> None:
    h = Handlers(tmp_path / "data")
    await h.open()
    try:
        assert (await group_set(h, "g", ("share.auto.offset.reset", "earliest")))[0] == 0
        assert (await incremental(h, "", ("log.segment.bytes", SET, "1048576")))[0] == 0
        # validate_only keeps nothing.
        assert (await incremental(h, "g", ("share.delivery.count.limit", SET, "3"),
                                  validate_only=True, rtype=GROUP))[0] == 0
        stored = json.loads((tmp_path / "data" / FILE_NAME).read_text())
        assert stored["groups"] == {"g": {"share.auto.offset.reset": "earliest"}}
        assert stored["default"] == {"log.segment.bytes": "1048576"}
    finally:
        await h.close()
    h2 = Handlers(tmp_path / "data")
    await h2.open()
    try:
        got = await describe(h2, "g", "share.auto.offset.reset", rtype=GROUP)
        assert got["share.auto.offset.reset"].value == "earliest"
        # A broker change keeps the group's configs in the file.
        assert (await incremental(h2, "", ("log.segment.bytes", DELETE, None)))[0] == 0
        stored = json.loads((tmp_path / "data" / FILE_NAME).read_text())
        assert stored["groups"] == {"g": {"share.auto.offset.reset": "earliest"}}
    finally:
        await h2.close()


async def heartbeat(h: Handlers, group: str) -> cgh.ConsumerGroupHeartbeatRequest:
    req = cgh.ConsumerGroupHeartbeatRequest(  # type: ignore[call-arg]
        group_id=group, member_id="", member_epoch=0, instance_id=None, rack_id=None,  # type: ignore[arg-type]
        rebalance_timeout=30000, subscribed_topic_names=("t",),  # type: ignore[arg-type]
        server_assignor=None, topic_partitions=())
    return await h.call(68, 0, req)  # type: ignore[no-any-return]


async def test_consumer_group_uses_its_session_timeout_and_heartbeat(tmp_path: Path) -> None:
    h = Handlers(tmp_path / "data", {"group.consumer.max.session.timeout.ms": "90000"})
    await h.open()
    try:
        assert (await group_set(h, "g", ("consumer.heartbeat.interval.ms", "7000"),
                                ("consumer.session.timeout.ms", "80000")))[0] == 0
        resp = await heartbeat(h, "g")
        assert (resp.error_code, resp.heartbeat_interval) == (0, timedelta(seconds=7))
        other = await heartbeat(h, "other")
        assert (other.error_code, other.heartbeat_interval) == (0, timedelta(seconds=5))
        timers = h.broker.scheduler.timers
        now = h.broker.scheduler.now()
        deadline = timers.deadline(session_key("g", resp.member_id))
        other_deadline = timers.deadline(session_key("other", other.member_id))
        assert deadline is not None and other_deadline is not None
        assert deadline - now > 70000 >= other_deadline - now
    finally:
        await h.close()


async def test_stored_value_is_clamped_to_new_broker_bounds(tmp_path: Path) -> None:
    h = Handlers(tmp_path / "data", {"group.consumer.max.session.timeout.ms": "90000"})
    await h.open()
    try:
        assert (await group_set(h, "g", ("consumer.session.timeout.ms", "80000")))[0] == 0
    finally:
        await h.close()
    h2 = Handlers(tmp_path / "data")  # the broker's maximum is back to 60000
    await h2.open()
    try:
        assert h2.broker.dynamic.groups.int_value("g", "consumer.session.timeout.ms") == 60000
        got = await describe(h2, "g", "consumer.session.timeout.ms", rtype=GROUP)
        assert got["consumer.session.timeout.ms"].value == "80000"  # as stored, as Kafka
    finally:
        await h2.close()


async def test_listed_by_list_config_resources(handlers: Handlers) -> None:
    assert (await group_set(handlers, "b", ("share.auto.offset.reset", "earliest")))[0] == 0
    assert (await group_set(handlers, "a", ("consumer.session.timeout.ms", "50000")))[0] == 0
    groups = await handlers.call(74, 1, resource_types=(GROUP,))
    assert [(r.resource_type, r.resource_name) for r in groups.config_resources] == [
        (GROUP, "a"), (GROUP, "b")]
    assert (await group_set(handlers, "a", ("consumer.session.timeout.ms", None),
                            op=DELETE))[0] == 0
    groups = await handlers.call(74, 1, resource_types=(GROUP,))
    assert [r.resource_name for r in groups.config_resources] == ["b"]


def test_bad_share_group_settings_stop_the_broker() -> None:
    cases = [
        ({"group.share.record.lock.duration.ms": "70000"},
         "group.share.record.lock.duration.ms must be less than or equal to "
         "group.share.max.record.lock.duration.ms"),
        ({"group.share.min.delivery.count.limit": "1"},
         "Invalid value 1 for configuration group.share.min.delivery.count.limit: "
         "Value must be at least 2"),
        ({"group.share.max.partition.max.record.locks": "50"},
         "Invalid value 50 for configuration group.share.max.partition.max.record.locks"),
        ({"group.share.max.session.timeout.ms": "40000"},
         "group.share.max.session.timeout.ms must be greater than or equal to "
         "group.share.min.session.timeout.ms"),
        ({"group.share.min.session.timeout.ms": "1000", "group.share.session.timeout.ms": "1000",
          "group.share.min.heartbeat.interval.ms": "1000",
          "group.share.heartbeat.interval.ms": "1000"},
         "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms"),
    ]
    for overrides, message in cases:
        with pytest.raises(ConfigError, match=message):
            Config.build(environ={}, overrides=overrides)
    ok = Config.build(environ={}, overrides={"group.share.delivery.count.limit": "10"})
    assert ok.int("group.share.delivery.count.limit") == 10


def test_kafkalite_configs_list_shows_group_configs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kafkalite.broker.cli import main as cli
    from kafkalite.broker.config.store import DynamicStore

    data = tmp_path / "data"
    data.mkdir()
    DynamicStore(default={"log.cleaner.backoff.ms": "700"},
                 groups={"q": {"share.auto.offset.reset": "earliest"}}).write(data)
    assert cli.main(["configs", "set", "--data-dir", str(data), "--default",
                     "log.segment.bytes=1048576"]) == 0
    assert cli.main(["configs", "list", "--data-dir", str(data)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "default\tlog.cleaner.backoff.ms=700", "default\tlog.segment.bytes=1048576",
        "group q\tshare.auto.offset.reset=earliest"]


async def test_share_partition_settings_of_a_group(tmp_path: Path) -> None:
    from kafkalite.coordinator.share.offset_reset import OffsetReset
    from kafkalite.coordinator.share.partition import SharePartitionConfig

    h = Handlers(tmp_path / "data", {"group.share.delivery.count.limit": "4"})
    await h.open()
    try:
        groups = h.broker.dynamic.groups
        assert groups.share_partition_config("q") == SharePartitionConfig(30000, 4, 2000, False)
        assert groups.share_offset_reset("q") == OffsetReset("latest")
        assert (await group_set(h, "q", ("share.record.lock.duration.ms", "20000"),
                                ("share.isolation.level", "read_committed"),
                                ("share.partition.max.record.locks", "100"),
                                ("share.auto.offset.reset", "by_duration:PT1M")))[0] == 0
        assert groups.share_partition_config("q") == SharePartitionConfig(20000, 4, 100, True)
        assert groups.share_offset_reset("q") == OffsetReset("by_duration", 60_000)
    finally:
        await h.close()
