"""Dynamic broker configs (KIP-226): this broker's values and the cluster-wide defaults,
kept in ``<data dir>/__broker_configs.json`` and applied while the broker runs.

Kafka keeps them in its metadata log; kafkalite, a one-node cluster, in one JSON file
(written atomically, mode 0600 since SSL passwords may be among them) that the
``kafkalite configs`` command also reads and writes while the broker is stopped. A change
is validated first (``broker_configs.validate_dynamic``, then every component it concerns
checks the new values), persisted, then applied: ``Config`` takes the new layer and the
components re-read what they use. A component refusing the change leaves everything as
it was, as Kafka's ``DynamicBrokerConfig`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import structlog

from ..telemetry.subscriptions import Subscriptions
from ..topic_store import Storage
from .definitions import DYNAMIC_LOG, DynamicConfigError, is_sensitive, validate_dynamic
from .groups import GroupConfigs
from .properties import Config
from .store import FILE_NAME, DynamicStore

log = structlog.get_logger("kafkalite.broker")

__all__ = ["FILE_NAME", "DynamicBrokerConfig", "DynamicStore", "LogDefaults",
           "Reconfigurable"]


class Reconfigurable(Protocol):
    """A component that applies some dynamic broker configs live."""

    def reconfigurable(self, name: str) -> bool: ...

    def validate_reconfiguration(self, config: Config) -> None:
        """Raise if the component cannot run with ``config`` (nothing is applied yet)."""

    def reconfigure(self, config: Config) -> None: ...


class NodeReconfigurable(Protocol):
    """A component each node of the process has its own of (the connection limits):
    told of another node's values when that node's own level changes. (As a
    ``Reconfigurable`` too, it applies the first node's level and the cluster default,
    which reaches every node, itself.)"""

    def reconfigurable(self, name: str) -> bool: ...

    def validate_node(self, node_id: int, config: Config) -> None:
        """Raise if node ``node_id`` cannot run with ``config``."""

    def reconfigure_node(self, node_id: int, config: Config) -> None: ...


def redacted(values: Mapping[str, str]) -> dict[str, str]:
    return {k: "[hidden]" if is_sensitive(k) else v for k, v in values.items()}


def _valid_subset(values: Mapping[str, str], per_broker: bool) -> dict[str, str]:
    """The persisted entries that are still valid dynamic configs; Kafka ignores the rest
    with an error in its log, and so does this."""
    kept: dict[str, str] = {}
    for k, v in values.items():
        try:
            validate_dynamic({k: v}, per_broker)
        except DynamicConfigError as e:
            log.error("broker.dynamic_config_ignored", name=k, reason=str(e),
                      level="broker" if per_broker else "cluster default")
            continue
        kept[k] = v
    return kept


class DynamicBrokerConfig:
    """The two dynamic levels of ``config`` for broker ``node_id``, and the components
    that apply them live."""

    def __init__(self, config: Config, node_id: int, data_dir: Path) -> None:
        self.config = config
        self.node_id = node_id
        self.data_dir = data_dir
        self.reconfigurables: list[Reconfigurable] = []
        #: Components of which each node has its own, applied per node (the process's
        #: other components are shared and run with the first node's values).
        self.node_reconfigurables: list[NodeReconfigurable] = []
        #: The group configs (resource type GROUP), kept in the same file.
        self.groups = GroupConfigs(config, data_dir)
        #: The client-metrics subscriptions (resource type CLIENT_METRICS), in that file too.
        self.client_metrics = Subscriptions(data_dir)
        #: The dynamic levels of the process's other nodes (``kafkalite.nodes``), by id:
        #: each node's own, as each Kafka broker has its own. The shared components of
        #: the process run with the first node's values (``config``).
        self.other_nodes: dict[int, dict[str, str]] = {}

    def load(self) -> None:
        """Read the persisted levels into ``config`` (at build time, before the
        components read their settings)."""
        try:
            store = DynamicStore.read(self.data_dir)
        except (OSError, ValueError, AttributeError) as e:
            log.error("broker.dynamic_configs_unreadable", file=FILE_NAME, reason=str(e))
            return
        self.config.set_dynamic(default=_valid_subset(store.default, False),
                                broker=_valid_subset(store.level(self.node_id), True))
        self.other_nodes = {int(b): _valid_subset(v, True) for b, v in store.brokers.items()
                            if b.isdigit() and int(b) != self.node_id}
        self.groups.load(store)
        self.client_metrics.load(store)

    def current(self, per_broker: bool, node_id: int | None = None) -> dict[str, str]:
        if per_broker and node_id is not None and node_id != self.node_id:
            return dict(self.other_nodes.get(node_id, {}))
        return dict(self.config.dynamic_broker if per_broker else self.config.dynamic_default)

    def node_config(self, node_id: int, own: Mapping[str, str]) -> Config:
        """The properties as node ``node_id`` holds them: ``own`` (its per-node static
        values), the cluster-wide defaults and its own dynamic level."""
        if node_id == self.node_id and not own:
            return self.config
        return self.config.for_node(own, self.current(True, node_id))

    def alter(self, per_broker: bool, new: Mapping[str, str], validate_only: bool,
              node_id: int | None = None) -> None:
        """Replace one level with ``new`` (``node_id``'s own level, the first node's when
        None): validate, persist, apply. Raises ``DynamicConfigError`` with Kafka's
        message when refused."""
        validate_dynamic(new, per_broker)
        if per_broker and node_id is not None and node_id != self.node_id:
            self._alter_other(node_id, new, validate_only)
            return
        cfg = self.config
        old_default, old_broker = cfg.dynamic_default, cfg.dynamic_broker
        old_values = dict(cfg.values)
        if per_broker:
            cfg.set_dynamic(broker=new)
        else:
            cfg.set_dynamic(default=new)
        changed = {k for k in old_values.keys() | cfg.values.keys()
                   if old_values.get(k) != cfg.values.get(k)}
        affected = [r for r in self.reconfigurables if any(r.reconfigurable(k) for k in changed)]
        try:
            for r in affected:
                r.validate_reconfiguration(cfg)
            if not validate_only:
                store = DynamicStore.read(self.data_dir)
                store.set_level(self.node_id if per_broker else None, new)
                store.write(self.data_dir)
        except Exception as e:
            cfg.set_dynamic(default=old_default, broker=old_broker)
            log.warning("broker.dynamic_config_refused", reason=repr(e),
                        configs=redacted(new))
            raise DynamicConfigError("Invalid dynamic configuration") from e
        if validate_only:
            cfg.set_dynamic(default=old_default, broker=old_broker)
            return
        for r in affected:
            try:
                r.reconfigure(cfg)
            except Exception:  # persisted and valid: one component's trouble is logged
                log.exception("broker.reconfigure_failed", component=type(r).__name__)
        log.info("broker.dynamic_configs_altered",
                 level=str(self.node_id) if per_broker else "<default>",
                 configs=redacted(new), changed=sorted(changed))


    def _reconfigure_node(self, node_id: int, changed: set[str]) -> None:
        cfg = self.node_config(node_id, {})
        for r in self.node_reconfigurables:
            if any(r.reconfigurable(k) for k in changed):
                try:
                    r.reconfigure_node(node_id, cfg)
                except Exception:  # persisted and valid: one component's trouble is logged
                    log.exception("broker.reconfigure_failed", component=type(r).__name__,
                                  node_id=node_id)

    def _alter_other(self, node_id: int, new: Mapping[str, str], validate_only: bool) -> None:
        """Another node's own level: validated, persisted and applied to the components
        each node has its own of (``node_reconfigurables``); the shared components keep
        the first node's values."""
        old = self.other_nodes.get(node_id, {})
        changed = {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
        cfg = self.config.for_node({}, new)
        try:
            for r in self.node_reconfigurables:
                if any(r.reconfigurable(k) for k in changed):
                    r.validate_node(node_id, cfg)
        except Exception as e:
            log.warning("broker.dynamic_config_refused", reason=repr(e), node_id=node_id,
                        configs=redacted(new))
            raise DynamicConfigError("Invalid dynamic configuration") from e
        if validate_only:
            return
        store = DynamicStore.read(self.data_dir)
        store.set_level(node_id, new)
        store.write(self.data_dir)
        if new:
            self.other_nodes[node_id] = dict(new)
        else:
            self.other_nodes.pop(node_id, None)
        self._reconfigure_node(node_id, changed)
        log.info("broker.dynamic_configs_altered", level=str(node_id),
                 configs=redacted(new), changed=sorted(changed))


class LogDefaults:
    """The log configs standing for topic configs: every log without its own value takes
    a new broker value at once."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def reconfigurable(self, name: str) -> bool:
        return name in DYNAMIC_LOG

    def validate_reconfiguration(self, config: Config) -> None:
        for topic in self.storage.catalog:
            self.storage.logs.config_for(topic.name)  # every value still parses

    def reconfigure(self, config: Config) -> None:
        for topic in self.storage.catalog:
            self.storage.logs.reconfigure(topic.name)
