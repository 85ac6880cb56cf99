"""``max.connection.creation.rate``, broker-wide and per listener
(``listener.name.<l>.max.connection.creation.rate``), as Kafka's ``ConnectionQuotas``
applies it: every accepted connection is recorded in its broker's and its listener's
rate; when either is past its bound, the listener's acceptor waits the throttle time
(capped at one quota window) before accepting the connection, and accepts the next ones
only after that. asyncio has accepted the socket already, so the connection is held
unread instead, and the connections behind it queue in order; what the client sees is
Kafka's: the connection opens and its first request is answered only after the wait.
Times are the broker clock's, so a manual clock moves through the wait.

An IP over its ``connection_creation_rate`` (``managers.IpConnectionRates``) takes its
connection back out of these rates, as Kafka un-records it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Mapping
from typing import Protocol

import structlog

from kafkalite.timekeeping.scheduler import Scheduler

from ..config.definitions import LISTENER_CONFIG
from ..config.properties import Config
from .rates import Avg, RateSensor, Window

log = structlog.get_logger("kafkalite.throttling")

NAME = "max.connection.creation.rate"
INT_MAX = 2**31 - 1
_ACCEPT = "connection-accept"


class Waiting(Protocol):
    """A connection held until its listener's acceptor may take it."""

    connection_id: int

    def accept_now(self) -> None: ...


def listener_rates(values: Mapping[str, str], check: bool = True
                   ) -> tuple[int, dict[str, int]]:
    """The broker-wide rate and each listener's (by upper-case listener name) in
    ``values``; with ``check``, a rate below 1 is refused as Kafka refuses it in a
    dynamic change (in server.properties Kafka takes 0: every connection waits)."""
    broker = int(values.get(NAME, INT_MAX))
    per_listener: dict[str, int] = {}
    for key, value in values.items():
        m = LISTENER_CONFIG.match(key)
        if m and m.group(1) == NAME:
            per_listener[key.split(".")[2].upper()] = int(value)
    for rate in (broker, *per_listener.values()):
        if rate <= 0 and (check or rate < 0):
            raise ValueError(f"Invalid {NAME} {rate}")
    return broker, per_listener


class _Acceptor:
    """One listener of one node: its rate, the connections waiting, when it is free."""

    __slots__ = ("key", "queue", "sensor")

    def __init__(self, key: tuple[int, str], sensor: RateSensor) -> None:
        self.key = key
        self.sensor = sensor
        self.queue: deque[Waiting] = deque()


Bounds = tuple[int, dict[str, int]]


