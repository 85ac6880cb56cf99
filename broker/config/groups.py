"""Group configs (resource type GROUP): Kafka's ``GroupConfig`` for one-group overrides of
the broker's consumer, share and streams group settings.

A group's overrides are validated as Kafka 4.4 validates them (``GroupConfig.validate``:
known names, each value parsed by its type, then bounded by the broker's
``group.consumer.*`` / ``group.share.*`` / ``group.streams.*`` min and max settings, with
Kafka's messages), kept beside the dynamic broker configs in ``__broker_configs.json`` and
read back at start-up. A value in use is clamped to the broker's current bounds (Kafka's
``GroupConfig.evaluate``), since those may have changed since it was set.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from kafkalite.storage.topic_config import DEFAULT_CONFIG, InvalidConfig

from .properties import DEFAULTS, Config
from .store import DynamicStore

if TYPE_CHECKING:
    # Share groups' modules load with the first share group, not at start-up.
    from kafkalite.coordinator.share import offset_reset
    from kafkalite.coordinator.share.partition import SharePartitionConfig

log = structlog.get_logger("kafkalite.group_configs")


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    type: str  # Kafka's ConfigDef.Type name: INT, LONG, BOOLEAN, STRING, LIST
    default: str
    #: The broker property standing for this one when the group does not set it.
    broker_synonym: str | None = None
    at_least: int | None = None
    choices: tuple[str, ...] = ()
    #: Kafka's internal configs: accepted, never described unless set.
    internal: bool = False
    #: The broker properties bounding the value (min, max); None: no bound on that side.
    bounds: tuple[str | None, str | None] | None = None


def _d(name: str, typ: str, default: str, syn: str | None = None, **kw: object) -> GroupConfigDef:
    return GroupConfigDef(name, typ, default, syn, **kw)  # type: ignore[arg-type]


_C, _S, _T = "group.consumer.", "group.share.", "group.streams."

#: Kafka 4.4's GroupConfig definitions, in its order (which is the order values are parsed).
GROUP_CONFIGS: dict[str, GroupConfigDef] = {d.name: d for d in (
    _d("consumer.session.timeout.ms", "INT", "45000", _C + "session.timeout.ms", at_least=1,
       bounds=(_C + "min.session.timeout.ms", _C + "max.session.timeout.ms")),
    _d("consumer.heartbeat.interval.ms", "INT", "5000", _C + "heartbeat.interval.ms",
       at_least=1, bounds=(_C + "min.heartbeat.interval.ms", _C + "max.heartbeat.interval.ms")),
    _d("consumer.assignment.interval.ms", "INT", "1000", _C + "assignment.interval.ms",
       at_least=0,
       bounds=(_C + "min.assignment.interval.ms", _C + "max.assignment.interval.ms")),
    _d("consumer.assignor.offload.enable", "BOOLEAN", "true", _C + "assignor.offload.enable",
       internal=True),
    _d("share.session.timeout.ms", "INT", "45000", _S + "session.timeout.ms", at_least=1,
       bounds=(_S + "min.session.timeout.ms", _S + "max.session.timeout.ms")),
    _d("share.heartbeat.interval.ms", "INT", "5000", _S + "heartbeat.interval.ms", at_least=1,
       bounds=(_S + "min.heartbeat.interval.ms", _S + "max.heartbeat.interval.ms")),
    _d("share.record.lock.duration.ms", "INT", "30000", _S + "record.lock.duration.ms",
       at_least=1000,
       bounds=(_S + "min.record.lock.duration.ms", _S + "max.record.lock.duration.ms")),
    _d("share.delivery.count.limit", "INT", "5", _S + "delivery.count.limit", at_least=2,
       bounds=(_S + "min.delivery.count.limit", _S + "max.delivery.count.limit")),
    _d("share.partition.max.record.locks", "INT", "2000", _S + "partition.max.record.locks",
       at_least=100,
       bounds=(_S + "min.partition.max.record.locks", _S + "max.partition.max.record.locks")),
    _d("share.auto.offset.reset", "STRING", "latest"),
    _d("share.isolation.level", "STRING", "read_uncommitted",
       choices=("read_committed", "read_uncommitted")),
    _d("share.renew.acknowledge.enable", "BOOLEAN", "true"),
    _d("share.assignment.interval.ms", "INT", "1000", _S + "assignment.interval.ms",
       at_least=0,
       bounds=(_S + "min.assignment.interval.ms", _S + "max.assignment.interval.ms")),
    _d("share.assignor.offload.enable", "BOOLEAN", "true", _S + "assignor.offload.enable",
       internal=True),
    _d("streams.session.timeout.ms", "INT", "45000", _T + "session.timeout.ms", at_least=1,
       bounds=(_T + "min.session.timeout.ms", _T + "max.session.timeout.ms")),
    _d("streams.heartbeat.interval.ms", "INT", "5000", _T + "heartbeat.interval.ms",
       at_least=1, bounds=(_T + "min.heartbeat.interval.ms", _T + "max.heartbeat.interval.ms")),
    _d("streams.num.standby.replicas", "INT", "0", _T + "num.standby.replicas", at_least=0,
       bounds=(None, _T + "max.standby.replicas")),
    _d("streams.initial.rebalance.delay.ms", "INT", "3000", _T + "initial.rebalance.delay.ms",
       at_least=0),
    _d("streams.assignment.interval.ms", "INT", "1000", _T + "assignment.interval.ms",
       at_least=0,
       bounds=(_T + "min.assignment.interval.ms", _T + "max.assignment.interval.ms")),
    _d("streams.assignor.offload.enable", "BOOLEAN", "true", _T + "assignor.offload.enable",
       internal=True),
    _d("streams.task.offset.interval.ms", "INT", "60000", _T + "task.offset.interval.ms",
       at_least=1, internal=True, bounds=(_T + "min.task.offset.interval.ms", None)),
    _d("streams.num.warmup.replicas", "INT", "2", _T + "num.warmup.replicas", at_least=0,
       internal=True, bounds=(None, _T + "max.warmup.replicas")),
    _d("streams.rack.aware.assignment.tags", "LIST", "", _T + "rack.aware.assignment.tags"),
    _d("streams.acceptable.recovery.lag", "LONG", "10000", _T + "acceptable.recovery.lag",
       at_least=0, internal=True),
    _d("streams.assignor.name", "STRING", "", _T + "assignors"),
    _d("errors.deadletterqueue.topic.name", "STRING", ""),
    _d("errors.deadletterqueue.copy.record.enable", "BOOLEAN", "false"),
)}

#: Broker group settings kafkalite does not otherwise define, at Kafka 4.4's defaults: the
#: streams ones are the streams coordinator's defaults and its group configs' bounds.
KAFKA_BROKER_DEFAULTS: dict[str, str] = {
    _T + "session.timeout.ms": "45000", _T + "min.session.timeout.ms": "45000",
    _T + "max.session.timeout.ms": "60000", _T + "heartbeat.interval.ms": "5000",
    _T + "min.heartbeat.interval.ms": "5000", _T + "max.heartbeat.interval.ms": "15000",
    _T + "num.standby.replicas": "0", _T + "max.standby.replicas": "2",
    _T + "assignment.interval.ms": "1000",
    _T + "min.assignment.interval.ms": "0", _T + "max.assignment.interval.ms": "15000",
    _T + "assignor.offload.enable": "true", _T + "task.offset.interval.ms": "60000",
    _T + "min.task.offset.interval.ms": "15000", _T + "num.warmup.replicas": "2",
    _T + "max.warmup.replicas": "20", _T + "rack.aware.assignment.tags": "",
    _T + "acceptable.recovery.lag": "10000", _T + "assignors": "sticky",
    _C + "assignor.offload.enable": "true", _S + "assignor.offload.enable": "true",
}

#: Kafka's order of the range checks (GroupConfig.validateValues).
_RANGE_ORDER = (
    "consumer.heartbeat.interval.ms", "consumer.session.timeout.ms",
    "consumer.assignment.interval.ms", "share.heartbeat.interval.ms",
    "share.session.timeout.ms", "share.record.lock.duration.ms", "share.delivery.count.limit",
    "share.partition.max.record.locks", "share.assignment.interval.ms",
    "streams.heartbeat.interval.ms", "streams.session.timeout.ms",
    "streams.num.standby.replicas", "streams.assignment.interval.ms",
    "streams.task.offset.interval.ms", "streams.num.warmup.replicas",
)
#: (session timeout, heartbeat interval) pairs: the first must exceed the second.
_SESSION_PAIRS = (("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
                  ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
                  ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"))

_STREAMS_ASSIGNORS = ("sticky",)


def broker_value(config: Config, name: str) -> str:
    """A broker group setting: its value in ``config``, else Kafka's default."""
    v = config.raw_or_none(name)
    if v is None:
        v = KAFKA_BROKER_DEFAULTS.get(name, "")
    return v


