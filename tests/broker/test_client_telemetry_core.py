"""KIP-714 on the broker's side, without sockets: client-metrics subscriptions (Kafka's
ClientMetricsConfigs validation, persistence), client instances (what matches, throttling
on the broker's manual clock, the errors of PushTelemetry in Kafka's order) and pushed
OTLP payloads decoded with every compression Kafka accepts."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1.metrics_pb2 import (
    Gauge,
    Metric,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)

from kafkalite.broker.config.store import DynamicStore
from kafkalite.broker.telemetry.instances import (
    Instances,
    java_uuid_hash,
    kafka_uuid,
    parse_kafka_uuid,
    subscription_id,
)
from kafkalite.broker.telemetry.subscriptions import SubscriptionError, Subscriptions
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.records import compress
from kafkalite.timekeeping.clock import ManualClock

MAX = 1 << 20


def payload(value: float = 3.5) -> bytes:
    gauge = Metric(name="org.apache.kafka.producer.record.queue.time.avg", unit="ms",
                   gauge=Gauge(data_points=[NumberDataPoint(as_double=value)]))
    total = Metric(name="org.apache.kafka.producer.node.request.latency.max", sum=Sum(
        data_points=[NumberDataPoint(as_int=7, attributes=[
            KeyValue(key="node.id", value=AnyValue(string_value="1"))])]))
    return MetricsData(resource_metrics=[ResourceMetrics(scope_metrics=[
        ScopeMetrics(metrics=[gauge, total])])]).SerializeToString()


def attrs(client_id: str = "app", software: str = "apache-kafka-java"):
    def of(iid: uuid.UUID) -> dict[str, str | None]:
        return {"client_instance_id": kafka_uuid(iid), "client_id": client_id,
                "client_software_name": software, "client_software_version": "4.4.0",
                "client_source_address": "127.0.0.1", "client_source_port": "5000"}
    return of


@pytest.fixture
def subs(tmp_path: Path) -> Subscriptions:
    return Subscriptions(tmp_path)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_000_000)


def make(subs: Subscriptions, clock: ManualClock) -> Instances:
    return Instances(subs, clock.now_ms, lambda: MAX)


def test_validation_follows_kafka(subs: Subscriptions) -> None:
    with pytest.raises(SubscriptionError, match="interval must be between 100 and 3600000"):
        subs.alter("s", {"interval.ms": "99"}, False)
    with pytest.raises(SubscriptionError, match="Unknown client metrics configuration: x"):
        subs.alter("s", {"x": "1"}, False)
    with pytest.raises(SubscriptionError, match="Illegal client matching pattern: bogus=1"):
        subs.alter("s", {"match": "bogus=1"}, False)
    with pytest.raises(SubscriptionError, match="name can't be empty"):
        subs.alter("", {"metrics": "*"}, False)
    with pytest.raises(SubscriptionError) as bad_int:
        subs.alter("s", {"interval.ms": "soon"}, False)
    assert bad_int.value.invalid_config
    subs.alter("s", {"metrics": "*"}, True)  # validate only
    assert subs.names() == []


def test_subscriptions_persist_and_removing_every_config_removes_it(
        subs: Subscriptions, tmp_path: Path) -> None:
    subs.alter("everything", {"metrics": "*", "interval.ms": "1000"}, False)
    subs.alter("java", {"metrics": "org.apache.kafka.producer.",
                        "match": "client_software_name=apache-kafka-java"}, False)
    again = Subscriptions(tmp_path)
    again.load(DynamicStore.read(tmp_path))
    assert again.names() == ["everything", "java"]
    assert again.describe("everything") == [("interval.ms", "1000", False),
                                            ("match", "", True), ("metrics", "*", False)]
    again.alter("java", {}, False)
    assert Subscriptions(tmp_path).names() == [] and again.names() == ["everything"]
    third = Subscriptions(tmp_path)
    third.load(DynamicStore.read(tmp_path))
    assert third.names() == ["everything"]


def test_no_subscription_asks_for_nothing(subs: Subscriptions, clock: ManualClock) -> None:
    inst = make(subs, clock)
    got = inst.get_subscriptions(None, attrs(), 1)
    assert got.error is NO_ERROR and got.instance_id is not None
    assert got.metrics == () and got.interval_ms == 300_000


def test_matching_subscriptions_are_joined(subs: Subscriptions, clock: ManualClock) -> None:
    subs.alter("java", {"metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.",
                        "interval.ms": "5000",
                        "match": "client_software_name=apache-kafka-java,client_id=app.*"},
               False)
    subs.alter("other", {"metrics": "org.apache.kafka.admin.", "interval.ms": "2000",
                         "match": "client_id=nobody"}, False)
    subs.alter("short", {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000",
                         "match": "client_source_port=5000"}, False)
    inst = make(subs, clock)
    got = inst.get_subscriptions(None, attrs("app-1"), 1)
    assert got.metrics == ("org.apache.kafka.consumer.", "org.apache.kafka.producer.")
    assert got.interval_ms == 1000
    assert got.instance_id is not None
    assert got.subscription_id == subscription_id(list(got.metrics), 1000, got.instance_id)
    # A regex matches the whole attribute, as Java's Matcher.matches.
    assert inst.get_subscriptions(None, attrs("xapp", "librdkafka"), 2).metrics == (
        "org.apache.kafka.producer.",)
    subs.alter("all", {"metrics": "*"}, False)
    assert inst.get_subscriptions(None, attrs("xapp"), 3).metrics == ("*",)


def test_instance_ids_read_as_kafka_prints_them() -> None:
    iid = uuid.UUID("4e9b0ba6-9ce3-4b84-8f84-69ae1721999c")
    assert kafka_uuid(iid) == "TpsLppzjS4SPhGmuFyGZnA"  # as librdkafka logged it
    assert parse_kafka_uuid("TpsLppzjS4SPhGmuFyGZnA") == iid == parse_kafka_uuid(str(iid))
    assert parse_kafka_uuid("nope!") is None


def test_java_uuid_hash() -> None:
    # Kafka's Uuid.hashCode of (msb=1, lsb=2): h = 3, (int)(h >> 32) ^ (int) h = 3.
    assert java_uuid_hash(uuid.UUID(int=(1 << 64) | 2)) == 3
    assert java_uuid_hash(uuid.UUID(int=(0xFFFFFFFF << 96))) == -1


def test_gets_and_pushes_are_throttled_on_the_broker_clock(
        subs: Subscriptions, clock: ManualClock) -> None:
    subs.alter("all", {"metrics": "*", "interval.ms": "1000"}, False)
    inst = make(subs, clock)
    first = inst.get_subscriptions(None, attrs(), 1)
    iid = first.instance_id
    assert iid is not None
    again = inst.get_subscriptions(iid, attrs(), 1)
    assert again.error is ErrorCode.throttling_quota_exceeded

    def push(sub: int = first.subscription_id, terminating: bool = False,
             compression: int = 0, data: bytes | None = None) -> ErrorCode:
        return inst.push(iid, sub, terminating, compression,
                         payload() if data is None else data, attrs(), 1)

    assert push() is NO_ERROR  # the first push after a get, at once
    assert push() is ErrorCode.throttling_quota_exceeded
    clock.advance(999)
    assert push() is ErrorCode.throttling_quota_exceeded
    clock.advance(1)
    assert push() is NO_ERROR
    clock.advance(1000)
    assert push(sub=first.subscription_id + 1) is ErrorCode.unknown_subscription_id
    # After UNKNOWN_SUBSCRIPTION_ID a get is answered at once.
    assert inst.get_subscriptions(iid, attrs(), 1).error is NO_ERROR
    clock.advance(1000)
    assert push(compression=9) is ErrorCode.unsupported_compression_type
    clock.advance(1000)
    assert push(data=b"\xff" * 20) is ErrorCode.invalid_record
    clock.advance(1000)
    assert push(data=b"x" * (MAX + 1)) is ErrorCode.telemetry_too_large
    # A terminating push is taken before the interval; nothing after it.
    assert push(terminating=True) is NO_ERROR
    clock.advance(1000)
    assert push() is ErrorCode.invalid_request
    assert inst.push(None, 0, False, 0, b"", attrs(), 1) is ErrorCode.invalid_request
    assert inst.push(uuid.UUID(int=0), 0, False, 0, b"", attrs(), 1) \
        is ErrorCode.invalid_request


def test_a_changed_subscription_reaches_the_instance_at_once(
        subs: Subscriptions, clock: ManualClock) -> None:
    inst = make(subs, clock)
    first = inst.get_subscriptions(None, attrs(), 1)
    assert first.metrics == ()
    subs.alter("all", {"metrics": "*", "interval.ms": "1000"}, False)
    # Within the old interval, but the subscription changed: a new one, not throttled.
    got = inst.get_subscriptions(first.instance_id, attrs(), 1)
    assert got.error is NO_ERROR and got.metrics == ("*",)
    assert got.subscription_id != first.subscription_id
    assert inst.push(first.instance_id, first.subscription_id, False, 0, payload(), attrs(),
                     1) is ErrorCode.unknown_subscription_id


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_pushed_metrics_are_decoded(subs: Subscriptions, clock: ManualClock,
                                    codec: int) -> None:
    subs.alter("all", {"metrics": "*", "interval.ms": "1000"}, False)
    inst = make(subs, clock)
    got = inst.get_subscriptions(None, attrs(), 7)
    assert got.instance_id is not None
    assert inst.push(got.instance_id, got.subscription_id, False, codec,
                     compress(codec, payload(2.25)), attrs(), 7) is NO_ERROR
    i = inst.for_connection(7)
    assert i is not None
    series = {(s.name, s.attributes): (s.unit, list(s.values)) for s in i.series.values()}
    assert series == {
        ("org.apache.kafka.producer.record.queue.time.avg", ()): ("ms", [(1_000_000, 2.25)]),
        ("org.apache.kafka.producer.node.request.latency.max", (("node.id", "1"),)):
            ("", [(1_000_000, 7.0)]),
    }


def test_instances_end_with_their_connection_or_unheard(
        subs: Subscriptions, clock: ManualClock) -> None:
    subs.alter("all", {"metrics": "*", "interval.ms": "1000"}, False)
    inst = make(subs, clock)
    a = inst.get_subscriptions(None, attrs(), 1)
    inst.get_subscriptions(None, attrs(), 2)
    inst.disconnected(1)
    assert a.instance_id not in inst.by_id and inst.for_connection(1) is None
    assert inst.for_connection(2) is not None
    clock.advance(59_999)
    inst.expire(clock.now_ms())
    assert inst.for_connection(2) is not None
    clock.advance(1)  # a minute: three push intervals of 1 s are less
    inst.expire(clock.now_ms())
    assert inst.for_connection(2) is None
