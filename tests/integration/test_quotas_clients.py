"""Client quotas enforced, seen by real clients over TCP: a confluent-kafka producer and
consumer under ``producer_byte_rate``/``consumer_byte_rate`` quotas on their client id and
on a SASL user, the throttle time librdkafka reports (its statistics' ``throttle``), the
throughput held to the quota, and a muted connection on the manual clock.

Quotas use two windows of one second (``quota.window.num=2``) so a few tens of KB are
throttled at once and each test runs in a few seconds."""

from __future__ import annotations

import json
import math
import socket
import struct
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from kafkalite.broker.quotas import Alteration
from kafkalite.broker.security.fixture import SecuritySetup
from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.client.kafka import RawConnection, request, request_class

from .test_metrics import scrape, value

Factory = Callable[..., BrokerThread]
ALTER_CLIENT_QUOTAS, CREATE_TOPICS = 49, 19
WINDOWS = {"quota.window.num": "2", "quota.window.size.seconds": "1"}


def set_quota(bootstrap: str, entity: dict[str, str | None], key: str,
              value: float | None) -> None:
    """AlterClientQuotas v1 over the wire, as kafka-configs sends it."""
    entity_t = request_class(ALTER_CLIENT_QUOTAS, 1, "EntityData")
    op_t = request_class(ALTER_CLIENT_QUOTAS, 1, "OpData")
    entry_t = request_class(ALTER_CLIENT_QUOTAS, 1, "EntryData")
    conn = RawConnection(bootstrap, "quota-admin")
    try:
        resp = conn.call(request(ALTER_CLIENT_QUOTAS, 1, validate_only=False, entries=(
            entry_t(entity=tuple(entity_t(entity_type=t, entity_name=n)
                                 for t, n in entity.items()),
                    ops=(op_t(key=key, value=value or 0.0, remove=value is None),)),)))
    finally:
        conn.close()
    assert [e.error_code for e in resp.entries] == [0]


class Stats:
    """librdkafka's statistics: the largest broker throttle time it has reported."""

    def __init__(self) -> None:
        self.throttle_max = 0

    def __call__(self, raw: str) -> None:
        doc = json.loads(raw)
        for b in doc.get("brokers", {}).values():
            self.throttle_max = max(self.throttle_max, int(b.get("throttle", {}).get("max", 0)))


def produce_all(conf: dict[str, Any], topic: str, count: int, size: int,
                stats: Stats) -> float:
    p = Producer({**conf, "statistics.interval.ms": 200, "stats_cb": stats,
                  "linger.ms": 5, "batch.size": 4096})
    started = time.monotonic()
    payload = b"x" * size
    for _ in range(count):
        p.produce(topic, payload)
        p.poll(0)
    assert p.flush(30) == 0
    elapsed = time.monotonic() - started
    p.poll(0.5)  # one more statistics round after the last response
    return elapsed


def test_producer_client_id_quota(make_broker: Factory) -> None:
    b = make_broker(WINDOWS)
    set_quota(b.bootstrap, {"client-id": "slowpoke"}, "producer_byte_rate", 10240)
    fast, slow = Stats(), Stats()
    conf = {"bootstrap.servers": b.bootstrap}
    # 40 KB at 10 KB/s: about three seconds beyond the first window's allowance.
    elapsed_fast = produce_all({**conf, "client.id": "quick"}, "q", 40, 1024, fast)
    elapsed_slow = produce_all({**conf, "client.id": "slowpoke"}, "q", 40, 1024, slow)
    assert fast.throttle_max == 0
    assert slow.throttle_max > 0
    # Held to the quota: 40 KB cannot leave faster than the quota lets it.
    assert elapsed_slow >= 2.0 > elapsed_fast
    # Removed, the quota stops throttling (the sensor keeps no bound).
    set_quota(b.bootstrap, {"client-id": "slowpoke"}, "producer_byte_rate", None)
    again = Stats()
    assert produce_all({**conf, "client.id": "slowpoke"}, "q", 40, 1024, again) < 2.0


def _fill(bootstrap: str, topic: str, count: int, size: int) -> None:
    # Batches of 4 KB: a throttled fetch answers with no records, so a batch bigger than
    # one quota window's allowance would never be delivered (as on Kafka).
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 4096})
    for _ in range(count):
        p.produce(topic, b"y" * size)
    assert p.flush(30) == 0


