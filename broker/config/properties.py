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

from kafkalite.protocol.releases import release
from kafkalite.storage.topic_config import (
    BROKER_SYNONYM_GROUPS,
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
)

ENV_PREFIX = "KAFKALITE_"

# name -> (default, type). Types: int, bool, str, float, list (comma separated). A default of
# None: no value unless set (Kafka's null defaults).
DEFAULTS: dict[str, tuple[str | None, type]] = {
    "node.id": ("1", int),
    "listeners": ("PLAINTEXT://127.0.0.1:9092", str),
    "advertised.listeners": ("", str),
    "log.dirs": ("./kafkalite-data", str),
    "socket.request.max.bytes": ("104857600", int),
    "max.connections": ("2147483647", int),
    "max.connection.creation.rate": ("2147483647", int),
    "max.connections.per.ip": ("2147483647", int),
    "max.connections.per.ip.overrides": ("", str),
    "connections.max.idle.ms": ("600000", int),
    "queued.max.requests": ("500", int),
    # Client quotas' rate windows (broker/quotas/managers.py).
    "quota.window.num": ("11", int),
    "quota.window.size.seconds": ("1", int),
    "controller.quota.window.num": ("11", int),
    "controller.quota.window.size.seconds": ("1", int),
    # kafkalite's own: a frame begun and not completed within this is closed; a
    # connection stops reading while this many response bytes wait to be sent.
    "connections.max.partial.request.ms": ("30000", int),
    "connections.max.buffered.response.bytes": ("4194304", int),
    # kafkalite's own: after answering, poll the connections this long before sleeping
    # (broker/busy_poll.py); 0: off.
    "socket.busy.poll.us": ("100", int),
    "max.request.partition.size.limit": ("2000", int),
    # The largest PushTelemetry payload taken (KIP-714), before and after decompression.
    "telemetry.max.bytes": ("1048576", int),
    # kafkalite's own: the Kafka release whose APIs, versions and feature levels
    # ApiVersions advertises (protocol/releases.py).
    "kafkalite.as.version": ("4.4", str),
    # kafkalite's own: brokers run in this process, node ids node.id and up
    # (broker/cluster/nodes.py).
    "kafkalite.nodes": ("1", int),
    "num.partitions": ("1", int),
    "default.replication.factor": ("1", int),
    "auto.create.topics.enable": ("true", bool),
    "delete.topic.enable": ("true", bool),
    "message.max.bytes": ("1048588", int),
    "log.segment.bytes": ("1073741824", int),
    # Kafka's unit synonyms: the first one set wins (log.retention.ms, then .minutes, then
    # .hours); with none set, the hours default applies.
    "log.roll.ms": (None, int),
    "log.roll.hours": ("168", int),
    "log.roll.jitter.ms": (None, int),
    "log.roll.jitter.hours": ("0", int),
    "log.retention.ms": (None, int),
    "log.retention.minutes": (None, int),
    "log.retention.hours": ("168", int),
    "log.retention.bytes": ("-1", int),
    "log.retention.check.interval.ms": ("300000", int),
    "log.index.interval.bytes": ("4096", int),
    "log.index.size.max.bytes": ("10485760", int),
    "log.segment.delete.delay.ms": ("60000", int),
    "log.preallocate": ("false", bool),
    "log.cleanup.policy": ("delete", str),
    "log.cleaner.delete.retention.ms": ("86400000", int),
    "log.cleaner.min.cleanable.ratio": ("0.5", float),
    "log.cleaner.min.compaction.lag.ms": ("0", int),
    "log.cleaner.max.compaction.lag.ms": ("9223372036854775807", int),
    "log.cleaner.backoff.ms": ("15000", int),
    "log.message.timestamp.type": ("CreateTime", str),
    "log.message.timestamp.before.max.ms": ("9223372036854775807", int),
    "log.message.timestamp.after.max.ms": ("3600000", int),
    "log.message.timestamp.difference.max.ms": ("9223372036854775807", int),
    "log.message.format.version": ("3.0-IV1", str),
    "log.message.downconversion.enable": ("true", bool),
    "log.flush.interval.messages": ("9223372036854775807", int),
    "log.flush.interval.ms": (None, int),
    "log.flush.scheduler.interval.ms": ("9223372036854775807", int),
    "log.durable": ("false", bool),
    "log.local.retention.ms": ("-2", int),
    "log.local.retention.bytes": ("-2", int),
    "log.remote.copy.lag.ms": ("0", int),
    "log.remote.copy.lag.bytes": ("-1", int),
    "max.decompressed.message.bytes": ("2147483639", int),
    "compression.type": ("producer", str),
    "compression.gzip.level": ("-1", int),
    "compression.lz4.level": ("9", int),
    "compression.zstd.level": ("3", int),
    "min.insync.replicas": ("1", int),
    "unclean.leader.election.enable": ("false", bool),
    "replica.lag.time.max.ms": ("30000", int),
    # KIP-392: unset, every consumer reads from the leader (``cluster/selector.py``).
    "replica.selector.class": (None, str),
    "broker.session.timeout.ms": ("9000", int),
    "auto.leader.rebalance.enable": ("true", bool),
    "leader.imbalance.check.interval.seconds": ("300", int),
    "max.incremental.fetch.session.cache.slots": ("1000", int),
    "group.min.session.timeout.ms": ("6000", int),
    "group.max.session.timeout.ms": ("1800000", int),
    "group.max.size": ("2147483647", int),
    "group.initial.rebalance.delay.ms": ("200", int),
    # kafkalite's default, as the classic one's (Kafka: 3000; docs/compatibility.md).
    "group.streams.initial.rebalance.delay.ms": ("200", int),
    # KIP-848 consumer groups (Kafka 4.x names and defaults).
    "group.coordinator.rebalance.protocols": ("classic,consumer", str),
    "group.consumer.session.timeout.ms": ("45000", int),
    "group.consumer.min.session.timeout.ms": ("45000", int),
    "group.consumer.max.session.timeout.ms": ("60000", int),
    "group.consumer.heartbeat.interval.ms": ("5000", int),
    "group.consumer.min.heartbeat.interval.ms": ("5000", int),
    "group.consumer.max.heartbeat.interval.ms": ("15000", int),
    "group.consumer.max.size": ("2147483647", int),
    "group.consumer.assignors": (
        "org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
        "org.apache.kafka.coordinator.group.assignor.RangeAssignor", str),
    "group.consumer.migration.policy": ("bidirectional", str),
    # kafkalite's own: Kafka's fixed 10 s between two resolutions of a group's regexes.
    "group.consumer.regex.refresh.interval.ms": ("10000", int),
    "group.consumer.assignment.interval.ms": ("1000", int),
    "group.consumer.min.assignment.interval.ms": ("0", int),
    "group.consumer.max.assignment.interval.ms": ("15000", int),
    # KIP-932 share groups (Kafka 4.4 names and defaults); group configs are bounded by
    # the min/max ones.
    "group.share.session.timeout.ms": ("45000", int),
    "group.share.min.session.timeout.ms": ("45000", int),
    "group.share.max.session.timeout.ms": ("60000", int),
    "group.share.heartbeat.interval.ms": ("5000", int),
    "group.share.min.heartbeat.interval.ms": ("5000", int),
    "group.share.max.heartbeat.interval.ms": ("15000", int),
    "group.share.max.size": ("200", int),
    "group.share.assignment.interval.ms": ("1000", int),
    "group.share.min.assignment.interval.ms": ("0", int),
    "group.share.max.assignment.interval.ms": ("15000", int),
    "group.share.record.lock.duration.ms": ("30000", int),
    "group.share.min.record.lock.duration.ms": ("15000", int),
    "group.share.max.record.lock.duration.ms": ("60000", int),
    "group.share.delivery.count.limit": ("5", int),
    "group.share.min.delivery.count.limit": ("2", int),
    "group.share.max.delivery.count.limit": ("10", int),
    "group.share.partition.max.record.locks": ("2000", int),
    "group.share.min.partition.max.record.locks": ("100", int),
    "group.share.max.partition.max.record.locks": ("4000", int),
    "group.share.max.share.sessions": ("2000", int),
    "share.coordinator.state.topic.num.partitions": ("50", int),
    "share.coordinator.state.topic.segment.bytes": ("104857600", int),
    "share.coordinator.state.topic.replication.factor": ("3", int),
    "share.coordinator.snapshot.update.records.per.snapshot": ("500", int),
    "offsets.topic.num.partitions": ("8", int),
    # Kafka's 3; the internal topics take at most the nodes there are (compose.py).
    "offsets.topic.replication.factor": ("3", int),
    "offsets.topic.segment.bytes": ("104857600", int),
    "offsets.retention.minutes": ("10080", int),
    "offsets.retention.check.interval.ms": ("600000", int),
    "offsets.commit.timeout.ms": ("5000", int),
    "offset.metadata.max.bytes": ("4096", int),
    "transactional.id.expiration.ms": ("604800000", int),
    "producer.id.expiration.ms": ("86400000", int),
    "producer.id.expiration.check.interval.ms": ("600000", int),
    "transaction.state.log.num.partitions": ("50", int),
    "transaction.state.log.replication.factor": ("3", int),
    "transaction.state.log.segment.bytes": ("104857600", int),
    "transaction.max.timeout.ms": ("900000", int),
    "transaction.partition.verification.enable": ("true", bool),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": ("10000", int),
    "transaction.remove.expired.transaction.cleanup.interval.ms": ("3600000", int),
    "authorizer.class.name": ("", str),
    "super.users": ("", str),
    "allow.everyone.if.no.acl.found": ("false", bool),
    "listener.security.protocol.map": (
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", str),
    "connections.max.reauth.ms": ("0", int),
    # Delegation tokens (broker/security/delegation_tokens.py); no secret key: disabled.
    "delegation.token.secret.key": (None, str),
    "delegation.token.max.lifetime.ms": ("604800000", int),
    "delegation.token.expiry.time.ms": ("86400000", int),
    "delegation.token.expiry.check.interval.ms": ("3600000", int),
    "sasl.server.max.receive.size": ("524288", int),
    "ssl.client.auth": ("none", str),
    "ssl.enabled.protocols": ("TLSv1.2,TLSv1.3", str),
    "ssl.principal.mapping.rules": ("DEFAULT", str),
    # kafkalite's own: HOST:PORT of the admin HTTP listener (JSON API, /metrics, the web
    # console); empty: off. ":PORT" listens on loopback.
    "admin.listener": ("", str),
    "admin.principal": ("User:ANONYMOUS", str),
    # kafkalite's own: HOST:PORT of the Confluent-compatible Schema Registry (REST API over
    # the _schemas topic); empty: off.
    "schema.registry.listener": ("", str),
}


#: The defaults that have a value, as strings (DescribeConfigs' DEFAULT_CONFIG level).
DEFAULT_VALUES: dict[str, str] = {k: v for k, (v, _t) in DEFAULTS.items() if v is not None}


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
    """Resolved broker properties; unknown keys are kept (and shown by DescribeConfigs).

    Three layers of explicitly set values, as Kafka's KIP-226 levels: the static ones
    (file, environment, CLI), the cluster-wide dynamic defaults and this broker's dynamic
    values. ``values`` is their merge (the more specific winning, and a key set at a
    higher level hiding its unit synonyms below), which every reader sees.
    """

    values: dict[str, str] = field(default_factory=dict)
    #: Which source set each statically given key ("file", "env", "cli").
    sources: dict[str, str] = field(default_factory=dict)
    static: dict[str, str] = field(default_factory=dict)
    dynamic_default: dict[str, str] = field(default_factory=dict)
    dynamic_broker: dict[str, str] = field(default_factory=dict)

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
        """Set static values (later sources win)."""
        for k, v in values.items():
            self.static[k] = str(v)
            self.sources[k] = source
        self._merge()

    def set_dynamic(self, *, default: Mapping[str, str] | None = None,
                    broker: Mapping[str, str] | None = None) -> None:
        """Replace the cluster-default and/or per-broker dynamic layer."""
        if default is not None:
            self.dynamic_default = dict(default)
        if broker is not None:
            self.dynamic_broker = dict(broker)
        self._merge()

    def for_node(self, own: Mapping[str, str], dynamic_broker: Mapping[str, str]) -> Config:
        """Another node's view of these properties (several nodes in one process): its
        own static values (``per_node.node_values``) over these, the same cluster-wide
        dynamic defaults, and its own dynamic level."""
        view = Config(sources=dict(self.sources), static={**self.static, **own},
                      dynamic_default=dict(self.dynamic_default),
                      dynamic_broker=dict(dynamic_broker))
        view._merge()
        return view

    def _merge(self) -> None:
        merged = dict(self.static)
        for layer in (self.dynamic_default, self.dynamic_broker):
            for k, v in layer.items():
                # A dynamic log.retention.ms hides a static log.retention.hours, as in
                # Kafka's DynamicBrokerConfig.overrideProps.
                for syn in BROKER_SYNONYM_GROUPS.get(k, ()):
                    merged.pop(syn, None)
                merged[k] = v
        self.values = merged

    def levels(self) -> list[tuple[int, Mapping[str, str]]]:
        """(ConfigSource code, values) from the most specific level to the defaults."""
        return [(DYNAMIC_BROKER_CONFIG, self.dynamic_broker),
                (DYNAMIC_DEFAULT_BROKER_CONFIG, self.dynamic_default),
                (STATIC_BROKER_CONFIG, self.static),
                (DEFAULT_CONFIG, DEFAULT_VALUES)]

    def validate(self) -> None:
        for k in self.values:
            if k in DEFAULTS:
                self.get(k)
        validate_group_coordinator(self)
        for name in INTERNAL_REPLICATION_FACTORS:
            if self.int(name) < 1:
                raise ConfigError(f"Invalid value {self.int(name)} for configuration {name}: "
                                  "Value must be at least 1")
        validate_replica_selector(self)
        if self.int("kafkalite.nodes") < 1:
            raise ConfigError(f"kafkalite.nodes: must be at least 1, got "
                              f"{self.int('kafkalite.nodes')}")
        try:
            release(self.text("kafkalite.as.version"))
        except ValueError as e:
            raise ConfigError(f"kafkalite.as.version: {e}") from e

    def raw(self, key: str) -> str:
        found = self.raw_or_none(key)
        if found is None:
            raise KeyError(key)
        return found

    def raw_or_none(self, key: str) -> str | None:
        if key in self.values:
            return self.values[key]
        if key in DEFAULTS:
            return DEFAULTS[key][0]
        return None

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

    def all_items(self) -> dict[str, str | None]:
        """Every known property (None: Kafka's null default) and every one set."""
        out: dict[str, str | None] = {k: v[0] for k, v in DEFAULTS.items()}
        out.update(self.values)
        return out


#: group.consumer.assignors: Kafka's class names, or kafkalite's short names.
ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}
#: Kafka's list. ``consumer`` turns KIP-848 groups on; share groups follow the
#: share.version feature, as in Kafka 4.4, and streams groups are served either way.
REBALANCE_PROTOCOLS = ("classic", "consumer", "share", "streams")
#: The internal topics' replication factors (Kafka's ``atLeast(1)``).
INTERNAL_REPLICATION_FACTORS = ("offsets.topic.replication.factor",
                                "transaction.state.log.replication.factor",
                                "share.coordinator.state.topic.replication.factor")
