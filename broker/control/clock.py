"""The broker's clock as users see it, for the admin API, the CLI and the test fixtures.

``now_ms()`` shows the broker's one clock (the scheduler's) and whether it is manual. A
manual clock (``kafkalite serve --manual-clock``, ``kafkalite_factory(manual_clock=True)``)
moves only by ``advance``, which then runs every deadline it crossed — session expiry,
join and rebalance timeouts, the initial delay, offset and log retention, transaction
timeouts — so that time passes in milliseconds of wall time. Call it on the broker's loop.
"""

from __future__ import annotations

from typing import Any

from kafkalite.timekeeping.scheduler import Scheduler


class ClockNotManual(RuntimeError):
    """The broker runs on the system clock: time cannot be advanced from outside."""


class ClockControl:
    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    @property
    def manual(self) -> bool:
        return self._scheduler.clock.manual

    def now_ms(self) -> int:
        return self._scheduler.clock.now_ms()

    def advance(self, ms: int) -> int:
        """Move the manual clock ``ms`` forward and run what became due; the new time."""
        if not self.manual:
            raise ClockNotManual("the broker runs on the system clock: start it with "
                                 "--manual-clock (or manual_clock=True) to advance time")
        if ms < 0:
            raise ValueError("time only moves forward")
        return self._scheduler.advance(ms)

    def to_json(self) -> dict[str, Any]:
        return {"manual": self.manual, "now_ms": self.now_ms()}
