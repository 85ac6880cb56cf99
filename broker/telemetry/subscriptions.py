"""Client-metrics subscriptions: the config resources of type CLIENT_METRICS (16), with
the keys, defaults and validation of Kafka's ``ClientMetricsConfigs``, kept with the other
dynamic configs in ``__broker_configs.json`` (as Kafka keeps them in its metadata log).

A subscription names metric prefixes (``metrics``; ``*`` is every metric), a push interval
(``interval.ms``) and match criteria (``match``: ``attribute=regex`` pairs over a client's
id, instance id, software name and version, source address and port). Every change bumps
``version``, so client instances re-evaluate their subscription on their next request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import structlog

from ..config.store import DynamicStore

log = structlog.get_logger("kafkalite.telemetry")

METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
ALL_METRICS = "*"
DEFAULT_INTERVAL_MS = 300_000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
#: Every key with its ConfigDef type and default, in the order Kafka describes them.
CONFIGS: dict[str, tuple[str, str]] = {
    INTERVAL_MS: ("INT", str(DEFAULT_INTERVAL_MS)),
    MATCH: ("LIST", ""),
    METRICS: ("LIST", ""),
}
#: The client attributes a ``match`` entry may test.
MATCH_ATTRIBUTES = frozenset({
    "client_instance_id", "client_id", "client_software_name", "client_software_version",
    "client_source_address", "client_source_port",
})
_JAVA_INT = re.compile(r"\s*[+-]?\d+\s*")


class SubscriptionError(Exception):
    """A change Kafka refuses: ``invalid_config`` picks INVALID_CONFIG over INVALID_REQUEST."""

    def __init__(self, message: str, invalid_config: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.invalid_config = invalid_config


def split_list(value: str) -> list[str]:
    """A LIST config as Kafka's ConfigDef parses it: comma separated, trimmed; empty is
    no entries."""
    if not value.strip():
        return []
    return [item.strip() for item in value.split(",")]


def parse_match(patterns: list[str]) -> dict[str, re.Pattern[str]]:
    """``attribute=regex`` entries as Kafka's ``parseMatchingPatterns`` reads them."""
    out: dict[str, re.Pattern[str]] = {}
    for pattern in patterns:
        parts = pattern.split("=")
        if len(parts) != 2 or parts[0].strip() not in MATCH_ATTRIBUTES:
            raise SubscriptionError(f"Illegal client matching pattern: {pattern}",
                                    invalid_config=True)
        try:
            out[parts[0].strip()] = re.compile(parts[1].strip())
        except re.error:
            raise SubscriptionError(f"Illegal client matching pattern: {pattern}",
                                    invalid_config=True) from None
    return out


def validate(name: str, values: Mapping[str, str]) -> None:
    """Kafka's ``ClientMetricsConfigs.validate``: raises ``SubscriptionError``."""
    if not name:
        raise SubscriptionError("Subscription name can't be empty")
    for key in values:
        if key not in CONFIGS:
            raise SubscriptionError(f"Unknown client metrics configuration: {key}")
    if INTERVAL_MS in values:
        raw = values[INTERVAL_MS]
        if not _JAVA_INT.fullmatch(raw) or not -2**31 <= int(raw) < 2**31:
            raise SubscriptionError(f"Invalid value {raw} for configuration {INTERVAL_MS}: "
                                    "Not a number of type INT", invalid_config=True)
        interval = int(raw)
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise SubscriptionError(
                f"Invalid value {interval} for {INTERVAL_MS}, interval must be between "
                f"{MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)")
    if MATCH in values:
        parse_match(split_list(values[MATCH]))


@dataclass(frozen=True, slots=True)
class Subscription:
    name: str
    metrics: frozenset[str]
    interval_ms: int
    match: Mapping[str, re.Pattern[str]]

    @classmethod
    def of(cls, name: str, values: Mapping[str, str]) -> Subscription:
        return cls(name, frozenset(split_list(values.get(METRICS, ""))),
                   int(values.get(INTERVAL_MS, DEFAULT_INTERVAL_MS)),
                   parse_match(split_list(values.get(MATCH, ""))))

    def matches(self, attributes: Mapping[str, str | None]) -> bool:
        """Every pattern matches the whole attribute (none: every client matches)."""
        for key, pattern in self.match.items():
            value = attributes.get(key)
            if value is None or pattern.fullmatch(value) is None:
                return False
        return True


class Subscriptions:
    """Every subscription by name: its configs as set, persisted, and parsed."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.values: dict[str, dict[str, str]] = {}
        self.parsed: dict[str, Subscription] = {}
        #: Bumped by every change: client instances compare theirs with it.
        self.version = 0

    def load(self, store: DynamicStore) -> None:
        for name, values in store.client_metrics.items():
            try:
                validate(name, values)
            except SubscriptionError as e:
                log.error("telemetry.subscription_ignored", name=name, reason=e.message)
                continue
            self.values[name] = dict(values)
            self.parsed[name] = Subscription.of(name, values)
        self.version += 1

    def get(self, name: str) -> dict[str, str]:
        return dict(self.values.get(name, {}))

    def names(self) -> list[str]:
        return sorted(self.values)

    def describe(self, name: str) -> list[tuple[str, str, bool]]:
        """(key, value, is_default) of every key: the subscription's value or the default."""
        own = self.values.get(name, {})
        return [(k, own.get(k, default), k not in own)
                for k, (_typ, default) in CONFIGS.items()]

    def alter(self, name: str, new: Mapping[str, str], validate_only: bool) -> None:
        """Replace ``name``'s configs with ``new`` (none: the subscription is removed)."""
        validate(name, new)
        if validate_only:
            return
        if not new and name not in self.values:
            return
        store = DynamicStore.read(self.data_dir)
        if new:
            store.client_metrics[name] = dict(new)
            self.values[name] = dict(new)
            self.parsed[name] = Subscription.of(name, new)
        else:
            store.client_metrics.pop(name, None)
            self.values.pop(name, None)
            self.parsed.pop(name, None)
        store.write(self.data_dir)
        self.version += 1
        log.info("telemetry.subscription_altered", name=name, configs=dict(new))
