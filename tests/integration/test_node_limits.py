"""Connection limits per node in a three-node process: each node counts its own
connections under its own ``max.connections`` (its own dynamic level, set by Kafka's
``kafka-configs --entity-type brokers --entity-name N``, over the cluster default set with
``--entity-default``), as each Kafka broker does. Connections are plain sockets sending
ApiVersions, so the count is exactly what the test opens."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

from kafkalite.broker.testing.fixtures import BrokerThread

from .java_support import run_tool, tools_log_config
from .test_limits import closed_within, served

CONFIGS = "org.apache.kafka.tools.ConfigCommand"


def open_to(address: str) -> socket.socket:
    host, port = address.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=5)
    return s


def accepted(address: str, count: int) -> tuple[int, list[socket.socket]]:
    """Open ``count`` connections to ``address``, one after another: how many were
    served before the first was closed, and the sockets (to be closed by the caller)."""
    socks: list[socket.socket] = []
    for i in range(count):
        s = open_to(address)
        socks.append(s)
        if not served(s, i + 1):
            return i, socks
    return count, socks


def close_all(socks: list[socket.socket]) -> None:
    for s in socks:
        s.close()
    time.sleep(0.3)  # the broker sees the closes before the next count


def test_each_node_counts_its_own_connections_under_its_own_limit(
        make_broker: Callable[..., BrokerThread], tmp_path: Path) -> None:
    broker = make_broker({"max.connections": "3"}, nodes=3)
    node1, node2, node3 = broker.bootstraps
    log = tools_log_config(tmp_path)

    # Three on each node: the limit is each broker's, not the process's.
    n1, s1 = accepted(node1, 3)
    n2, s2 = accepted(node2, 3)
    assert (n1, n2) == (3, 3)
    extra = open_to(node2)
    assert closed_within(extra, 5)
    close_all([*s1, *s2, extra])

    def configs(*args: str) -> None:
        run_tool(CONFIGS, "--bootstrap-server", node1, "--entity-type", "brokers", *args,
                 log_config=log)

    # Node 2's own level: node 2 alone takes it.
    configs("--entity-name", "2", "--alter", "--add-config", "max.connections=1")
    time.sleep(0.3)
    counts = {}
    for name, address in (("1", node1), ("2", node2), ("3", node3)):
        n, socks = accepted(address, 4)
        counts[name] = n
        close_all(socks)
    assert counts == {"1": 3, "2": 1, "3": 3}

    # The cluster default reaches the nodes without a value of their own.
    configs("--entity-default", "--alter", "--add-config", "max.connections=2")
    time.sleep(0.3)
    counts = {}
    for name, address in (("1", node1), ("2", node2), ("3", node3)):
        n, socks = accepted(address, 4)
        counts[name] = n
        close_all(socks)
    assert counts == {"1": 2, "2": 1, "3": 2}

    # Node 2's value dropped: it takes the default; and both survive a restart.
    configs("--entity-name", "2", "--alter", "--delete-config", "max.connections")
    configs("--entity-name", "3", "--alter", "--add-config", "max.connections=4")
    broker.restart()
    node1, node2, node3 = broker.bootstraps
    counts = {}
    for name, address in (("1", node1), ("2", node2), ("3", node3)):
        n, socks = accepted(address, 5)
        counts[name] = n
        close_all(socks)
    assert counts == {"1": 2, "2": 2, "3": 4}
