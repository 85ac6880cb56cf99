"""Bounded in-memory time series: a fixed number of points per series, a cap on series.

Each series is a ring of ``points`` samples (one per sampling interval, so the ring holds
the last ``points * interval`` of time) and a ring of marks (rebalances, node stops).
A new series past ``max_series`` is not kept (until one is freed), and a series with
nothing but zeros for a whole window is dropped when the store is pruned:
memory is bounded by ``max_series * (points + marks)`` whatever the broker holds.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any

#: Samples kept per series: with the 2 s interval, the last ten minutes.
POINTS = 300
#: Marks kept per series.
MARKS = 50
#: Series kept per kind (topics, groups, nodes).
MAX_SERIES = 256

Point = dict[str, Any]


class Series:
    __slots__ = ("last_active_ms", "marks", "points")

    def __init__(self, points: int, marks: int) -> None:
        self.points: deque[Point] = deque(maxlen=points)
        self.marks: deque[Point] = deque(maxlen=marks)
        self.last_active_ms = 0

    def to_json(self) -> dict[str, Any]:
        return {"points": list(self.points), "marks": list(self.marks)}


class SeriesStore:
    """One kind of series (all topics, or all groups), keyed by name."""

    def __init__(self, points: int = POINTS, max_series: int = MAX_SERIES,
                 marks: int = MARKS) -> None:
        self.points = points
        self.max_series = max_series
        self.marks = marks
        self._series: OrderedDict[str, Series] = OrderedDict()
        #: Points of new series not kept because ``max_series`` were kept already.
        self.refused = 0

    def __len__(self) -> int:
        return len(self._series)

    def __contains__(self, name: str) -> bool:
        return name in self._series

    def names(self) -> list[str]:
        return list(self._series)

    def get(self, name: str) -> Series | None:
        return self._series.get(name)

    def _series_for(self, name: str, now_ms: int) -> Series | None:
        s = self._series.get(name)
        if s is None:
            if len(self._series) >= self.max_series:
                # Full: the series kept keep their history (evicting the least recent
                # would make every series start over when more than the cap are busy).
                self.refused += 1
                return None
            s = self._series[name] = Series(self.points, self.marks)
        s.last_active_ms = now_ms
        self._series.move_to_end(name)
        return s

    def add(self, name: str, now_ms: int, point: Point, active: bool = True) -> None:
        """Append ``point`` (its time is ``now_ms``). An inactive point (all zero) only
        extends a series that exists, and does not count as activity."""
        if not active:
            s = self._series.get(name)
            if s is None:
                return
        else:
            s = self._series_for(name, now_ms)
            if s is None:
                return
        point["t"] = now_ms
        s.points.append(point)

    def mark(self, name: str, now_ms: int, mark: Point) -> None:
        mark["t"] = now_ms
        s = self._series_for(name, now_ms)
        if s is not None:
            s.marks.append(mark)

    def prune(self, now_ms: int, window_ms: int) -> None:
        """Drop series with no activity for ``window_ms`` (their points are all zeros)."""
        # Least recently active first: stop at the first one still within the window.
        while self._series:
            name, s = next(iter(self._series.items()))
            if now_ms - s.last_active_ms <= window_ms:
                break
            del self._series[name]

    def point_count(self) -> int:
        return sum(len(s.points) + len(s.marks) for s in self._series.values())
