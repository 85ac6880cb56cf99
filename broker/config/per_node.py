"""The broker properties each node of a several-node process holds for itself.

One ``Config`` serves every node of the process (``kafkalite.nodes``), its values those of
the first node. Kafka's brokers each have their own ``server.properties``, so
DescribeConfigs of a broker shows that broker's id, rack, listeners and log directory:
these are the values the other nodes run with, derived as ``cluster/nodes.py`` and
``server.py`` derive them (the id and configured ports moved up by the node's place, one
rack each from a ``broker.rack`` list, one directory each under the data directory).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .properties import Config, Listener, parse_listeners

if TYPE_CHECKING:
    from ..cluster import Cluster

#: The properties a node holds for itself (every other one is the same on every node).
PER_NODE = ("node.id", "broker.id", "broker.rack", "listeners", "advertised.listeners",
            "log.dirs", "log.dir")


def _shifted(raw: str, index: int) -> str:
    """Listeners with their ports moved up by ``index`` (port 0 stays 0: any free port)."""
    return ",".join(_listener(lst, index) for lst in parse_listeners(raw))


def _listener(lst: Listener, index: int) -> str:
    host = f"[{lst.host}]" if ":" in lst.host else lst.host
    port = lst.port + index if lst.port else 0
    return f"{lst.name}://{host}:{port}"


def node_values(config: Config, node: Cluster) -> dict[str, str]:
    """The per-node properties set for ``node`` that differ from ``config``'s; empty for
    one node, whose values are the configured ones."""
    if config.int("kafkalite.nodes") <= 1:
        return {}
    index = node.node_id - config.int("node.id")
    out: dict[str, str] = {"node.id": str(node.node_id)}
    if config.raw_or_none("broker.id") is not None:
        out["broker.id"] = str(node.node_id)
    if node.rack is not None:
        out["broker.rack"] = node.rack
    for name in ("listeners", "advertised.listeners"):
        raw = config.raw_or_none(name)
        if raw:
            out[name] = _shifted(raw, index)
    for name in ("log.dirs", "log.dir"):
        if config.raw_or_none(name) is not None:
            out[name] = str(node.data_dir)
    return out
