"""The broker's clock as users see it: the system clock, or a manual clock they advance.

The coordinator runtime owns the one clock every handler and timer reads; this wraps it
for the admin API, the CLI and the test fixtures: ``advance(ms)`` moves a manual clock
and then runs whatever became due (session expiry, join and rebalance timeouts, offset
retention), so that time passes in milliseconds of wall time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ClockNotManual(RuntimeError):
    pass


class ClockControl:
    def __init__(self, clock: Callable[[], int], manual: bool) -> None:
        self.clock = clock
        self.manual = manual
        #: Run after each advance, in order (the coordinator runtime's ``run_due``).
        self.after_advance: list[Callable[[], Any]] = []

    def now_ms(self) -> int:
        return self.clock()

    def advance(self, ms: int) -> int:
        if not self.manual:
            raise ClockNotManual("the broker runs on the system clock")
        if ms < 0:
            raise ValueError("time only moves forward")
        advance: Callable[[int], int] = self.clock.advance  # type: ignore[attr-defined]
        advance(ms)
        for fn in self.after_advance:
            fn()
        return self.clock()

    def to_json(self) -> dict[str, Any]:
        return {"manual": self.manual, "now_ms": self.clock()}