def _broker_int(config: Config, name: str) -> int:
    return int(broker_value(config, name).strip())


def _valid_offset_reset(value: str) -> bool:
    from kafkalite.coordinator.share import offset_reset

    return offset_reset.parse(value) is not None


def _parse(d: GroupConfigDef, value: str) -> object:
    """Kafka's ConfigDef.parseType and the definition's validator, with their messages."""
    def bad(reason: str) -> InvalidConfig:
        return InvalidConfig(f"Invalid value {value} for configuration {d.name}: {reason}")

    v = value.strip()
    if d.type in ("INT", "LONG"):
        limit = 2**31 if d.type == "INT" else 2**63
        try:
            n = int(v)
            if not -limit <= n < limit:
                raise ValueError(v)
        except ValueError:
            raise bad(f"Not a number of type {d.type}") from None
        if d.at_least is not None and n < d.at_least:
            raise bad(f"Value must be at least {d.at_least}")
        return n
    if d.type == "BOOLEAN":
        if v.lower() not in ("true", "false"):
            raise bad("Expected value to be either true or false")
        return v.lower() == "true"
    if d.type == "LIST":
        return [s.strip() for s in v.split(",") if s.strip()] if v else []
    if d.name == "share.auto.offset.reset" and not _valid_offset_reset(v):
        raise bad(f"Invalid value `{value}` for configuration {d.name}. The value must be "
                  "either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")
    if d.choices and v not in d.choices:
        raise bad(f"String must be one of: {', '.join(d.choices)}")
    return v


