"""KIP-932's fetch path as the broker holds it: built on first use (the first ShareFetch or
ShareAcknowledge, a share-group offsets request, FindCoordinator for a share-partition
key), or at once by a broker whose ``__share_group_state`` already exists. A broker that
serves no share consumer then imports none of it before it listens."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..handlers.data.share_fetch import ShareRequests
    from .manager import SharePartitionManager
    from .offsets_store import ManagerOffsetsStore
    from .stats import ShareCounters


class BuiltShare:
    """The built path: the two handlers' state, the offsets APIs' store, the counters."""

    __slots__ = ("counters", "requests", "store")

    def __init__(self, requests: ShareRequests, store: ManagerOffsetsStore,
                 counters: ShareCounters) -> None:
        self.requests = requests
        self.store = store
        self.counters = counters


class SharePath:
    def __init__(self, build: Callable[[], BuiltShare]) -> None:
        self._build = build
        self._built: BuiltShare | None = None

    @property
    def built(self) -> bool:
        return self._built is not None

    def get(self) -> BuiltShare:
        if self._built is None:
            self._built = self._build()
        return self._built

    @property
    def requests(self) -> ShareRequests:
        return self.get().requests

    @property
    def store(self) -> ManagerOffsetsStore:
        return self.get().store

    @property
    def manager(self) -> SharePartitionManager:
        return self.get().requests.manager

    def disconnected(self, connection_id: int) -> None:
        """A connection closed: the share sessions it opened end (none before any)."""
        if self._built is not None:
            self._built.requests.disconnected(connection_id)

    def totals(self) -> Counter[str]:
        """The share-partitions' counters for ``/metrics`` (none counted before any)."""
        return Counter() if self._built is None else self._built.counters.totals()
