"""Where a new partition's replicas go, as Kafka's rack-unaware placement spreads them
(``AdminUtils.assignReplicasToBrokersRackUnaware``): the first replica of partition ``p``
on the node at ``(start + p) mod N``, the others after it at a shift that grows by one
every N partitions, so leaders and followers both spread round robin. Kafka draws
``start`` and the shift at random; here both come from the topic name (CRC-32), so a
topic's placement needs nothing stored to be the same again.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence


def place(topic: str, first: int, count: int, rf: int, ids: Sequence[int]) -> list[list[int]]:
    """Replicas of partitions ``first`` .. ``first + count - 1`` of ``topic``, preferred
    leader first (``rf`` at most ``len(ids)``)."""
    n = len(ids)
    crc = zlib.crc32(topic.encode())
    start, shift0 = crc % n, (crc >> 16) % n
    out = []
    for p in range(first, first + count):
        shift = shift0 + p // n
        lead = (start + p) % n
        replicas = [ids[lead]]
        for j in range(rf - 1):
            replicas.append(ids[(lead + 1 + (shift + j) % (n - 1)) % n])
        out.append(replicas)
    return out
