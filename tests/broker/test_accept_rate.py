"""``max.connection.creation.rate`` on the broker's manual clock: the listener's acceptor
waits the throttle time (the figures as Kafka's Rate and QuotaUtils give them), takes the
connections behind the one it waits for in order, each node under its own bounds, and a
connection refused for its IP's rate is taken back out of the rates."""

from __future__ import annotations

import pytest

from kafkalite.broker.config.properties import Config
from kafkalite.broker.quotas.accept_rate import (
    INT_MAX,
    AcceptRateConfigs,
    AcceptRates,
    listener_rates,
)
from kafkalite.broker.quotas.rates import Window
from kafkalite.timekeeping.clock import ManualClock
from kafkalite.timekeeping.scheduler import Scheduler


class Conn:
    def __init__(self, name: str, log: list[tuple[str, int]], clock: ManualClock) -> None:
        self.connection_id = id(self)
        self.name = name
        self.log = log
        self.clock = clock

    def accept_now(self) -> None:
        self.log.append((self.name, self.clock.now_ms()))


def _rates(values: dict[int, dict[str, str]]) -> tuple[AcceptRates, Scheduler, ManualClock]:
    clock = ManualClock(1_000_000)
    scheduler = Scheduler(clock)
    # Two windows of one second: the rate is measured over at least one second.
    return AcceptRates(scheduler, 1000, 2, lambda node: values.get(node, {})), scheduler, clock


def test_the_acceptor_waits_and_takes_the_queue_in_order() -> None:
    rates, scheduler, clock = _rates({1: {"max.connection.creation.rate": "2"}})
    log: list[tuple[str, int]] = []
    conns = [Conn(f"c{i}", log, clock) for i in range(5)]
    t0 = clock.now_ms()
    assert rates.arrive(conns[0], 1, "PLAINTEXT")
    assert rates.arrive(conns[1], 1, "PLAINTEXT")
    # 3 over 1 s against 2/s: (3 - 2) / 2 * 1000 ms; the two behind it queue.
    assert [rates.arrive(c, 1, "PLAINTEXT") for c in conns[2:]] == [False] * 3
    scheduler.advance(499)
    assert log == []
    scheduler.advance(1)
    # c3 recorded at 500 ms: 4 over 1.5 s, (2.67 - 2) / 2 * 1500 = 500 ms more.
    assert log == [("c2", t0 + 500)]
    scheduler.advance(500)
    assert log[-1] == ("c3", t0 + 1000)
    # connection-accept-throttle-time: the mean of the waits in the windows (the third
    # wait, c4's, began at 1000 ms too).
    window = Window(1000, 2, INT_MAX)
    assert rates.throttle_times[(1, "PLAINTEXT")].measure(window, clock.now_ms()) > 0
    scheduler.advance(2000)
    assert [name for name, _ in log] == ["c2", "c3", "c4"]


def test_listener_rate_and_each_nodes_own_bounds() -> None:
    rates, scheduler, clock = _rates({
        1: {"listener.name.sasl_plaintext.max.connection.creation.rate": "1"},
        2: {"max.connection.creation.rate": "1"}})
    log: list[tuple[str, int]] = []
    # Node 1: only its SASL_PLAINTEXT listener is bounded.
    assert all(rates.arrive(Conn("p", log, clock), 1, "PLAINTEXT") for _ in range(5))
    assert rates.arrive(Conn("s1", log, clock), 1, "SASL_PLAINTEXT")
    assert not rates.arrive(Conn("s2", log, clock), 1, "SASL_PLAINTEXT")
    # Node 2: its broker-wide rate, whatever the listener.
    assert rates.arrive(Conn("a", log, clock), 2, "PLAINTEXT")
    assert not rates.arrive(Conn("b", log, clock), 2, "SASL_PLAINTEXT")
    scheduler.advance(1000)  # 2 over 1 s against 1/s, capped at one window
    assert sorted(name for name, _ in log) == ["b", "s2"]


def test_ip_refusal_takes_the_connection_back_out() -> None:
    rates, _scheduler, clock = _rates({1: {"max.connection.creation.rate": "2"}})
    log: list[tuple[str, int]] = []
    assert rates.arrive(Conn("a", log, clock), 1, "PLAINTEXT")
    assert rates.arrive(Conn("b", log, clock), 1, "PLAINTEXT")
    rates.unrecord(1, "PLAINTEXT")  # b was over its IP's connection_creation_rate
    assert rates.arrive(Conn("c", log, clock), 1, "PLAINTEXT")


def test_dynamic_changes() -> None:
    values: dict[int, dict[str, str]] = {}
    rates, _scheduler, clock = _rates(values)
    log: list[tuple[str, int]] = []
    assert rates.arrive(Conn("a", log, clock), 2, "PLAINTEXT")
    configs = AcceptRateConfigs(rates)
    assert configs.reconfigurable("max.connection.creation.rate")
    assert configs.reconfigurable("listener.name.plaintext.max.connection.creation.rate")
    assert not configs.reconfigurable("max.connections")
    with pytest.raises(ValueError, match=r"Invalid max\.connection\.creation\.rate 0"):
        configs.validate_node(2, Config(values={"max.connection.creation.rate": "0"}))
    configs.reconfigure_node(2, Config(values={"max.connection.creation.rate": "1"}))
    assert not rates.arrive(Conn("b", log, clock), 2, "PLAINTEXT")
    # Node 1 keeps no bound.
    assert all(rates.arrive(Conn("c", log, clock), 1, "PLAINTEXT") for _ in range(5))


def test_static_zero_is_taken_and_negative_refused() -> None:
    assert listener_rates({"max.connection.creation.rate": "0"}, check=False) == (0, {})
    with pytest.raises(ValueError):
        listener_rates({"max.connection.creation.rate": "-1"}, check=False)
    rates, scheduler, clock = _rates({1: {"max.connection.creation.rate": "0"}})
    log: list[tuple[str, int]] = []
    assert not rates.arrive(Conn("a", log, clock), 1, "PLAINTEXT")
    scheduler.advance(1000)  # every connection waits one window
    assert log == [("a", clock.now_ms())]
