"""The quota managers on the broker's manual clock: Kafka's Rate windows and throttle
times, the eight quota entities' precedence and shared sensors, the controller mutation
token bucket, and the connection creation rate by IP (figures worked as Kafka's
Rate/TokenBucket/QuotaUtils work them)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kafkalite.broker.quotas import Alteration, ClientQuotaStore
from kafkalite.broker.quotas.managers import (
    ClientQuotaManager,
    QuotaManagers,
    ThrottlingQuotaExceeded,
)
from kafkalite.broker.quotas.metrics import quota_families
from kafkalite.broker.quotas.rates import Avg, Rate, RateSensor, Window
from kafkalite.timekeeping.clock import ManualClock

T0 = 1_000_000


def test_rate_assumes_samples_minus_one_full_windows() -> None:
    w = Window(1000, 11, 100.0)
    r = Rate()
    r.record(w, 500, T0)
    # 10 windows assumed before the first: 500 bytes over 10 s.
    assert r.window_size(w, T0) == 10_000
    assert r.measure(w, T0) == pytest.approx(50.0)
    assert r.window_size(w, T0 + 2500) == 10_000 + 500  # 2 full windows of 10 needed
    # Past the samples' span, the old samples are purged.
    assert r.measure(w, T0 + 11_000) == 0.0


def test_rate_sensor_throttle_time_is_the_excess_over_the_window() -> None:
    w = Window(1000, 2, 100.0)  # one full window assumed: 1 s
    s = RateSensor(w)
    assert s.record(100, T0) == 0  # 100 B over 1 s: at the bound
    # 300 B over 1 s = 300 B/s: (300 - 100) / 100 * 1000 ms.
    assert s.record(200, T0) == 2000
    clock = ManualClock(T0)
    clock.advance(2000)
    # Two windows later, the earlier samples have expired: within quota again.
    assert s.record(50, clock.now_ms()) == 0


def test_request_throttle_is_capped_at_one_window() -> None:
    s = RateSensor(Window(1000, 2, 1.0), max_throttle_ms=1000)
    assert s.record(1000.0, T0) == 1000


def _store(tmp_path: Path, *quotas: tuple[dict[str, str | None], str, float]
           ) -> ClientQuotaStore:
    store = ClientQuotaStore(tmp_path)
    for entity, key, value in quotas:
        results = store.alter([Alteration(entity, ((key, value),))], validate_only=False)
        assert all(err == 0 for _e, err, _m in results)
    return store


#: Kafka's order: the first entity holding a quota wins.
PRECEDENCE: list[tuple[dict[str, str | None], float]] = [
    ({"user": "alice", "client-id": "app"}, 1.0),
    ({"user": "alice", "client-id": None}, 2.0),
    ({"user": "alice"}, 3.0),
    ({"user": None, "client-id": "app"}, 4.0),
    ({"user": None, "client-id": None}, 5.0),
    ({"user": None}, 6.0),
    ({"client-id": "app"}, 7.0),
    ({"client-id": None}, 8.0),
]


@pytest.mark.parametrize("first", range(len(PRECEDENCE)))
def test_precedence_of_the_eight_entities(tmp_path: Path, first: int) -> None:
    store = _store(tmp_path, *((e, "producer_byte_rate", v) for e, v in PRECEDENCE[first:]))
    m = QuotaManagers(store)
    assert m.enabled
    assert m.produce.quota("alice", "app") == PRECEDENCE[first][1]
    assert not m.fetch.enabled and m.fetch.quota("alice", "app") is None


def test_sensor_shared_by_the_entity_the_quota_is_found_at(tmp_path: Path) -> None:
    store = _store(tmp_path, ({"user": "alice"}, "producer_byte_rate", 100.0),
                   ({"client-id": None}, "producer_byte_rate", 1000.0))
    m = QuotaManagers(store)
    # alice's clients share one user quota; bob falls through to the default client-id
    # quota, one sensor per client id.
    assert m.produce.metric_tags("alice", "a") == m.produce.metric_tags("alice", "b") \
        == ("alice", "")
    assert m.produce.metric_tags("bob", "a") == ("", "a")
    assert m.produce.quota("bob", "a") == 1000.0
    assert m.produce.record("alice", "a", 1000, T0) == 0  # 1000 B / 10 s = the bound
    assert m.produce.record("alice", "b", 1000, T0) == 10_000  # shared: 200 B/s
    assert m.produce.record("bob", "x", 1000, T0) == 0


def test_quota_change_applies_to_existing_sensors(tmp_path: Path) -> None:
    store = _store(tmp_path, ({"client-id": "c"}, "consumer_byte_rate", 100.0))
    m = QuotaManagers(store)
    assert m.fetch.record("", "c", 2000, T0) == 10_000
    store.alter([Alteration({"client-id": "c"}, (("consumer_byte_rate", 1e6),))], False)
    assert m.fetch.record("", "c", 1, T0) == 0
    store.alter([Alteration({"client-id": "c"}, (("consumer_byte_rate", None),))], False)
    assert m.fetch.quota("", "c") is None
    assert m.fetch.record("", "c", 1e9, T0) == 0


def test_fetch_cap_is_one_quota_window_short_of_the_samples(tmp_path: Path) -> None:
    m = QuotaManagers(_store(tmp_path, ({"client-id": "c"}, "consumer_byte_rate", 1000.0)),
                      window_num=3, window_s=2)
    assert m.fetch.max_window_value("", "c") == 1000.0 * 2 * 2
    assert m.fetch.max_window_value("", "other") > 2**62


def test_no_quota_no_recording() -> None:
    m = ClientQuotaManager("producer_byte_rate", 1000, 11)
    assert not m.enabled
    assert m.record("u", "c", 1e12, T0) == 0
    assert not m.sensors


def test_controller_mutation_strict_and_permissive(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    store = _store(tmp_path, ({"client-id": "admin"}, "controller_mutation_rate", 2.0))
    m = QuotaManagers(store, controller_window_num=2, controller_window_s=1,
                      clock=clock.now_ms)
    # Burst: 2 windows * 1 s * 2/s = 4 tokens, full at first use.
    q = m.mutation.quota_for("", "admin", strict=True, now=clock.now_ms())
    q.record(3)
    q.record(3)  # tokens 1 before: allowed, now in debt of 2
    with pytest.raises(ThrottlingQuotaExceeded) as e:
        q.record(1)
    assert e.value.throttle_ms == 1000  # 2 tokens at 2/s
    assert q.throttle_time(clock.now_ms()) == 1000
    clock.advance(400)
    assert q.throttle_time(clock.now_ms()) == 600
    clock.advance(600)
    q2 = m.mutation.quota_for("", "admin", strict=True, now=clock.now_ms())
    q2.record(1)  # debt repaid: allowed again
    # An old version's request is throttled, never refused.
    p = m.mutation.quota_for("", "admin", strict=False, now=clock.now_ms())
    p.record(10)
    assert p.throttle_time(clock.now_ms()) == round(11 / 2 * 1000)
    # Another client id has no quota: unbounded.
    m.mutation.quota_for("", "other", strict=True, now=clock.now_ms()).record(1000)


def test_connection_creation_rate_by_ip(tmp_path: Path) -> None:
    store = _store(tmp_path, ({"ip": "127.0.0.2"}, "connection_creation_rate", 2.0),
                   ({"ip": None}, "connection_creation_rate", 100.0))
    m = QuotaManagers(store, window_num=2, window_s=1)
    rates = m.connections
    assert rates.rate_for("127.0.0.2") == 2 and rates.rate_for("10.0.0.1") == 100
    assert rates.admit("127.0.0.2", T0) == 0
    assert rates.admit("127.0.0.2", T0) == 0
    # A third within the window is 3/s against 2/s: held 500 ms, and not counted.
    assert rates.admit("127.0.0.2", T0) == 500
    assert rates.admit("127.0.0.2", T0) == 500
    assert rates.admit("127.0.0.2", T0 + 2000) == 0
    assert all(rates.admit("127.0.0.3", T0) == 0 for _ in range(100))


def test_sensors_unused_for_an_hour_are_dropped(tmp_path: Path) -> None:
    m = QuotaManagers(_store(tmp_path, ({"client-id": None}, "producer_byte_rate", 1e6)))
    for i in range(1023):
        m.produce.record("", f"c{i}", 1, T0)
    m.produce.record("", "recent", 1, T0 + 3_000_000)
    assert len(m.produce.sensors) == 1024
    # The next new sensor finds 1023 of them unused for an hour.
    m.produce.record("", "new", 1, T0 + 3_600_000)
    assert set(m.produce.sensors) == {("", "recent"), ("", "new")}


def test_each_quota_key_has_its_own_entities(tmp_path: Path) -> None:
    store = _store(tmp_path, ({"user": "alice", "client-id": "app"}, "request_percentage", 5.0),
                   ({"user": None}, "consumer_byte_rate", 100.0),
                   ({"client-id": "app"}, "controller_mutation_rate", 2.0),
                   ({"ip": None}, "connection_creation_rate", 10.0))
    m = QuotaManagers(store)
    assert m.request.quota("alice", "app") == 5.0 and m.request.quota("bob", "app") is None
    assert m.request.metric_tags("alice", "app") == ("alice", "app")
    assert m.fetch.quota("bob", "x") == 100.0 and m.fetch.metric_tags("bob", "x") == ("bob", "")
    assert m.mutation.quota("alice", "app") == 2.0 and m.mutation.quota("", "other") is None
    assert m.produce.quota("alice", "app") is None and not m.produce.enabled
    assert m.connections.rate_for("10.1.1.1") == 10


def test_throttle_time_metric_is_the_mean_of_the_throttles_in_the_windows() -> None:
    w = Window(1000, 2, 1e18)
    avg = Avg()
    assert math.isnan(avg.measure(w, T0))
    avg.record(w, 100.0, T0)
    avg.record(w, 300.0, T0 + 1500)
    assert avg.measure(w, T0 + 1500) == pytest.approx(200.0)
    # Both samples older than the two windows: none left.
    assert math.isnan(avg.measure(w, T0 + 5000))


def test_quota_metrics_families(tmp_path: Path) -> None:
    """The scrape's families: Kafka's names, a byte rate per client id under a client-id
    quota, and the throttle time only where a throttle was given."""
    from prometheus_client.core import Metric

    store = ClientQuotaStore(tmp_path)
    m = QuotaManagers(store, 2, 1)
    assert list(quota_families(m, None, lambda: T0)) == []
    store.alter([Alteration({"client-id": "slow"}, (("producer_byte_rate", 100.0),))],
                validate_only=False)
    assert m.produce.record("", "slow", 300, T0) == 2000
    m.produce.throttled("", "slow", 2000, T0)
    assert m.produce.record("", "other", 50, T0) == 0
    families: dict[str, Metric] = {f.name: f for f in quota_families(m, None, lambda: T0)}
    assert sorted(families) == ["kafka_server_produce_byte_rate",
                                "kafka_server_produce_throttle_time"]
    rates = {s.labels["client_id"]: s.value
             for s in families["kafka_server_produce_byte_rate"].samples}
    assert rates == {"slow": pytest.approx(300.0), "other": pytest.approx(50.0)}
    throttles = {s.labels["client_id"]: s.value
                 for s in families["kafka_server_produce_throttle_time"].samples}
    assert throttles["slow"] == 2000.0 and math.isnan(throttles["other"])


def test_quota_metrics_by_user(tmp_path: Path) -> None:
    """A user quota: the sensor, and so the metric, is the user's (client id empty)."""
    store = _store(tmp_path, ({"user": "alice"}, "request_percentage", 10.0))
    m = QuotaManagers(store, 2, 1)
    m.request.record("alice", "a", 5.0, T0)
    m.request.record("alice", "b", 5.0, T0)
    [rate, throttle] = quota_families(m, None, lambda: T0)
    assert rate.name == "kafka_server_request_request_time"
    assert [(s.labels, s.value) for s in rate.samples] == [
        ({"user": "alice", "client_id": ""}, pytest.approx(10.0))]
    assert throttle.name == "kafka_server_request_throttle_time"
