"""Topic-level configs: Kafka's names, defaults and the broker properties each falls back to.

A topic's effective value is its own override if set, else the broker property (the
"synonym") from the most specific broker level that sets one, else the broker default.
Some topic configs have several broker synonyms in order of precedence, with a unit
conversion (``retention.ms`` <- ``log.retention.ms``, ``log.retention.minutes``,
``log.retention.hours``), as Kafka's ``ServerTopicConfigSynonyms``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Kafka's ConfigSource codes (DescribeConfigs).
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
GROUP_CONFIG = 8

LONG_MAX = "9223372036854775807"

#: The broker levels a topic config falls back to, most specific first:
#: (ConfigSource code, the values set at that level).
BrokerLevels = Sequence[tuple[int, Mapping[str, str]]]


@dataclass(frozen=True)
class Synonym:
    """A broker property standing for a topic config; its value times ``factor``."""

    name: str
    factor: int = 1


HOURS = 3_600_000
MINUTES = 60_000


@dataclass(frozen=True)
class TopicConfigDef:
    name: str
    default: str
    type: str  # Kafka's ConfigType names: STRING, INT, LONG, BOOLEAN, DOUBLE, LIST, CLASS
    synonyms: tuple[Synonym, ...] = ()
    sensitive: bool = False
    #: Allowed values (Kafka's ValidString / ValidList), or a lower bound for numbers.
    choices: tuple[str, ...] = ()
    at_least: float | None = None

    @property
    def broker_synonym(self) -> str | None:
        """The broker property of highest precedence (Kafka's ``TOPIC_CONFIG_SYNONYMS``)."""
        return self.synonyms[0].name if self.synonyms else None


def _d(name: str, default: str, typ: str, *synonyms: str | Synonym,
       choices: tuple[str, ...] = (), at_least: float | None = None) -> TopicConfigDef:
    syns = tuple(s if isinstance(s, Synonym) else Synonym(s) for s in synonyms)
    return TopicConfigDef(name, default, typ, syns, choices=choices, at_least=at_least)


COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")

SUBJECT_STRATEGY = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
SUBJECT_STRATEGIES = tuple(f"io.confluent.kafka.serializers.subject.{n}" for n in (
    "TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy"))

_DEFS = [
    _d("cleanup.policy", "delete", "LIST", "log.cleanup.policy", choices=("compact", "delete")),
    _d("compression.type", "producer", "STRING", "compression.type", choices=COMPRESSION_TYPES),
    _d("compression.gzip.level", "-1", "INT", "compression.gzip.level"),
    _d("compression.lz4.level", "9", "INT", "compression.lz4.level"),
    _d("compression.zstd.level", "3", "INT", "compression.zstd.level"),
    _d("delete.retention.ms", "86400000", "LONG", "log.cleaner.delete.retention.ms", at_least=0),
    _d("file.delete.delay.ms", "60000", "LONG", "log.segment.delete.delay.ms", at_least=0),
    _d("flush.messages", LONG_MAX, "LONG", "log.flush.interval.messages", at_least=1),
    _d("flush.ms", LONG_MAX, "LONG", "log.flush.interval.ms", "log.flush.scheduler.interval.ms",
       at_least=0),
    _d("index.interval.bytes", "4096", "INT", "log.index.interval.bytes", at_least=0),
    _d("max.compaction.lag.ms", LONG_MAX, "LONG", "log.cleaner.max.compaction.lag.ms",
       at_least=1),
    _d("max.message.bytes", "1048588", "INT", "message.max.bytes", at_least=0),
    _d("max.decompressed.message.bytes", "2147483639", "INT",
       "max.decompressed.message.bytes", at_least=0),
    # Kafka 4.0 made the bound on future timestamps one hour (it was Long.MAX).
    _d("message.timestamp.after.max.ms", "3600000", "LONG",
       "log.message.timestamp.after.max.ms", at_least=0),
    _d("message.timestamp.before.max.ms", LONG_MAX, "LONG",
       "log.message.timestamp.before.max.ms", at_least=0),
    _d("message.timestamp.type", "CreateTime", "STRING", "log.message.timestamp.type",
       choices=TIMESTAMP_TYPES),
    _d("min.cleanable.dirty.ratio", "0.5", "DOUBLE", "log.cleaner.min.cleanable.ratio",
       at_least=0),
    _d("min.compaction.lag.ms", "0", "LONG", "log.cleaner.min.compaction.lag.ms", at_least=0),
    _d("min.insync.replicas", "1", "INT", "min.insync.replicas", at_least=1),
    _d("errors.deadletterqueue.group.enable", "false", "BOOLEAN"),
    # Replication throttles and tiered storage: accepted and described as in Kafka; no
    # replica is throttled and no log is copied to remote storage.
    _d("leader.replication.throttled.replicas", "", "LIST"),
    _d("follower.replication.throttled.replicas", "", "LIST"),
    _d("local.retention.bytes", "-2", "LONG", "log.local.retention.bytes", at_least=-2),
    _d("local.retention.ms", "-2", "LONG", "log.local.retention.ms", at_least=-2),
    _d("remote.copy.lag.bytes", "-1", "LONG", "log.remote.copy.lag.bytes", at_least=-1),
    _d("remote.copy.lag.ms", "0", "LONG", "log.remote.copy.lag.ms", at_least=-1),
    _d("remote.log.copy.disable", "false", "BOOLEAN"),
    _d("remote.log.delete.on.disable", "false", "BOOLEAN"),
    _d("remote.storage.enable", "false", "BOOLEAN"),
    _d("preallocate", "false", "BOOLEAN", "log.preallocate"),
    _d("retention.bytes", "-1", "LONG", "log.retention.bytes"),
    _d("retention.ms", "604800000", "LONG", "log.retention.ms",
       Synonym("log.retention.minutes", MINUTES), Synonym("log.retention.hours", HOURS),
       at_least=-1),
    _d("segment.bytes", "1073741824", "INT", "log.segment.bytes", at_least=14),
    _d("segment.index.bytes", "10485760", "INT", "log.index.size.max.bytes", at_least=4),
    _d("segment.jitter.ms", "0", "LONG", "log.roll.jitter.ms",
       Synonym("log.roll.jitter.hours", HOURS), at_least=0),
    _d("segment.ms", "604800000", "LONG", "log.roll.ms", Synonym("log.roll.hours", HOURS),
       at_least=1),
    _d("unclean.leader.election.enable", "false", "BOOLEAN", "unclean.leader.election.enable"),
    # Confluent Server's broker-side schema validation (served with --schema-registry).
    _d("confluent.key.schema.validation", "false", "BOOLEAN"),
    _d("confluent.value.schema.validation", "false", "BOOLEAN"),
    _d("confluent.key.subject.name.strategy", SUBJECT_STRATEGY, "STRING",
       choices=SUBJECT_STRATEGIES),
    _d("confluent.value.subject.name.strategy", SUBJECT_STRATEGY, "STRING",
       choices=SUBJECT_STRATEGIES),
]

TOPIC_CONFIGS: dict[str, TopicConfigDef] = {d.name: d for d in _DEFS}

#: Broker property -> every broker property standing for the same thing, in precedence
#: order (Kafka's ``DynamicBrokerConfig.brokerConfigSynonyms`` without listener prefixes).
BROKER_SYNONYM_GROUPS: dict[str, tuple[str, ...]] = {
    s.name: tuple(x.name for x in d.synonyms)
    for d in _DEFS if len(d.synonyms) > 1 for s in d.synonyms
}


class InvalidConfig(ValueError):
    pass


def check_value(name: str, value: str, typ: str, choices: tuple[str, ...] = (),
                at_least: float | None = None) -> None:
    """Raise ``InvalidConfig`` with Kafka's ConfigException message for a bad value."""
    def bad(reason: str) -> InvalidConfig:
        return InvalidConfig(f"Invalid value {value} for configuration {name}: {reason}")

    v = value.strip()
    number: float | None = None
    try:
        if typ in ("INT", "LONG", "SHORT"):
            number = int(v)
            limit = {"INT": 2**31, "LONG": 2**63, "SHORT": 2**15}[typ]
            if not -limit <= number < limit:
                raise ValueError(v)
        elif typ == "DOUBLE":
            number = float(v)
    except ValueError as e:
        kind = {"INT": "INTEGER", "LONG": "LONG", "SHORT": "SHORT", "DOUBLE": "DOUBLE"}[typ]
        raise bad(f"Not a number of type {kind}") from e
    if typ == "BOOLEAN" and v.lower() not in ("true", "false"):
        raise bad("Expected value to be either true or false")
    if at_least is not None and number is not None and number < at_least:
        shown = int(at_least) if float(at_least).is_integer() else at_least
        raise bad(f"Value must be at least {shown}")
    if choices:
        items = [s.strip() for s in v.split(",")] if typ == "LIST" else [v]
        if any(i not in choices for i in items):
            raise bad(f"String must be one of: {', '.join(choices)}")


_VERSION = re.compile(r"^(0\.(8\.[0-2]|9\.0|10\.[0-2]|11\.0)|[1-3]\.[0-9]|4\.0)(-IV[0-9]+)?$")


def check_metadata_version(name: str, value: str) -> None:
    """``message.format.version`` takes a Kafka release (MetadataVersion) string."""
    v = value.strip()
    parts = v.split(".")
    # As MetadataVersion.fromVersionString: "2.8.1" means "2.8", "0.10.0.1" means "0.10.0".
    keep = 3 if v.startswith("0.") else 2
    key = ".".join(parts[:keep]) if len(parts) > keep else v
    if not _VERSION.match(key):
        raise InvalidConfig(f"Invalid value {value} for configuration {name}: "
                            f"Version {value} is not a valid version")


_REPLICA = re.compile(r"^\s*\d+\s*:\s*\d+\s*$")


def check_throttled_replicas(name: str, value: str) -> None:
    """Kafka's ``ThrottledReplicaListValidator``: empty, ``*``, or partition:broker pairs."""
    items = [i.strip() for i in value.split(",")] if value.strip() else []
    if items == ["*"] or all(_REPLICA.match(i) for i in items):
        return
    shown = ", ".join(items)
    raise InvalidConfig(
        f"Invalid value [{shown}] for configuration {name}: {name} must be the literal '*' "
        "or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def validate(name: str, value: str | None) -> None:
    """Raise ``InvalidConfig`` for an unknown name or a value Kafka would refuse."""
    d = TOPIC_CONFIGS.get(name)
    if d is None:
        raise InvalidConfig(f"Unknown topic config name: {name}")
    if value is None:
        return
    check_value(name, value, d.type, d.choices, d.at_least)
    if name.endswith(".replication.throttled.replicas"):
        check_throttled_replicas(name, value)
    if name == "remote.storage.enable" and value.strip().lower() == "true":
        raise InvalidConfig("Tiered Storage functionality is disabled in the broker. "
                            "Topic cannot be configured with remote log storage.")


@dataclass(frozen=True)
class ResolvedConfig:
    name: str
    value: str
    #: Kafka's ConfigSource of the value (the first synonym's, as Kafka reports it).
    source: int
    definition: TopicConfigDef


def _convert(value: str, factor: int) -> str:
    if factor == 1:
        return value
    try:
        return str(int(value) * factor)
    except ValueError:
        return value


def synonyms(overrides: Mapping[str, str], levels: BrokerLevels,
             name: str) -> list[tuple[str, str, int]]:
    """(name, value, source) of topic config ``name`` and its broker synonyms, most
    specific first, as Kafka's DescribeConfigs lists them: every level in order, within a
    level the synonyms in precedence order, then everything before the first entry for the
    synonym of highest precedence dropped (so a topic whose broker sets only
    ``log.retention.hours`` lists no synonyms for ``retention.ms``, as in Kafka)."""
    d = TOPIC_CONFIGS[name]
    out: list[tuple[str, str, int]] = []
    if d.synonyms:
        for source, values in levels:
            for s in d.synonyms:
                v = values.get(s.name)
                if v is not None:
                    out.append((s.name, v, source))
        first = d.synonyms[0].name
        while out and out[0][0] != first:
            out.pop(0)
    if name in overrides:
        out.insert(0, (name, overrides[name], DYNAMIC_TOPIC_CONFIG))
    return out


def resolve(overrides: Mapping[str, str], levels: BrokerLevels, name: str) -> ResolvedConfig:
    """Effective value of topic config ``name``."""
    d = TOPIC_CONFIGS[name]
    if name in overrides:
        return ResolvedConfig(name, overrides[name], DYNAMIC_TOPIC_CONFIG, d)
    value = d.default
    for _source, values in levels:
        found = next((_convert(values[s.name], s.factor) for s in d.synonyms
                      if values.get(s.name) is not None), None)
        if found is not None:
            value = found
            break
    syns = synonyms(overrides, levels, name)
    return ResolvedConfig(name, value, syns[0][2] if syns else DEFAULT_CONFIG, d)


def resolve_all(overrides: Mapping[str, str], levels: BrokerLevels) -> dict[str, ResolvedConfig]:
    return {n: resolve(overrides, levels, n) for n in TOPIC_CONFIGS}