def validate(values: Mapping[str, str], config: Config) -> None:
    """Kafka's ``GroupConfig.validate``: raise ``InvalidConfig`` with its message."""
    for name in values:
        if name not in GROUP_CONFIGS:
            raise InvalidConfig(f"Unknown group config name: {name}")
    tags = values.get("streams.rack.aware.assignment.tags")
    if tags is not None and tags.strip():
        items = re.split(r"\s*,\s*", tags)
        if len(set(items)) != len(items):
            raise InvalidConfig("streams.rack.aware.assignment.tags must not contain "
                                "duplicate tag keys.")
    parsed = {d.name: _parse(d, values[d.name]) for d in GROUP_CONFIGS.values()
              if d.name in values}
    for name in _RANGE_ORDER:
        if name not in parsed:
            continue
        n = parsed[name]
        assert isinstance(n, int)
        lo_name, hi_name = GROUP_CONFIGS[name].bounds or (None, None)
        lo = _broker_int(config, lo_name) if lo_name else None
        hi = _broker_int(config, hi_name) if hi_name else None
        if lo is not None and hi is not None:
            if not lo <= n <= hi:
                raise InvalidConfig(f"{name} must be in the range {lo} to {hi} inclusive.")
        elif hi is not None and n > hi:
            raise InvalidConfig(f"{name} must be less than or equal to {hi}")
        elif lo is not None and n < lo:
            raise InvalidConfig(f"{name} must be greater than or equal to {lo}")
    if "streams.assignor.name" in parsed and parsed["streams.assignor.name"] \
            not in _STREAMS_ASSIGNORS:
        raise InvalidConfig(
            f"streams.assignor.name '{parsed['streams.assignor.name']}' is not a registered "
            f"task assignor. Registered assignors are: [{', '.join(_STREAMS_ASSIGNORS)}].")
    for session, heartbeat in _SESSION_PAIRS:
        if session not in parsed and heartbeat not in parsed:
            continue
        s = parsed.get(session, _broker_int(config, GROUP_CONFIGS[session].broker_synonym or ""))
        h = parsed.get(heartbeat,
                       _broker_int(config, GROUP_CONFIGS[heartbeat].broker_synonym or ""))
        assert isinstance(s, int) and isinstance(h, int)
        if s <= h:
            raise InvalidConfig(f"{session} must be greater than {heartbeat}")
    dlq = parsed.get("errors.deadletterqueue.topic.name")
    if isinstance(dlq, str) and dlq.startswith("__"):
        raise InvalidConfig("errors.deadletterqueue.topic.name: DLQ topic name must not "
                            "start with '__'")


def describe_keys(overrides: Mapping[str, str]) -> list[str]:
    """The configs Kafka describes for a group: every one that is not internal (those
    without a broker synonym at their own default) and those the group sets, in name
    order."""
    names = {d.name for d in GROUP_CONFIGS.values() if not d.internal}
    return sorted(names | set(overrides))


