"""Which security protocol each listener speaks, and per-listener property resolution.

Kafka reads a listener's settings as ``listener.name.<listener>.<property>`` first, then
the plain ``<property>``; SASL settings are also looked up per mechanism,
``listener.name.<listener>.<mechanism>.<property>``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from ..config.properties import ConfigError


class SecurityProtocol(enum.Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


#: Kafka's default ``listener.security.protocol.map``: each standard name maps to itself.
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"


def parse_protocol_map(raw: str) -> dict[str, SecurityProtocol]:
    """``NAME:PROTOCOL,...`` -> {NAME: protocol}."""
    out: dict[str, SecurityProtocol] = {}
    for part in raw.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, proto = part.partition(":")
        if not sep:
            raise ConfigError(f"listener.security.protocol.map entry {part!r} lacks NAME:PROTOCOL")
        try:
            out[name.strip().upper()] = SecurityProtocol(proto.strip().upper())
        except ValueError as e:
            raise ConfigError(f"unknown security protocol {proto!r} in "
                              "listener.security.protocol.map") from e
    return out


def protocol_for(listener: str, protocol_map: Mapping[str, SecurityProtocol]) -> SecurityProtocol:
    """The listener's protocol. A custom name missing from the map is served as PLAINTEXT
    (Kafka refuses to start instead; see docs/compatibility.md)."""
    found = protocol_map.get(listener.upper())
    if found is not None:
        return found
    try:
        return SecurityProtocol(listener.upper())
    except ValueError:
        return SecurityProtocol.PLAINTEXT


class ListenerProps:
    """A listener's view of the broker properties, with Kafka's override order."""

    def __init__(self, listener: str, values: Mapping[str, str],
                 defaults: Mapping[str, str] | None = None) -> None:
        self.listener = listener
        self.prefix = f"listener.name.{listener.lower()}."
        self.values = values
        self.defaults = defaults or {}

    def get(self, prop: str, default: str | None = None) -> str | None:
        for key in (self.prefix + prop, prop):
            if key in self.values:
                return self.values[key]
        return self.defaults.get(prop, default)

    def text(self, prop: str, default: str = "") -> str:
        v = self.get(prop)
        return default if v is None else v

    def is_set(self, prop: str) -> bool:
        return self.prefix + prop in self.values or prop in self.values

    def is_set_for_listener(self, prop: str) -> bool:
        """Set as ``listener.name.<listener>.<prop>`` (not merely broker-wide)."""
        return self.prefix + prop in self.values

    def mechanism_get(self, mechanism: str, prop: str) -> str | None:
        """A SASL property: per listener and mechanism, then per listener, then global."""
        key = f"{self.prefix}{mechanism.lower()}.{prop}"
        if key in self.values:
            return self.values[key]
        return self.get(prop)

    def mechanism_int(self, mechanism: str, prop: str, default: int) -> int:
        return _to_int(self.prefix + prop, self.mechanism_get(mechanism, prop), default)

    def int(self, prop: str, default: int) -> int:
        return _to_int(self.prefix + prop, self.get(prop), default)

    def list(self, prop: str, default: str = "") -> list[str]:
        return [s.strip() for s in self.text(prop, default).split(",") if s.strip()]


def _to_int(key: str, v: str | None, default: int) -> int:
    if v is None or v == "":
        return default
    try:
        return int(v)
    except ValueError as e:
        raise ConfigError(f"{key}: not an integer: {v!r}") from e
