"""Topic-level configs: Kafka's names, defaults and the broker property each falls back to.

A topic's effective value is its own override if set, else the broker property (the
"synonym"), else Kafka's default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class TopicConfigDef:
    name: str
    default: str
    type: str  # Kafka's ConfigType names: STRING, INT, LONG, BOOLEAN, DOUBLE, LIST, CLASS
    broker_synonym: str | None = None
    sensitive: bool = False


_DEFS = [
    TopicConfigDef("cleanup.policy", "delete", "LIST", "log.cleanup.policy"),
    TopicConfigDef("compression.type", "producer", "STRING", "compression.type"),
    TopicConfigDef("delete.retention.ms", "86400000", "LONG", "log.cleaner.delete.retention.ms"),
    TopicConfigDef("file.delete.delay.ms", "60000", "LONG", "log.segment.delete.delay.ms"),
    TopicConfigDef("flush.messages", "9223372036854775807", "LONG", "log.flush.interval.messages"),
    TopicConfigDef("flush.ms", "9223372036854775807", "LONG", "log.flush.interval.ms"),
    TopicConfigDef("index.interval.bytes", "4096", "INT", "log.index.interval.bytes"),
    TopicConfigDef("max.compaction.lag.ms", "9223372036854775807", "LONG",
                   "log.cleaner.max.compaction.lag.ms"),
    TopicConfigDef("max.message.bytes", "1048588", "INT", "message.max.bytes"),
    TopicConfigDef("message.timestamp.type", "CreateTime", "STRING", "log.message.timestamp.type"),
    TopicConfigDef("min.cleanable.dirty.ratio", "0.5", "DOUBLE", "log.cleaner.min.cleanable.ratio"),
    TopicConfigDef("min.compaction.lag.ms", "0", "LONG", "log.cleaner.min.compaction.lag.ms"),
    TopicConfigDef("min.insync.replicas", "1", "INT", "min.insync.replicas"),
    TopicConfigDef("preallocate", "false", "BOOLEAN", "log.preallocate"),
    TopicConfigDef("retention.bytes", "-1", "LONG", "log.retention.bytes"),
    TopicConfigDef("retention.ms", "604800000", "LONG", "log.retention.ms"),
    TopicConfigDef("segment.bytes", "1073741824", "INT", "log.segment.bytes"),
    TopicConfigDef("segment.index.bytes", "10485760", "INT", "log.index.size.max.bytes"),
    TopicConfigDef("segment.jitter.ms", "0", "LONG", "log.roll.jitter.ms"),
    TopicConfigDef("segment.ms", "604800000", "LONG", "log.roll.ms"),
    TopicConfigDef("unclean.leader.election.enable", "false", "BOOLEAN",
                   "unclean.leader.election.enable"),
    TopicConfigDef("message.downconversion.enable", "true", "BOOLEAN",
                   "log.message.downconversion.enable"),
]

TOPIC_CONFIGS: dict[str, TopicConfigDef] = {d.name: d for d in _DEFS}


class InvalidConfig(ValueError):
    pass


def validate(name: str, value: str | None) -> None:
    """Raise ``InvalidConfig`` for an unknown name or a value of the wrong type."""
    d = TOPIC_CONFIGS.get(name)
    if d is None:
        raise InvalidConfig(f"Unknown topic config name: {name}")
    if value is None:
        return
    try:
        if d.type in ("INT", "LONG"):
            int(value)
        elif d.type == "DOUBLE":
            float(value)
        elif d.type == "BOOLEAN" and value.lower() not in ("true", "false"):
            raise ValueError(value)
    except ValueError as e:
        raise InvalidConfig(f"Invalid value {value} for configuration {name}") from e
    if name == "cleanup.policy":
        for p in value.split(","):
            if p.strip() not in ("delete", "compact"):
                raise InvalidConfig(f"Invalid value {value} for configuration cleanup.policy")


@dataclass(frozen=True)
class ResolvedConfig:
    name: str
    value: str
    #: Kafka's ConfigSource: TOPIC_CONFIG (1), STATIC_BROKER_CONFIG (4), DEFAULT_CONFIG (5).
    source: int
    definition: TopicConfigDef


DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5


def resolve(
    overrides: Mapping[str, str],
    broker_value: Callable[[str], str | None],
    name: str,
) -> ResolvedConfig:
    """Effective value of topic config ``name``. ``broker_value(prop)`` returns a broker
    property the operator set explicitly, or None."""
    d = TOPIC_CONFIGS[name]
    if name in overrides:
        return ResolvedConfig(name, overrides[name], DYNAMIC_TOPIC_CONFIG, d)
    if d.broker_synonym:
        v = broker_value(d.broker_synonym)
        if v is not None:
            return ResolvedConfig(name, v, STATIC_BROKER_CONFIG, d)
    return ResolvedConfig(name, d.default, DEFAULT_CONFIG, d)


def resolve_all(
    overrides: Mapping[str, str], broker_value: Callable[[str], str | None]
) -> dict[str, ResolvedConfig]:
    return {n: resolve(overrides, broker_value, n) for n in TOPIC_CONFIGS}