def value_of(config: Config, overrides: Mapping[str, str], name: str) -> str:
    """A group config's value as described: the group's own, else the broker's."""
    if name in overrides:
        return overrides[name]
    d = GROUP_CONFIGS[name]
    if d.broker_synonym:
        v = broker_value(config, d.broker_synonym)
        if d.name == "streams.assignor.name":  # the first of group.streams.assignors
            v = v.split(",")[0].strip()
        return v
    return d.default


def default_chain(config: Config, name: str,
                  broker_chain: Callable[[str], list[tuple[str, str, int]]]
                  ) -> list[tuple[str, str, int]]:
    """(name, value, source) of a group config's broker synonym over the broker levels,
    or its own default when it has no broker synonym."""
    d = GROUP_CONFIGS[name]
    if d.broker_synonym is None:
        return [(name, d.default, DEFAULT_CONFIG)]
    if d.broker_synonym in DEFAULTS:
        return broker_chain(d.broker_synonym)
    return [(d.broker_synonym, value_of(config, {}, name), DEFAULT_CONFIG)]


class GroupConfigs:
    """Every group's config overrides: validated, persisted with the dynamic broker
    configs, and read by the group coordinator (clamped to the broker's bounds)."""

    def __init__(self, config: Config, data_dir: Path) -> None:
        self.config = config
        self.data_dir = data_dir
        self.groups: dict[str, dict[str, str]] = {}

    def load(self, store: DynamicStore) -> None:
        """Take the stored group configs (at start-up)."""
        for group, values in store.groups.items():
            try:
                validate(values, self.config)
            except InvalidConfig as e:
                # Kept and clamped when used, as Kafka keeps a stored group config.
                log.warning("broker.group_config_out_of_bounds", group=group, reason=str(e))
            self.groups[group] = dict(values)

    def get(self, group: str) -> dict[str, str]:
        return dict(self.groups.get(group, {}))

    def alter(self, group: str, new: Mapping[str, str], validate_only: bool) -> None:
        """Replace ``group``'s overrides with ``new``; raises ``InvalidConfig``."""
        validate(new, self.config)
        if validate_only:
            return
        store = DynamicStore.read(self.data_dir)
        if new:
            store.groups[group] = dict(new)
        else:
            store.groups.pop(group, None)
        store.write(self.data_dir)
        if new:
            self.groups[group] = dict(new)
        else:
            self.groups.pop(group, None)
        log.info("group.configs_altered", group=group, configs=dict(new))

    def value(self, group: str, name: str) -> str | None:
        """``group``'s own value of a config (as set), None when it does not set it."""
        return self.groups.get(group, {}).get(name)

    def int_value(self, group: str, name: str) -> int | None:
        """``group``'s own value of an INT config, clamped to the broker's current bounds
        (Kafka's GroupConfig.evaluate); None when the group does not set it."""
        raw = self.groups.get(group, {}).get(name)
        if raw is None:
            return None
        try:
            n = int(raw.strip())
        except ValueError:
            return None
        lo_name, hi_name = GROUP_CONFIGS[name].bounds or (None, None)
        if lo_name is not None:
            n = max(n, _broker_int(self.config, lo_name))
        if hi_name is not None:
            n = min(n, _broker_int(self.config, hi_name))
        return n

    def effective_int(self, group: str, name: str) -> int:
        """An INT config in effect for ``group``: its own (clamped), else the broker's."""
        own = self.int_value(group, name)
        if own is not None:
            return own
        return _broker_int(self.config, GROUP_CONFIGS[name].broker_synonym or "")

    def share_partition_config(self, group: str) -> SharePartitionConfig:
        """What a share-partition of ``group`` runs with: the group's share configs, else
        the broker's ``group.share.*`` settings (share.isolation.level has none: Kafka's
        default, read_uncommitted)."""
        from kafkalite.coordinator.share.partition import SharePartitionConfig

        isolation = (self.value(group, "share.isolation.level") or "read_uncommitted").strip()
        return SharePartitionConfig(
            lock_duration_ms=self.effective_int(group, "share.record.lock.duration.ms"),
            delivery_count_limit=self.effective_int(group, "share.delivery.count.limit"),
            max_record_locks=self.effective_int(group, "share.partition.max.record.locks"),
            read_committed=isolation == "read_committed")

    def share_offset_reset(self, group: str) -> offset_reset.OffsetReset:
        """The group's share.auto.offset.reset (Kafka's default: latest)."""
        from kafkalite.coordinator.share import offset_reset

        parsed = offset_reset.parse(self.value(group, "share.auto.offset.reset") or "latest")
        return parsed or offset_reset.OffsetReset("latest")