def consume_all(conf: dict[str, Any], topic: str, count: int, stats: Stats) -> float:
    c = Consumer({**conf, "group.id": f"g-{conf['client.id']}", "auto.offset.reset": "earliest",
                  "statistics.interval.ms": 200, "stats_cb": stats,
                  "max.partition.fetch.bytes": 4096})
    c.subscribe([topic])
    got = 0
    started = time.monotonic()
    deadline = started + 30
    while got < count and time.monotonic() < deadline:
        msgs = c.consume(100, 0.2)
        got += sum(1 for m in msgs if m.error() is None)
    elapsed = time.monotonic() - started
    c.consume(1, 0.5)
    c.close()
    assert got == count
    return elapsed


def test_consumer_client_id_quota(make_broker: Factory) -> None:
    b = make_broker(WINDOWS)
    _fill(b.bootstrap, "c", 40, 1024)
    set_quota(b.bootstrap, {"client-id": None}, "consumer_byte_rate", 10240)
    slow = Stats()
    conf = {"bootstrap.servers": b.bootstrap}
    # The default client-id quota applies to every client id, each on its own.
    elapsed = consume_all({**conf, "client.id": "reader"}, "c", 40, slow)
    assert slow.throttle_max > 0
    assert elapsed >= 2.0


def test_user_quota_over_sasl(make_broker: Factory) -> None:
    b = make_broker(WINDOWS, security=SecuritySetup(
        "SASL_PLAINTEXT", mechanisms=("SCRAM-SHA-256",),
        users={"alice": "alice-secret", "bob": "bob-secret"}))
    # Set in the broker's quota store, as AlterClientQuotas would (over SASL).
    store = b.inner.apis.quota_managers.store
    assert store is not None
    b.call(lambda: store.alter(
        [Alteration({"user": "alice"}, (("producer_byte_rate", 10240.0),))], False))
    alice, bob = Stats(), Stats()
    a = b.client("alice").librdkafka()
    o = b.client("bob").librdkafka()
    # Two client ids of alice share her user quota; bob has none.
    t_bob = produce_all({**o, "client.id": "one"}, "u", 40, 1024, bob)
    t_alice = produce_all({**a, "client.id": "one"}, "u", 20, 1024, alice)
    t_alice += produce_all({**a, "client.id": "two"}, "u", 20, 1024, alice)
    assert bob.throttle_max == 0 and alice.throttle_max > 0
    assert t_alice >= 2.0 > t_bob
    # A user quota on fetching: alice's consumer reads the 80 KB at 20 KB/s.
    b.call(lambda: store.alter(
        [Alteration({"user": "alice"}, (("consumer_byte_rate", 20480.0),))], False))
    reading = Stats()
    assert consume_all({**a, "client.id": "reader"}, "u", 80, reading) >= 2.0
    assert reading.throttle_max > 0


def test_muted_connection_follows_the_manual_clock(make_broker: Factory) -> None:
    """The answer comes at once with its throttle time; the connection's next request is
    read only once the broker's clock has moved past it."""
    b = make_broker({"controller.quota.window.num": "2"}, manual_clock=True)
    set_quota(b.bootstrap, {"client-id": "creator"}, "controller_mutation_rate", 1.0)
    conn = RawConnection(b.bootstrap, "creator")
    topic_t = request_class(CREATE_TOPICS, 7, "CreatableTopic")

    def create(name: str, partitions: int) -> Any:
        return request(CREATE_TOPICS, 7, timeout=timedelta(seconds=10), validate_only=False,
                       topics=(
            topic_t(name=name, num_partitions=partitions, replication_factor=1,
                    assignments=(), configs=()),))

    try:
        # Burst: 2 windows x 1 s x 1/s = 2 tokens. A request within them passes even when
        # it leaves a debt (5 partitions: 3 tokens short), and is not throttled itself.
        first = conn.call(create("t1", 5))
        assert first.topics[0].error_code == 0
        assert first.throttle_time == timedelta(0)
        # The next is refused while in debt (v6+), throttled for the debt's repayment.
        second = conn.call(create("t2", 1))
        assert second.topics[0].error_code == 89  # THROTTLING_QUOTA_EXCEEDED
        assert second.topics[0].error_message == "The throttling quota has been exceeded."
        assert second.throttle_time == timedelta(seconds=3)
        # Sent while muted: not read, so not answered, until the clock moves 3 s.
        conn.sock.sendall(conn.frame(create("t3", 1)))
        conn.sock.settimeout(0.5)
        with pytest.raises(socket.timeout):
            conn.sock.recv(1, socket.MSG_PEEK)
        b.advance(2999)
        with pytest.raises(socket.timeout):
            conn.sock.recv(1, socket.MSG_PEEK)
        b.advance(1)
        conn.sock.settimeout(10)
        (size,) = struct.unpack(">i", conn._recv_exact(4))
        assert len(conn._recv_exact(size)) == size
        assert "t3" in b.call(lambda: {t.name for t in b.inner.storage.catalog})
        assert "t2" not in b.call(lambda: {t.name for t in b.inner.storage.catalog})
    finally:
        conn.close()


