"""The admin HTTP listener's address (``admin.listener``), parsed without importing the
HTTP framework: a broker with the listener off never loads it."""

from __future__ import annotations

from dataclasses import dataclass


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
