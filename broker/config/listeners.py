"""The listener settings dynamic broker configs change while the broker runs: each
listener's TLS and SASL security (``listener.name.<l>.ssl.keystore.location``, ...) and
the connection limits. As in Kafka, new connections take the new settings; open ones keep
theirs."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..limits import ConnectionQuotas, Limits
from ..security.scram import ScramStore
from ..security.setup import ListenerSecurity, listener_security
from .properties import Config

_LIMITS = frozenset({"max.connections", "max.connections.per.ip",
                     "max.connections.per.ip.overrides"})


class ListenerSecurityMap:
    """The security of every listener by name, rebuilt from the config when a dynamic SSL
    or SASL setting changes (a keystore that does not load refuses the change)."""

    def __init__(self, config: Config, scram: ScramStore) -> None:
        self.config = config
        self.scram = scram
        self.by_name: dict[str, ListenerSecurity] = {}
        self._pending: dict[str, ListenerSecurity] | None = None

    def load(self, names: list[str]) -> list[ListenerSecurity]:
        """Build every listener's security (raises before any listener binds)."""
        self.by_name = {n: listener_security(self.config, n, self.scram) for n in names}
        return [self.by_name[n] for n in names]

    def __getitem__(self, name: str) -> ListenerSecurity:
        return self.by_name[name]

    def reconfigurable(self, name: str) -> bool:
        return name.startswith(("listener.name.", "ssl.", "sasl."))

    def validate_reconfiguration(self, config: Config) -> None:
        self._pending = {n: listener_security(config, n, self.scram) for n in self.by_name}

    def reconfigure(self, config: Config) -> None:
        pending, self._pending = self._pending, None
        self.by_name = pending if pending is not None else {
            n: listener_security(config, n, self.scram) for n in self.by_name}


class NodeListenerSecurity:
    """The listeners' security of the process's other nodes (``kafkalite.nodes``), one
    map per node built from that node's values, so that a node's own level (a keystore
    of its own, ``kafka-configs --entity-name N``) reaches its listeners alone. The first
    node's is the broker's ``ListenerSecurityMap``."""

    def __init__(self, node_config: Callable[[int], Config], scram: ScramStore) -> None:
        self.node_config = node_config
        self.scram = scram
        self.maps: dict[int, ListenerSecurityMap] = {}

    def for_node(self, node_id: int, names: list[str]) -> ListenerSecurityMap:
        """Node ``node_id``'s map, built (and its settings checked) on first use."""
        m = self.maps.get(node_id)
        if m is None:
            m = ListenerSecurityMap(self.node_config(node_id), self.scram)
            m.load(names)
            self.maps[node_id] = m
        return m

    def reconfigurable(self, name: str) -> bool:
        return name.startswith(("listener.name.", "ssl.", "sasl."))

    # The first node's level or the cluster default: every node may take it.
    def validate_reconfiguration(self, config: Config) -> None:
        for node, m in self.maps.items():
            m.validate_reconfiguration(self.node_config(node))

    def reconfigure(self, config: Config) -> None:
        for node, m in self.maps.items():
            m.reconfigure(self.node_config(node))

    def validate_node(self, node_id: int, config: Config) -> None:
        m = self.maps.get(node_id)
        if m is not None:
            m.validate_reconfiguration(config)

    def reconfigure_node(self, node_id: int, config: Config) -> None:
        m = self.maps.get(node_id)
        if m is not None:
            m.reconfigure(config)


class ConnectionLimitsConfigs:
    """``max.connections``, ``max.connections.per.ip`` and its overrides, applied to the
    next connections accepted. Each node counts its own connections under its own
    values (its own dynamic level over the cluster default), as each Kafka broker does."""

    def __init__(self, quotas: Callable[[], Mapping[int, ConnectionQuotas]],
                 node_config: Callable[[int], Config]) -> None:
        self.quotas = quotas
        self.node_config = node_config

    def reconfigurable(self, name: str) -> bool:
        return name in _LIMITS

    def validate_reconfiguration(self, config: Config) -> None:
        Limits.from_config(config)
        for node in self.quotas():
            Limits.from_config(self.node_config(node))

    def reconfigure(self, config: Config) -> None:
        # The first node's level or the cluster default: every node may take it.
        for node, quotas in self.quotas().items():
            quotas.limits = Limits.from_config(self.node_config(node))

    def validate_node(self, node_id: int, config: Config) -> None:
        Limits.from_config(config)

    def reconfigure_node(self, node_id: int, config: Config) -> None:
        quotas = self.quotas().get(node_id)
        if quotas is not None:
            quotas.limits = Limits.from_config(config)
