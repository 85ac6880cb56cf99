"""Keyed timers (the purgatory): one deadline per key, kept in a heap.

Re-scheduling a key to a later deadline (every heartbeat) only updates a dict: the old heap
entry stays and is pushed back to the key's current deadline when it surfaces, so a
heartbeat costs O(1) amortised instead of a heap push per call.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable

#: Keys are tuples such as ("heartbeat", group, member), ("join", group), ("sync", group).
Key = Hashable


class Timers:
    __slots__ = ("_deadlines", "_heap", "_seq", "pushes")

    def __init__(self) -> None:
        self._deadlines: dict[Key, int] = {}
        self._heap: list[tuple[int, int, Key]] = []
        self._seq = itertools.count()
        #: Heap pushes so far: a caller can tell whether the earliest deadline may have moved.
        self.pushes = 0

    def schedule(self, key: Key, deadline: int) -> None:
        old = self._deadlines.get(key)
        self._deadlines[key] = deadline
        # A later deadline rides on the existing entry; an earlier one needs its own.
        if old is None or deadline < old:
            heapq.heappush(self._heap, (deadline, next(self._seq), key))
            self.pushes += 1

    def cancel(self, key: Key) -> None:
        self._deadlines.pop(key, None)

    def deadline(self, key: Key) -> int | None:
        return self._deadlines.get(key)

    def __contains__(self, key: Key) -> bool:
        return key in self._deadlines

    def __len__(self) -> int:
        return len(self._deadlines)

    def pop_due(self, now: int) -> list[tuple[Key, int]]:
        """(key, deadline) of every key due at ``now``, earliest first; they are removed."""
        out: list[tuple[Key, int]] = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            entry_deadline, seq, key = heapq.heappop(heap)
            current = self._deadlines.get(key)
            if current is None or current < entry_deadline:
                continue  # cancelled, or an earlier entry for this key exists
            if current > entry_deadline:
                heapq.heappush(heap, (current, seq, key))  # moved later: push back
                continue
            del self._deadlines[key]
            out.append((key, current))
        return out

    def next_deadline(self) -> int | None:
        """Earliest heap entry (may be one that will be pushed back when it surfaces)."""
        heap = self._heap
        while heap:
            entry_deadline, _seq, key = heap[0]
            current = self._deadlines.get(key)
            if current is None or current < entry_deadline:
                heapq.heappop(heap)
                continue
            if current > entry_deadline:
                heapq.heapreplace(heap, (current, _seq, key))
                continue
            return entry_deadline
        return None