def test_request_percentage_caps_the_throttle_at_one_window(make_broker: Factory) -> None:
    b = make_broker(WINDOWS)
    # A thousandth of a percent of one thread: any request is far over it.
    set_quota(b.bootstrap, {"client-id": "busy"}, "request_percentage", 0.001)
    busy, idle = RawConnection(b.bootstrap, "busy"), RawConnection(b.bootstrap, "idle")
    try:
        meta = request(3, 12, topics=None, allow_auto_topic_creation=False,
                       include_topic_authorized_operations=False)
        assert idle.call(meta).throttle_time == timedelta(0)
        # The request quota throttles for at most one quota window (1 s here).
        assert busy.call(meta).throttle_time == timedelta(seconds=1)
    finally:
        busy.close()
        idle.close()


def test_connection_creation_rate_by_ip(make_broker: Factory) -> None:
    """Over its IP's rate a new connection is held unread, then closed when the throttle
    time has passed on the broker's clock; it is not counted against the rate."""
    from .test_limits import connect, served

    b = make_broker(WINDOWS, manual_clock=True)
    set_quota(b.bootstrap, {"ip": "127.0.0.1"}, "connection_creation_rate", 2)
    first, second = connect(b), connect(b)
    assert served(first) and served(second)
    third = connect(b)
    try:
        third.sendall(api_versions_frame())
        third.settimeout(0.5)
        with pytest.raises(socket.timeout):
            third.recv(1)
        # 3 connections in the first second against 2/s: held (3 - 2) / 2 * 1 s.
        b.advance(499)
        with pytest.raises(socket.timeout):
            third.recv(1)
        b.advance(1)
        third.settimeout(5)
        try:
            assert third.recv(1) == b""
        except ConnectionResetError:
            pass  # closed with the request unread
        b.advance(2000)
        fourth = connect(b)
        assert served(fourth)
        fourth.close()
    finally:
        for s in (first, second, third):
            s.close()


def api_versions_frame() -> bytes:
    body = struct.pack(">hhih", 18, 0, 1, -1)
    return struct.pack(">i", len(body)) + body


def test_kafka_configs_sets_the_quota_a_producer_is_throttled_by(make_broker: Factory,
                                                                  tmp_path: Any) -> None:
    """The issue's steps: ``kafka-configs --alter --add-config producer_byte_rate=...
    --entity-type clients --entity-name slowpoke``, then a producer with that client id."""
    from .java_support import run_tool, tools_log_config

    b = make_broker(WINDOWS)
    log = tools_log_config(tmp_path)
    configs = "org.apache.kafka.tools.ConfigCommand"
    out = run_tool(configs, "--bootstrap-server", b.bootstrap, "--alter", "--add-config",
                   "producer_byte_rate=10240", "--entity-type", "clients", "--entity-name",
                   "slowpoke", log_config=log).stdout
    assert out == "Completed updating config for client slowpoke.\n"
    stats = Stats()
    elapsed = produce_all({"bootstrap.servers": b.bootstrap, "client.id": "slowpoke"}, "s",
                          40, 1024, stats)
    assert stats.throttle_max > 0 and elapsed >= 2.0


