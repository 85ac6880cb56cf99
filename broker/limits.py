"""Connection limits, as Kafka's SocketServer applies them, and the idle reaper.

- ``max.connections`` and ``max.connections.per.ip`` (with
  ``max.connections.per.ip.overrides``, ``host:count,host:count``): a connection past a
  limit is closed as soon as it is accepted, with a log line (Kafka's acceptor waits
  before accepting past ``max.connections``; asyncio cannot hold back one accept, and a
  refused connection costs the client a reconnect, not an error).
- ``connections.max.idle.ms``: a connection with no bytes in or out for that long is
  closed, as Kafka's selector closes it.
- ``connections.max.partial.request.ms`` (kafkalite's): a connection that began a frame
  and has not completed it within that time is closed, so a client dribbling a request a
  byte at a time cannot hold a connection and its buffer forever.
- ``queued.max.requests`` is applied per connection (requests read and not yet answered)
  and the write buffer's high-water mark by the connection itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

import structlog

log = structlog.get_logger("kafkalite.limits")

INT_MAX = 2**31 - 1


class ConfigLike(Protocol):
    def int(self, name: str) -> int: ...

    def text(self, name: str) -> str: ...


def parse_overrides(raw: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count`` pairs, comma separated."""
    out: dict[str, int] = {}
    for item in raw.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host:
            raise ValueError(f"bad max.connections.per.ip.overrides entry {item!r}")
        out[host.strip()] = int(count)
    return out


@dataclass(frozen=True)
class Limits:
    max_connections: int = INT_MAX
    max_per_ip: int = INT_MAX
    per_ip_overrides: dict[str, int] = field(default_factory=dict)
    max_idle_ms: int = 600000
    max_partial_request_ms: int = 30000
    queued_max_requests: int = 500
    #: Bytes of responses waiting in a connection's write buffer before it stops reading.
    write_high_water: int = 4 << 20

    @classmethod
    def from_config(cls, config: ConfigLike) -> Limits:
        return cls(
            max_connections=config.int("max.connections"),
            max_per_ip=config.int("max.connections.per.ip"),
            per_ip_overrides=parse_overrides(config.text("max.connections.per.ip.overrides")),
            max_idle_ms=config.int("connections.max.idle.ms"),
            max_partial_request_ms=config.int("connections.max.partial.request.ms"),
            queued_max_requests=max(1, config.int("queued.max.requests")),
            write_high_water=max(1, config.int("connections.max.buffered.response.bytes")),
        )

    def per_ip(self, host: str) -> int:
        return self.per_ip_overrides.get(host, self.max_per_ip)


class Tracked(Protocol):
    """What the limits need of a connection."""

    peer_host: str
    connection_id: int
    #: Loop time of the last byte read or written.
    last_active: float
    #: Loop time the frame being received began, or None when no frame is partial.
    partial_since: float | None

    def abort_idle(self, reason: str) -> None: ...


class ConnectionQuotas:
    """Counts open connections, overall and per client address."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.total = 0
        self.per_ip: Counter[str] = Counter()

    def admit(self, host: str) -> str | None:
        """Count a new connection in, or return why it is refused."""
        lim = self.limits
        if self.total >= lim.max_connections:
            return f"max.connections ({lim.max_connections}) reached"
        allowed = lim.per_ip(host)
        if self.per_ip[host] >= allowed:
            return f"max.connections.per.ip ({allowed}) reached for {host}"
        self.total += 1
        self.per_ip[host] += 1
        return None

    def release(self, host: str) -> None:
        self.total -= 1
        self.per_ip[host] -= 1
        if self.per_ip[host] <= 0:
            del self.per_ip[host]


class IdleReaper:
    """Closes idle connections and stalled partial requests; runs while the broker runs."""

    def __init__(self, limits: Limits, connections: Callable[[], Iterable[Tracked]]) -> None:
        self.limits = limits
        self.connections = connections
        self._task: asyncio.Task[None] | None = None

    @property
    def interval(self) -> float:
        shortest = min(self.limits.max_idle_ms, self.limits.max_partial_request_ms)
        return max(0.01, min(shortest / 4000, 5.0))

    def check(self, now: float) -> int:
        closed = 0
        idle = self.limits.max_idle_ms / 1000
        partial = self.limits.max_partial_request_ms / 1000
        for conn in list(self.connections()):
            if conn.partial_since is not None and now - conn.partial_since > partial:
                conn.abort_idle(f"request incomplete after "
                                f"{self.limits.max_partial_request_ms} ms")
                closed += 1
            elif now - conn.last_active > idle:
                conn.abort_idle(f"idle for more than {self.limits.max_idle_ms} ms")
                closed += 1
        return closed

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.interval)
            try:
                self.check(loop.time())
            except Exception:  # the reaper must outlive any one connection's trouble
                log.exception("limits.reaper_failed")

