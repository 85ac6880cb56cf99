"""The broker's clock as users see it, for the admin API, the CLI and the test fixtures.

``now_ms()`` shows the broker's one clock (the scheduler's) and whether it is manual.
Advancing it from here (HTTP, ``kafkalite ctl clock advance``, the fixtures) is not
offered yet: ``advance()`` refuses with ``ClockNotManual``.
"""

from __future__ import annotations

from typing import Any

from kafkalite.coordinator.clock import Clock


class ClockNotManual(RuntimeError):
    """Time cannot be advanced from outside the broker."""


class ClockControl:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock

    @property
    def manual(self) -> bool:
        return self._clock.manual

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def advance(self, ms: int) -> int:
        raise ClockNotManual("the manual clock is not available: time cannot be advanced "
                             "from outside this broker")

    def to_json(self) -> dict[str, Any]:
        return {"manual": self.manual, "now_ms": self._clock.now_ms()}
