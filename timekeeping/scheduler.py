"""The scheduler: every deadline of the broker (the purgatory) on the broker's one clock.

One ``Timers`` heap holds the deadlines of every component — group sessions, joins and
syncs, offset retention, log retention, flushes and cleaning. A key is a tuple whose first
element names its kind (``("heartbeat", group, member)``, ``("offsets-retention",)``), and
each kind has one handler. With the system clock a single ``loop.call_at`` handle is armed
for the earliest deadline; with a manual clock nothing waits on the loop: deadlines that are
already due run at the next loop iteration, later ones when ``advance`` moves the clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable

import structlog

from .clock import Clock, ManualClock
from .timers import Timers

log = structlog.get_logger("kafkalite.scheduler")

#: (key, deadline, now): run when the key's deadline has passed.
Handler = Callable[[tuple[Hashable, ...], int, int], None]
#: A periodic task: (now) -> None to run again after its interval, or ms until its next run.
Task = Callable[[int], "int | None"]

#: Bound on handler passes per ``run_due``: handlers that keep scheduling already-due keys
#: must not hold the loop forever.
_MAX_PASSES = 1000


class Scheduler:
    def __init__(self, clock: Clock, timers: Timers | None = None) -> None:
        self.clock = clock
        self.timers = Timers() if timers is None else timers
        self._handlers: dict[str, Handler] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.Handle | None = None
        self._armed_for: int | None = None
        #: ``timers.pushes`` when the handle was armed: with no push since, no deadline
        #: moved earlier, and a handle armed too early only fires and re-arms.
        self._armed_pushes = -1
        self._running = False

    def now(self) -> int:
        return self.clock.now_ms()

    # --- registration --------------------------------------------------------------------

    def handle(self, kind: str, handler: Handler) -> None:
        """Run ``handler`` for every key of ``kind`` whose deadline passes."""
        if kind in self._handlers:
            raise ValueError(f"timer kind {kind!r} already has a handler")
        self._handlers[kind] = handler

    def every(self, kind: str, interval_ms: int | Callable[[], int], task: Task) -> None:
        """Run ``task(now)`` every ``interval_ms`` (a number, or read anew each time), first
        one interval from now; a task may return the delay until its next run instead."""

        def interval() -> int:
            return interval_ms() if callable(interval_ms) else interval_ms

        def fire(key: tuple[Hashable, ...], _deadline: int, now: int) -> None:
            try:
                after = task(now)
            except Exception:
                log.exception("scheduler.task_failed", task=kind)
                after = None
            self.timers.schedule(key, now + max(interval() if after is None else after, 1))

        self.handle(kind, fire)
        self.timers.schedule((kind,), self.now() + max(interval(), 1))

    # --- life cycle ------------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop or asyncio.get_running_loop()
        self._running = True
        self.rearm()

    def stop(self) -> None:
        self._running = False
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._armed_for = None

    # --- running -----------------------------------------------------------------------

    def advance(self, ms: int) -> int:
        """Move a manual clock forward and run what became due; the new time."""
        clock = self.clock
        if not isinstance(clock, ManualClock):
            raise TypeError("the broker runs on the system clock")
        now = clock.advance(ms)
        self.run_due()
        return now

    def run_due(self) -> None:
        """Run the handler of every key due now, until none is (handlers may schedule more)."""
        timers = self.timers
        for _ in range(_MAX_PASSES):
            due = timers.pop_due(self.now())
            if not due:
                break
            now = self.now()
            for key, deadline in due:
                if key in timers:
                    continue  # re-scheduled by an earlier handler in this pass
                assert isinstance(key, tuple)
                handler = self._handlers.get(key[0])
                if handler is None:
                    log.warning("scheduler.unknown_timer", key=repr(key))
                    continue
                try:
                    handler(key, deadline, now)
                except Exception:
                    log.exception("scheduler.handler_failed", key=repr(key))
        self.rearm()

    def rearm(self) -> None:
        """Arm the loop for the earliest deadline (called after anything may have moved it)."""
        if self._handle is not None and self.timers.pushes == self._armed_pushes:
            return  # every commit and fetch ends here: no next_deadline() walk
        if not self._running or self._loop is None:
            return
        deadline = self.timers.next_deadline()
        self._armed_pushes = self.timers.pushes
        if deadline == self._armed_for and self._handle is not None:
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._armed_for = deadline
        if deadline is None:
            return
        delay = deadline - self.now()
        if self.clock.manual:
            if delay <= 0:
                self._handle = self._loop.call_soon(self._fire)
            else:
                self._armed_for = None  # waits for advance()
            return
        loop = self._loop
        self._handle = loop.call_at(loop.time() + max(delay, 0) / 1000.0, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._armed_for = None
        self.run_due()
