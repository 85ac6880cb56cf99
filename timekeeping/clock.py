"""The broker's one clock, in milliseconds: every handler, timer and maintenance task reads
it, so replacing it with a manual clock makes all of them follow."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    #: True when time only moves by ``advance``: the scheduler then arms no loop timer.
    manual: bool

    def now_ms(self) -> int: ...


def wall_ms() -> int:
    """The wall clock in milliseconds since the epoch: the one place it is read."""
    return time.time_ns() // 1_000_000


class SystemClock:
    manual = False
    now_ms = staticmethod(wall_ms)


class ManualClock:
    """Starts at ``start_ms`` (the wall clock by default) and moves only by ``advance``."""

    manual = True

    def __init__(self, start_ms: int | None = None) -> None:
        self._now = wall_ms() if start_ms is None else start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("time only moves forward")
        self._now += ms
        return self._now
