"""The file holding the dynamic configs of a data directory: the cluster-wide broker
defaults, each broker's own values, each group's configs and the client-metrics
subscriptions, written atomically with mode 0600 (SSL passwords may be among them)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafkalite.storage.fsutil import atomic_write

FILE_NAME = "__broker_configs.json"


@dataclass
class DynamicStore:
    """The persisted dynamic configs: the cluster-wide defaults and each broker's own."""

    default: dict[str, str] = field(default_factory=dict)
    brokers: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Group configs (resource type GROUP), by group id: kept here too, as Kafka keeps
    #: them in its metadata log beside the broker configs.
    groups: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Client-metrics subscriptions (resource type CLIENT_METRICS), by name.
    client_metrics: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def read(cls, data_dir: Path) -> DynamicStore:
        path = data_dir / FILE_NAME
        if not path.exists():
            return cls()
        raw = json.loads(path.read_text())
        return cls({str(k): str(v) for k, v in raw.get("default", {}).items()},
                   {str(b): {str(k): str(v) for k, v in cfg.items()}
                    for b, cfg in raw.get("brokers", {}).items()},
                   {str(g): {str(k): str(v) for k, v in cfg.items()}
                    for g, cfg in raw.get("groups", {}).items()},
                   {str(c): {str(k): str(v) for k, v in cfg.items()}
                    for c, cfg in raw.get("client_metrics", {}).items()})

    def write(self, data_dir: Path) -> None:
        data = json.dumps({"version": 1, "default": self.default, "brokers": self.brokers,
                           "groups": self.groups, "client_metrics": self.client_metrics},
                          indent=2, sort_keys=True).encode()
        path = data_dir / FILE_NAME
        atomic_write(path, data)
        os.chmod(path, 0o600)

    def level(self, broker: int | None) -> dict[str, str]:
        """The configs of one broker, or the cluster-wide defaults (``broker=None``)."""
        return dict(self.default if broker is None else self.brokers.get(str(broker), {}))

    def set_level(self, broker: int | None, values: Mapping[str, str]) -> None:
        if broker is None:
            self.default = dict(values)
        elif values:
            self.brokers[str(broker)] = dict(values)
        else:
            self.brokers.pop(str(broker), None)
