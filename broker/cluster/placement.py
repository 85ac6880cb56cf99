"""Where a new partition's replicas go, as Kafka's ``AdminUtils`` spreads them.

Without racks (``assignReplicasToBrokersRackUnaware``): the first replica of partition
``p`` on the node at ``(start + p) mod N``, the others after it at a shift that grows by
one every N partitions, so leaders and followers both spread round robin.

When every node has a rack (``assignReplicasToBrokersRackAware``): the same walk over the
nodes listed rack by rack in turn (one of each rack, then the next of each), taking a
replica only from a rack that holds none yet, until every rack holds one, and only from a
node that holds none yet. A partition's replicas so span as many racks as its replication
factor allows, and a rack's loss leaves the others with a copy.

Kafka draws ``start`` and the shift at random; here both come from the topic name
(CRC-32), so a topic's placement needs nothing stored to be the same again.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence


def place(topic: str, first: int, count: int, rf: int, ids: Sequence[int],
          racks: Sequence[str | None] | None = None) -> list[list[int]]:
    """Replicas of partitions ``first`` .. ``first + count - 1`` of ``topic``, preferred
    leader first (``rf`` at most ``len(ids)``). ``racks[i]`` is node ``ids[i]``'s rack;
    racks are used only when every node has one, as Kafka's safe rack-aware mode."""
    n = len(ids)
    crc = zlib.crc32(topic.encode())
    start, shift0 = crc % n, (crc >> 16) % n
    if racks is not None and all(racks):
        rack_of = dict(zip(ids, racks, strict=True))
        return _rack_aware(first, count, rf, rack_of, start, shift0)
    out = []
    for p in range(first, first + count):
        shift = shift0 + p // n
        lead = (start + p) % n
        replicas = [ids[lead]]
        for j in range(rf - 1):
            replicas.append(ids[_follower(lead, shift, j, n)])
        out.append(replicas)
    return out


def _follower(lead: int, shift: int, j: int, n: int) -> int:
    return (lead + 1 + (shift + j) % (n - 1)) % n


def rack_alternated(rack_of: dict[int, str | None]) -> list[int]:
    """Nodes one rack at a time in turn, racks and their nodes in order: with racks
    a: 1, 2 and b: 3, the list is 1, 3, 2 (Kafka's ``getRackAlternatedBrokerList``)."""
    by_rack: dict[str, list[int]] = {}
    for node, rack in sorted(rack_of.items()):
        by_rack.setdefault(str(rack), []).append(node)
    columns = [by_rack[r] for r in sorted(by_rack)]
    return [col[i] for i in range(max(map(len, columns))) for col in columns if i < len(col)]


def _rack_aware(first: int, count: int, rf: int, rack_of: dict[int, str | None],
                start: int, shift0: int) -> list[list[int]]:
    nodes = rack_alternated(rack_of)
    n, n_racks = len(nodes), len(set(rack_of.values()))
    out = []
    for p in range(first, first + count):
        shift = shift0 + p // n
        lead = (start + p) % n
        replicas = [nodes[lead]]
        racks_used, k = {rack_of[nodes[lead]]}, 0
        while len(replicas) < rf:
            node = nodes[_follower(lead, shift * n_racks, k, n)]
            k += 1
            rack = rack_of[node]
            if (rack not in racks_used or len(racks_used) == n_racks) and (
                    node not in replicas or len(replicas) == n):
                replicas.append(node)
                racks_used.add(rack)
        out.append(replicas)
    return out
