"""The share-partitions' counters summed for ``/metrics``: records acquired, redelivered,
acknowledged by type, lock expiries and records archived at the delivery count limit.

Each ``SharePartition`` counts its own (``ShareStats``) from when the manager made it; the
manager drops a share-partition when its group's offsets are altered or deleted, and makes
it again later from zero. So that the totals never go backwards, what a group's
share-partitions had counted is kept when they are dropped (``retire_group``, called
first), and a share-partition found replaced at a scrape keeps what it had counted
then."""

from __future__ import annotations

from collections import Counter

from kafkalite.coordinator.share.partition import SharePartition, ShareStats
from kafkalite.coordinator.share.state_store import ShareKey

from .manager import SharePartitionManager


def _flat(stats: ShareStats) -> Counter[str]:
    out: Counter[str] = Counter({
        "acquired": stats.acquired, "redelivered": stats.redelivered,
        "lock_expiries": stats.lock_expiries, "archived_at_limit": stats.archived_at_limit})
    for ack_type, n in stats.acknowledged.items():
        out[f"ack:{ack_type}"] = n
    return out


class ShareCounters:
    def __init__(self, manager: SharePartitionManager) -> None:
        self.manager = manager
        self._retired: Counter[str] = Counter()
        self._last: dict[ShareKey, tuple[SharePartition, Counter[str]]] = {}

    def retire_group(self, group: str) -> None:
        """``group``'s share-partitions are about to be dropped: keep their counts."""
        for key, sp in list(self.manager.partitions.items()):
            if key[0] == group:
                self._retired.update(_flat(sp.stats))
                self._last.pop(key, None)

    def totals(self) -> Counter[str]:
        """Counter name -> total: ``acquired``, ``redelivered``, ``lock_expiries``,
        ``archived_at_limit`` and ``ack:<TYPE>`` per acknowledgement type."""
        live = dict(self.manager.partitions)
        for key, (sp, counted) in list(self._last.items()):
            if live.get(key) is not sp:
                self._retired.update(counted)  # gone, or made again since
                del self._last[key]
        total = Counter(self._retired)
        for key, sp in live.items():
            counted = _flat(sp.stats)
            self._last[key] = (sp, counted)
            total.update(counted)
        return total