class AcceptRates:
    """Every node's and listener's connection creation rate, and the acceptors they
    hold back. Each node takes its own values (``values_for(node)``: its own dynamic
    level over the cluster default), as each Kafka broker does."""

    def __init__(self, scheduler: Scheduler, window_ms: int, samples: int,
                 values_for: Callable[[int], Mapping[str, str]]) -> None:
        self.scheduler = scheduler
        self.window_ms = window_ms
        self.samples = samples
        self.values_for = values_for
        #: (broker-wide rate, rate by listener) of each node that has had a connection.
        self._bounds: dict[int, Bounds] = {}
        self._brokers: dict[int, RateSensor] = {}
        self._acceptors: dict[tuple[int, str], _Acceptor] = {}
        #: The waits, ms, by (node, listener): Kafka's connection-accept-throttle-time
        #: (the mean of those in the quota's windows), on /metrics.
        self.throttle_times: dict[tuple[int, str], Avg] = {}
        scheduler.handle(_ACCEPT, self._release)

    def bounds(self, node: int) -> Bounds:
        b = self._bounds.get(node)
        if b is None:
            b = self._bounds[node] = listener_rates(self.values_for(node), check=False)
        return b

    def configure_node(self, node: int, values: Mapping[str, str]) -> None:
        """Node ``node``'s new bounds (a dynamic change): the rates recorded so far stay."""
        broker, per_listener = self._bounds[node] = listener_rates(values)
        sensor = self._brokers.get(node)
        if sensor is not None:
            sensor.window = self._window(broker)
        for (n, listener), acc in self._acceptors.items():
            if n == node:
                acc.sensor.window = self._window(per_listener.get(listener, INT_MAX))

    def configure_all(self) -> None:
        """The first node's level or the cluster default changed: every node reads its
        values again."""
        for node in list(self._bounds):
            self.configure_node(node, self.values_for(node))

    def _window(self, bound: int) -> Window:
        return Window(self.window_ms, self.samples, bound)

    def _broker(self, node: int) -> RateSensor:
        sensor = self._brokers.get(node)
        if sensor is None:
            sensor = self._brokers[node] = RateSensor(self._window(self.bounds(node)[0]),
                                                      self.window_ms, self.scheduler.now())
        return sensor

    def _acceptor(self, node: int, listener: str) -> _Acceptor:
        key = (node, listener.upper())
        acc = self._acceptors.get(key)
        if acc is None:
            rate = self.bounds(node)[1].get(key[1], INT_MAX)
            acc = self._acceptors[key] = _Acceptor(key, RateSensor(
                self._window(rate), self.window_ms, self.scheduler.now()))
        return acc

    def arrive(self, conn: Waiting, node: int, listener: str) -> bool:
        """A connection accepted by ``node``'s ``listener``: True to take it now, False
        when it waits (``conn.accept_now()`` is called when its turn comes)."""
        acc = self._acceptor(node, listener)
        if acc.queue:
            acc.queue.append(conn)  # the acceptor is still waiting for an earlier one
            return False
        ms = self._record(acc, self.scheduler.now())
        if ms <= 0:
            return True
        acc.queue.append(conn)
        self._wait(acc, ms)
        return False

    def unrecord(self, node: int, listener: str) -> None:
        """Take a connection refused for its IP's rate back out (Kafka's
        ``updateListenerMetrics``)."""
        now = self.scheduler.now()
        self._broker(node).record(-1.0, now, check=False)
        self._acceptor(node, listener).sensor.record(-1.0, now, check=False)

    def _record(self, acc: _Acceptor, now: int) -> int:
        node = acc.key[0]
        ms = max(self._broker(node).record(1.0, now), acc.sensor.record(1.0, now))
        if ms > 0:
            avg = self.throttle_times.get(acc.key)
            if avg is None:
                avg = self.throttle_times[acc.key] = Avg()
            avg.record(self._window(INT_MAX), float(ms), now)
            log.info("connection.accept_throttled", node=node, listener=acc.key[1],
                     throttle_ms=ms)
        return ms

    def _wait(self, acc: _Acceptor, ms: int) -> None:
        self.scheduler.timers.schedule((_ACCEPT, *acc.key), self.scheduler.now() + ms)
        self.scheduler.rearm()

    def _release(self, key: tuple[Hashable, ...], _deadline: int, now: int) -> None:
        acc = self._acceptors.get((int(key[1]), str(key[2])))  # type: ignore[call-overload]
        if acc is None or not acc.queue:
            return
        # The one the acceptor waited for, then those behind it while the rates allow.
        acc.queue.popleft().accept_now()
        while acc.queue:
            ms = self._record(acc, now)
            if ms > 0:
                self._wait(acc, ms)
                return
            acc.queue.popleft().accept_now()


class AcceptRateConfigs:
    """The rates as dynamic broker configs change them (Kafka's SocketServer and
    ListenerConnectionQuota reconfigure): new bounds for the next connections, each
    node's from its own level over the cluster default."""

    def __init__(self, rates: AcceptRates) -> None:
        self.rates = rates

    def reconfigurable(self, name: str) -> bool:
        m = LISTENER_CONFIG.match(name)
        return name == NAME or bool(m and m.group(1) == NAME)

    def validate_reconfiguration(self, config: Config) -> None:
        listener_rates(config.values)

    def reconfigure(self, config: Config) -> None:
        self.rates.configure_all()

    def validate_node(self, node_id: int, config: Config) -> None:
        listener_rates(config.values)

    def reconfigure_node(self, node_id: int, config: Config) -> None:
        self.rates.configure_node(node_id, config.values)