MIGRATION_POLICIES = ("disabled", "downgrade", "upgrade", "bidirectional")


#: The ``replica.selector.class`` values served (Kafka's two selectors, KIP-392).
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


def validate_replica_selector(config: Config) -> None:
    name = (config.raw_or_none("replica.selector.class") or "").strip()
    if name and name not in (LEADER_SELECTOR, RACK_AWARE_SELECTOR):
        raise ConfigError(f"replica.selector.class: unknown class {name!r} (known: "
                          f"{LEADER_SELECTOR}, {RACK_AWARE_SELECTOR})")


def _names(raw: str) -> list[str]:
    return [p.strip() for p in raw.split(",") if p.strip()]


def consumer_assignors(config: Config) -> tuple[str, ...]:
    """The server assignors' names, the default first."""
    out = []
    for name in _names(config.text("group.consumer.assignors")):
        short = ASSIGNOR_CLASSES.get(name, name)
        if short not in ASSIGNOR_CLASSES.values():
            raise ConfigError(f"group.consumer.assignors: unknown assignor {name!r} "
                              f"(kafkalite has {', '.join(ASSIGNOR_CLASSES)})")
        out.append(short)
    if not out:
        raise ConfigError("group.consumer.assignors must list at least one assignor")
    return tuple(out)