def test_max_connection_creation_rate_holds_the_acceptor(make_broker: Factory) -> None:
    """``listener.name.<l>.max.connection.creation.rate`` and the broker-wide
    ``max.connection.creation.rate``, set with confluent-kafka's AdminClient: past the rate
    the listener's acceptor waits the throttle time on the broker's clock, then takes the
    connection (it is served, not closed), and the connections behind it wait their turn."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    from .test_limits import connect, served

    b = make_broker(WINDOWS, manual_clock=True, admin=True)

    def alter(**values: str | None) -> None:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        res = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[
            ConfigEntry(name.replace("_", "."), value, incremental_operation=(
                AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE))
            for name, value in values.items()])
        [(_r, future)] = admin.incremental_alter_configs([res]).items()
        future.result(15)

    def waiting(s: socket.socket) -> bool:
        s.settimeout(0.3)
        try:
            s.recv(1)
        except TimeoutError:
            return True
        return False

    alter(listener_name_plaintext_max_connection_creation_rate="2")
    b.advance(5000)  # the admin client's connection out of the rate's windows
    first, second = connect(b), connect(b)
    held = [connect(b), connect(b)]
    try:
        assert served(first) and served(second)
        for s in held:
            s.sendall(api_versions_frame())
        # The third in the first second against 2/s: (3 - 2) / 2 * 1 s; the fourth,
        # recorded when the acceptor is free again, 4 over 1.5 s: another 500 ms.
        b.advance(499)
        assert waiting(held[0]) and waiting(held[1])
        b.advance(1)
        held[0].settimeout(5)
        assert len(held[0].recv(4)) == 4
        assert waiting(held[1])
        b.advance(500)
        held[1].settimeout(5)
        assert len(held[1].recv(4)) == 4
        # Both waits on /metrics, as Kafka's socket-server-metrics show them.
        assert value(scrape(b), "kafka_network_socket_server_metrics_"
                     "connection_accept_throttle_time", listener="PLAINTEXT",
                     node="1") == 500.0
    finally:
        for s in (first, second, *held):
            s.close()

    # The broker-wide rate, the listener's removed: 1/s, a wait capped at one window.
    b.advance(5000)
    alter(listener_name_plaintext_max_connection_creation_rate=None,
          max_connection_creation_rate="1")
    b.advance(5000)
    first = connect(b)
    second = connect(b)
    try:
        assert served(first)
        second.sendall(api_versions_frame())
        b.advance(999)
        assert waiting(second)
        b.advance(1)
        second.settimeout(5)
        assert len(second.recv(4)) == 4
    finally:
        first.close()
        second.close()


def test_quota_metrics_on_the_metrics_endpoint(make_broker: Factory) -> None:
    """Kafka's per-client quota metrics, scraped: none before a quota is set; then the
    byte rate of every client id and the throttle time of the one over its quota."""
    b = make_broker(WINDOWS, admin=True)
    conf = {"bootstrap.servers": b.bootstrap}
    produce_all({**conf, "client.id": "quick"}, "m", 5, 1024, Stats())
    before = scrape(b)
    assert not [k for k in before if k[0].startswith("kafka_server_produce_")]
    set_quota(b.bootstrap, {"client-id": "slowpoke"}, "producer_byte_rate", 10240)
    slow = Stats()
    produce_all({**conf, "client.id": "slowpoke"}, "m", 40, 1024, slow)
    produce_all({**conf, "client.id": "quick"}, "m", 5, 1024, Stats())
    assert slow.throttle_max > 0
    after = scrape(b)
    rate = value(after, "kafka_server_produce_byte_rate", user="", client_id="slowpoke")
    # 40 KB in two windows of one second, held to about 10 KB/s.
    assert 2000 < rate < 3 * 10240
    throttle = value(after, "kafka_server_produce_throttle_time", user="",
                     client_id="slowpoke")
    assert 0 < throttle <= 2000
    assert value(after, "kafka_server_produce_byte_rate", user="", client_id="quick") > 0
    assert math.isnan(value(after, "kafka_server_produce_throttle_time", user="",
                            client_id="quick"))
    # The request quota's sensors exist only once a request quota is set.
    assert not [k for k in after if k[0].startswith("kafka_server_request_")]


def test_each_node_has_its_own_connection_creation_rate(make_broker: Factory) -> None:
    """``max.connection.creation.rate`` set for node 2 alone (confluent-kafka's
    AdminClient, broker resource "2") holds node 2's acceptor; node 1 takes every
    connection at once, as two Kafka brokers would."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    from .test_limits import served

    b = make_broker(WINDOWS, manual_clock=True, nodes=2)
    admin = AdminClient({"bootstrap.servers": ",".join(b.bootstraps)})
    res = ConfigResource(ResourceType.BROKER, "2", incremental_configs=[
        ConfigEntry("max.connection.creation.rate", "1",
                    incremental_operation=AlterConfigOpType.SET)])
    [(_r, future)] = admin.incremental_alter_configs([res]).items()
    future.result(15)
    del admin
    b.advance(5000)

    def connect_to(node: int) -> socket.socket:
        host, port = b.bootstraps[node - 1].rsplit(":", 1)
        s = socket.create_connection((host, int(port)), timeout=5)
        return s

    ones = [connect_to(1) for _ in range(3)]
    twos = [connect_to(2), connect_to(2)]
    try:
        assert all(served(s) for s in ones)
        assert served(twos[0])
        twos[1].sendall(api_versions_frame())
        twos[1].settimeout(0.3)
        with pytest.raises(socket.timeout):
            twos[1].recv(1)
        b.advance(1000)  # 2 over 1 s against 1/s: one window
        twos[1].settimeout(5)
        assert len(twos[1].recv(4)) == 4
    finally:
        for s in (*ones, *twos):
            s.close()
