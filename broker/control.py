"""Test control and the live view, attached to a broker: fault rules, the clock control,
coordinator scenarios, metrics and the admin HTTP listener (``admin.listener``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from .clock_control import ClockControl
from .faults import FaultRules
from .metrics import BrokerMetrics

log = structlog.get_logger("kafkalite.control")


@dataclass(frozen=True)
class HostPort:
    host: str
    port: int


def parse_admin_listener(value: str) -> HostPort | None:
    """``127.0.0.1:8080``, ``:8080`` (loopback), ``http://[::1]:0``; empty: off."""
    value = value.strip()
    if not value:
        return None
    if value.startswith("http://"):
        value = value[len("http://"):]
    value = value.rstrip("/")
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"admin.listener must be HOST:PORT, got {value!r}")
    host = host.strip("[]") or "127.0.0.1"
    return HostPort(host, int(port))


def attach(broker: Any, clock: Any, manual: bool) -> None:
    """Give ``broker`` its ``faults``, ``metrics`` and ``clock_control``."""
    broker.clock_control = ClockControl(clock, manual)
    broker.faults = FaultRules(clock)
    broker.metrics = BrokerMetrics()
    broker.faults.on_fire = broker.metrics.fault_fired
    from .admin_http.views import BrokerView

    broker.metrics.groups = BrokerView(broker).group_rows


async def start_admin(broker: Any, where: HostPort) -> Any:
    from .admin_http import AdminServer

    server = AdminServer(broker)
    await server.start(where.host, where.port)
    broker.admin = server
    log.info("admin.listening", url=server.url)
    return server