def rebalance_protocols(config: Config) -> frozenset[str]:
    protocols = {p.lower() for p in _names(config.text("group.coordinator.rebalance.protocols"))}
    for p in protocols:
        if p not in REBALANCE_PROTOCOLS:
            raise ConfigError(f"Invalid value {p} for configuration "
                              "group.coordinator.rebalance.protocols: String must be one of: "
                              f"{', '.join(REBALANCE_PROTOCOLS)}")
    if "classic" not in protocols:
        raise ConfigError("group.coordinator.rebalance.protocols: Disabling the 'classic' "
                          "protocol is not supported.")
    return frozenset(protocols)


def validate_group_coordinator(config: Config) -> None:
    """GroupCoordinatorConfig's checks of the consumer group settings, with its messages."""
    g = config.int
    for name in ("group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms",
                 "group.consumer.max.session.timeout.ms",
                 "group.consumer.heartbeat.interval.ms",
                 "group.consumer.min.heartbeat.interval.ms",
                 "group.consumer.max.heartbeat.interval.ms", "group.consumer.max.size"):
        if g(name) < 1:
            raise ConfigError(f"Invalid value {g(name)} for configuration {name}: "
                              "Value must be at least 1")
    hb, hb_min, hb_max = (g("group.consumer.heartbeat.interval.ms"),
                          g("group.consumer.min.heartbeat.interval.ms"),
                          g("group.consumer.max.heartbeat.interval.ms"))
    st, st_min, st_max = (g("group.consumer.session.timeout.ms"),
                          g("group.consumer.min.session.timeout.ms"),
                          g("group.consumer.max.session.timeout.ms"))
    checks = [
        (hb_max >= hb_min, "group.consumer.max.heartbeat.interval.ms must be greater than or "
                           "equal to group.consumer.min.heartbeat.interval.ms"),
        (hb >= hb_min, "group.consumer.heartbeat.interval.ms must be greater than or equal "
                       "to group.consumer.min.heartbeat.interval.ms"),
        (hb <= hb_max, "group.consumer.heartbeat.interval.ms must be less than or equal to "
                       "group.consumer.max.heartbeat.interval.ms"),
        (st_max >= st_min, "group.consumer.max.session.timeout.ms must be greater than or "
                           "equal to group.consumer.min.session.timeout.ms"),
        (st >= st_min, "group.consumer.session.timeout.ms must be greater than or equal to "
                       "group.consumer.min.session.timeout.ms"),
        (st <= st_max, "group.consumer.session.timeout.ms must be less than or equal to "
                       "group.consumer.max.session.timeout.ms"),
        (hb < st, "group.consumer.heartbeat.interval.ms must be less than "
                  "group.consumer.session.timeout.ms"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
    if g("group.consumer.regex.refresh.interval.ms") < 0:
        raise ConfigError("group.consumer.regex.refresh.interval.ms must not be negative")
    policy = config.text("group.consumer.migration.policy").strip().lower()
    if policy not in MIGRATION_POLICIES:
        raise ConfigError(f"Invalid value {policy} for configuration "
                          "group.consumer.migration.policy: String must be one of (case "
                          f"insensitive): {', '.join(p.upper() for p in MIGRATION_POLICIES)}")
    consumer_assignors(config)
    rebalance_protocols(config)
    validate_share_groups(config)


#: (setting, its min, its max, Kafka's least allowed value): the bounded group settings.
_BOUNDED = (
    ("group.share.session.timeout.ms", "group.share.min.session.timeout.ms",
     "group.share.max.session.timeout.ms", 1),
    ("group.share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms",
     "group.share.max.heartbeat.interval.ms", 1),
    ("group.share.assignment.interval.ms", "group.share.min.assignment.interval.ms",
     "group.share.max.assignment.interval.ms", 0),
    ("group.consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms",
     "group.consumer.max.assignment.interval.ms", 0),
    ("group.share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms",
     "group.share.max.record.lock.duration.ms", 1000),
    ("group.share.delivery.count.limit", "group.share.min.delivery.count.limit",
     "group.share.max.delivery.count.limit", 2),
    ("group.share.partition.max.record.locks", "group.share.min.partition.max.record.locks",
     "group.share.max.partition.max.record.locks", 100),
)


def validate_share_groups(config: Config) -> None:
    """GroupCoordinatorConfig's and ShareGroupConfig's checks of the share group settings
    (and the consumer assignment interval), with their messages."""
    g = config.int
    for value, lo, hi, least in _BOUNDED:
        for name in (value, lo, hi):
            if g(name) < least:
                raise ConfigError(f"Invalid value {g(name)} for configuration {name}: "
                                  f"Value must be at least {least}")
        if g(hi) < g(lo):
            raise ConfigError(f"{hi} must be greater than or equal to {lo}")
        if g(value) < g(lo):
            raise ConfigError(f"{value} must be greater than or equal to {lo}")
        if g(value) > g(hi):
            raise ConfigError(f"{value} must be less than or equal to {hi}")
    if g("group.share.max.size") < 1:
        raise ConfigError(f"Invalid value {g('group.share.max.size')} for configuration "
                          "group.share.max.size: Value must be at least 1")
    if g("group.share.heartbeat.interval.ms") >= g("group.share.session.timeout.ms"):
        raise ConfigError("group.share.heartbeat.interval.ms must be less than "
                          "group.share.session.timeout.ms")


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
