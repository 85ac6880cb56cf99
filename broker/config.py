"""Broker configuration under Kafka's property names.

Sources, later ones winning: built-in defaults, a ``server.properties`` file, environment
variables (``KAFKALITE_LOG_DIRS`` sets ``log.dirs``), ``--set key=value`` and dedicated CLI
flags. Where kafkalite's default differs from Kafka's it says so in docs/compatibility.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ENV_PREFIX = "KAFKALITE_"

# name -> (default, type). Types: int, bool, str, float, list (comma separated).
DEFAULTS: dict[str, tuple[str, type]] = {
    "node.id": ("1", int),
    "listeners": ("PLAINTEXT://127.0.0.1:9092", str),
    "advertised.listeners": ("", str),
    "log.dirs": ("./kafkalite-data", str),
    "socket.request.max.bytes": ("104857600", int),
    "max.connections": ("2147483647", int),
    "max.connections.per.ip": ("2147483647", int),
    "max.connections.per.ip.overrides": ("", str),
    "connections.max.idle.ms": ("600000", int),
    "queued.max.requests": ("500", int),
    # kafkalite's own: a frame begun and not completed within this is closed; a
    # connection stops reading while this many response bytes wait to be sent.
    "connections.max.partial.request.ms": ("30000", int),
    "connections.max.buffered.response.bytes": ("4194304", int),
    "max.request.partition.size.limit": ("2000", int),
    "num.partitions": ("1", int),
    "default.replication.factor": ("1", int),
    "auto.create.topics.enable": ("true", bool),
    "delete.topic.enable": ("true", bool),
    "message.max.bytes": ("1048588", int),
    "log.segment.bytes": ("1073741824", int),
    "log.roll.ms": ("604800000", int),
    "log.retention.ms": ("604800000", int),
    "log.retention.bytes": ("-1", int),
    "log.retention.check.interval.ms": ("300000", int),
    "log.index.interval.bytes": ("4096", int),
    "log.index.size.max.bytes": ("10485760", int),
    "log.cleanup.policy": ("delete", str),
    "log.cleaner.delete.retention.ms": ("86400000", int),
    "log.cleaner.min.cleanable.ratio": ("0.5", float),
    "log.cleaner.backoff.ms": ("15000", int),
    "log.message.timestamp.type": ("CreateTime", str),
    "log.flush.interval.messages": ("9223372036854775807", int),
    "log.flush.interval.ms": ("9223372036854775807", int),
    "log.durable": ("false", bool),
    "compression.type": ("producer", str),
    "min.insync.replicas": ("1", int),
    "group.min.session.timeout.ms": ("6000", int),
    "group.max.session.timeout.ms": ("1800000", int),
    "group.max.size": ("2147483647", int),
    "group.initial.rebalance.delay.ms": ("200", int),
    "offsets.topic.num.partitions": ("8", int),
    "offsets.topic.replication.factor": ("1", int),
    "offsets.topic.segment.bytes": ("104857600", int),
    "offsets.retention.minutes": ("10080", int),
    "offsets.retention.check.interval.ms": ("600000", int),
    "offsets.commit.timeout.ms": ("5000", int),
    "offset.metadata.max.bytes": ("4096", int),
    "transactional.id.expiration.ms": ("604800000", int),
    "producer.id.expiration.ms": ("86400000", int),
    "authorizer.class.name": ("", str),
    "super.users": ("", str),
    "allow.everyone.if.no.acl.found": ("false", bool),
    "listener.security.protocol.map": (
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", str),
    "connections.max.reauth.ms": ("0", int),
    "sasl.server.max.receive.size": ("524288", int),
    "ssl.client.auth": ("none", str),
    "ssl.enabled.protocols": ("TLSv1.2,TLSv1.3", str),
    "ssl.principal.mapping.rules": ("DEFAULT", str),
}


class ConfigError(ValueError):
    pass


def _parse_bool(raw: str) -> bool:
    low = raw.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise ConfigError(f"not a boolean: {raw!r}")


def load_properties(path: Path) -> dict[str, str]:
    """Read a Java-style ``.properties`` file (``key=value`` or ``key: value``, ``#`` comments)."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        s = line.strip()
        if not s or s[0] in "#!":
            continue
        for sep in ("=", ":"):
            if sep in s:
                k, v = s.split(sep, 1)
                out[k.strip()] = v.strip()
                break
    return out


def env_overrides(environ: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in environ.items():
        if k.startswith(ENV_PREFIX) and len(k) > len(ENV_PREFIX):
            out[k[len(ENV_PREFIX) :].lower().replace("_", ".")] = v
    return out


@dataclass
class Config:
    """Resolved broker properties; unknown keys are kept (and shown by DescribeConfigs)."""

    values: dict[str, str] = field(default_factory=dict)
    #: Which source set each explicitly given key ("file", "env", "cli").
    sources: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        file: Path | None = None,
        environ: Mapping[str, str] | None = None,
        overrides: Mapping[str, str] | None = None,
    ) -> Config:
        cfg = cls()
        if file is not None:
            cfg.update(load_properties(file), "file")
        cfg.update(env_overrides(os.environ if environ is None else environ), "env")
        if overrides:
            cfg.update(overrides, "cli")
        cfg.validate()
        return cfg

    def update(self, values: Mapping[str, str], source: str = "cli") -> None:
        for k, v in values.items():
            self.values[k] = str(v)
            self.sources[k] = source

    def validate(self) -> None:
        for k in self.values:
            if k in DEFAULTS:
                self.get(k)

    def raw(self, key: str) -> str:
        if key in self.values:
            return self.values[key]
        if key in DEFAULTS:
            return DEFAULTS[key][0]
        raise KeyError(key)

    def is_default(self, key: str) -> bool:
        return key not in self.values

    def get(self, key: str) -> object:
        raw = self.raw(key)
        typ = DEFAULTS[key][1] if key in DEFAULTS else str
        try:
            if typ is bool:
                return _parse_bool(raw)
            if typ is int:
                return int(raw)
            if typ is float:
                return float(raw)
        except ValueError as e:
            raise ConfigError(f"{key}: {e}") from e
        return raw

    def int(self, key: str) -> int:
        v = self.get(key)
        assert isinstance(v, int) and not isinstance(v, bool)
        return v

    def bool(self, key: str) -> bool:
        v = self.get(key)
        assert isinstance(v, bool)
        return v

    def float(self, key: str) -> float:
        v = self.get(key)
        assert isinstance(v, float)
        return v

    def text(self, key: str) -> str:
        return self.raw(key)

    @property
    def data_dir(self) -> Path:
        return Path(self.raw("log.dirs").split(",")[0])

    def all_items(self) -> dict[str, str]:
        out = {k: v[0] for k, v in DEFAULTS.items()}
        out.update(self.values)
        return out


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int


def parse_listeners(raw: str) -> list[Listener]:
    """``PLAINTEXT://127.0.0.1:9092,OTHER://host:port`` -> listeners."""
    out: list[Listener] = []
    for part in raw.split(","):
        part = part.strip()
        if not part:
            continue
        if "://" not in part:
            raise ConfigError(f"listener {part!r} lacks a NAME:// prefix")
        name, rest = part.split("://", 1)
        host, _, port = rest.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        try:
            p = int(port)
        except ValueError as e:
            raise ConfigError(f"listener {part!r} has no port") from e
        out.append(Listener(name.upper(), host or "0.0.0.0", p))
    if not out:
        raise ConfigError("no listeners configured")
    return out
