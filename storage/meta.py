"""``meta.properties`` in the data directory: the cluster id and node id, kept across restarts."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from .fsutil import atomic_write


def new_cluster_id() -> str:
    # Kafka's cluster ids are base64url of a random UUID without padding (22 chars).
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def load_or_create(data_dir: Path, node_id: int) -> str:
    """Return the cluster id stored in ``data_dir``, creating one on first start."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "meta.properties"
    if path.exists():
        props: dict[str, str] = {}
        for line in path.read_text().splitlines():
            if "=" in line and not line.startswith("#"):
                k, v = line.split("=", 1)
                props[k.strip()] = v.strip()
        if "cluster.id" in props:
            return props["cluster.id"]
    cluster_id = new_cluster_id()
    text = f"#kafkalite\nversion=1\ncluster.id={cluster_id}\nnode.id={node_id}\n"
    atomic_write(path, text.encode())
    return cluster_id
