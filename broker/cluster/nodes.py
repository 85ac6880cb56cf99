"""Several brokers in one process (``kafkalite.nodes`` above 1): node ids 1..N, each with
its own listeners, its own request handlers and its own directory for the partitions it
hosts (``<log.dirs>/nodes/<id>``), sharing one topic catalogue, one coordinator runtime
and one ``Controller`` that says who leads what. The data directory's root keeps what
Kafka's controller keeps in the metadata log (the catalogue, the cluster id, producer ids).

``broker.rack`` names each node's rack: one value for every node, or a comma list with one
value per node, in node id order.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..config.properties import Config, ConfigError
from .controller import Controller
from .identity import Cluster

#: Under the data directory: one directory per node, and the node count it was made with.
NODES_DIR = "nodes"
COUNT_FILE = "count"
#: Under ``nodes``: each partition's leader and ISR (``controller.Controller``).
STATE_FILE = "partitions.json"


def node_count(config: Config) -> int:
    n = config.int("kafkalite.nodes")
    if n < 1:
        raise ConfigError(f"kafkalite.nodes: must be at least 1, got {n}")
    return n


def racks(config: Config, n: int) -> list[str | None]:
    raw = config.raw_or_none("broker.rack")
    if raw is None or not raw.strip():
        return [None] * n
    names = [r.strip() for r in raw.split(",")]
    if len(names) == 1:
        return [names[0]] * n
    if len(names) != n or not all(names):
        raise ConfigError(f"broker.rack: give one rack or one per node ({n}), got {raw!r}")
    return list(names)


def check_layout(data_dir: Path, n: int) -> None:
    """A data directory serves the node count it was made with: the partitions of N
    nodes live in per-node directories, those of one node at the root."""
    count_file = data_dir / NODES_DIR / COUNT_FILE
    if count_file.exists():
        made = int(count_file.read_text().strip() or "0")
        if made != n:
            raise ConfigError(f"kafkalite.nodes: {data_dir} holds a cluster of {made} "
                              f"nodes, not {n}")
        return
    if n > 1:
        count_file.parent.mkdir(parents=True, exist_ok=True)
        count_file.write_text(f"{n}\n")


def build_cluster(config: Config, first: Cluster,
                  state_partition: Callable[[int, str], tuple[str, int]],
                  replicas: Callable[[str, int], tuple[int, ...] | None],
                  leader_epoch: Callable[[str, int], int]) -> Controller:
    """Nodes 2..N beside ``first`` (node 1, whose identity the broker already has), and
    the controller they share; every node's directory goes under the data directory."""
    n = node_count(config)
    root = first.data_dir
    check_layout(root, n)
    names = racks(config, n)
    first.data_dir = root / NODES_DIR / str(first.node_id)
    first.rack = names[0]
    members = [first] + [
        Cluster(first.node_id + i, first.cluster_id, root / NODES_DIR / str(first.node_id + i),
                rack=names[i])
        for i in range(1, n)
    ]
    controller = Controller(members, state_partition, replicas, leader_epoch,
                            root / NODES_DIR / STATE_FILE)
    for m in members:
        m.data_dir.mkdir(parents=True, exist_ok=True)
        m.view = controller
    return controller


def replica_dir(root: Path, node: int, topic: str, partition: int) -> Path:
    return root / NODES_DIR / str(node) / f"{topic}-{partition}"


def place(root: Path, controller: Controller) -> Callable[[str, int], Path]:
    """Where the log handlers use lives: the leader's replica (the preferred replica's
    while the partition has no leader)."""
    def where(topic: str, partition: int) -> Path:
        st = controller.state(topic, partition)
        node = st.leader if st.leader >= 0 else st.replicas[0]
        return replica_dir(root, node, topic, partition)
    return where
