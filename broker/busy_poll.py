"""A short busy poll after the broker answers, so a client's next request finds it awake.

A client that sends one request at a time (``commitSync`` in a loop, a test calling an
admin API, a producer flushing every record) waits a full round trip per request. On a
loopback connection much of that round trip is the kernel waking a process that went to
sleep in ``epoll_wait``, which costs several times what handling an OffsetFetch does
(docs/benchmarks.md, "Busy poll", has the figures). So for up to
``socket.busy.poll.us`` after an answer the event loop does not sleep: a callback that
re-schedules itself keeps it turning, and each turn polls the sockets without a timeout
(as the loop does whenever callbacks are ready). A request that arrives within the window
is read on the next turn, with no wake-up; timers and other callbacks run between turns as
they always do. Linux's ``SO_BUSY_POLL`` does the same below the socket layer for network
cards, not for loopback.

The poll costs CPU while it waits, so it runs only where it pays. Only small answers
start one: a large one, such as a Fetch of many records, is followed by the client's
processing of it, and polling then would take CPU the client needs. And it backs off:
after a window in which no request came the next 2, 4, ... up to 64 chances to poll are
skipped, and a window that sees a request resets that. An idle broker never polls; a
broker whose clients pause between requests polls once in 64 answers. It is off with
fewer than two CPUs (the affinity mask, or a container's quota), where the poll would hold
the CPU the client needs to send.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

#: After this many empty windows in a row, one chance in 2**n is taken, up to 1 in 64.
_MAX_SKIP = 64
#: Answers larger than this do not start a poll: the client's next request follows its
#: processing of them (a consumer's Fetch of many records), long after any window, and a
#: poll would only take CPU from the client.
SMALL_ANSWER = 16 << 10


def usable_cpus(cpu_max: str = "/sys/fs/cgroup/cpu.max") -> float:
    """The CPUs this process may run on, as a container's CPU quota (cgroup v2) limits
    them too: ``docker run --cpus 1`` leaves every CPU in the affinity mask."""
    try:
        cpus: float = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
    try:
        quota, period = open(cpu_max).read().split()
        if quota != "max":
            cpus = min(cpus, int(quota) / int(period))
    except (OSError, ValueError):
        pass
    return cpus


class BusyPoll:
    """Keeps the loop polling for ``window_us`` after the last small answer.

    ``answered(size)`` is called on every write of responses: it opens a window, or
    moves the end of the open one, so a client answered within the window is caught
    again on its next request.
    """

    def __init__(
        self, window_us: int, loop: asyncio.AbstractEventLoop, *,
        clock: Callable[[], float] = time.perf_counter, cpus: float | None = None,
    ) -> None:
        usable = (cpus if cpus is not None else usable_cpus()) >= 2
        self.window = window_us / 1e6 if usable else 0.0
        self.loop = loop
        self._clock = clock
        #: The end of the open window; 0.0 while none is open.
        self._deadline = 0.0
        #: Answers written while the window was open (requests caught by the poll).
        self._caught = 0
        self._misses = 0
        self._skip = 0
        #: Requests answered within an open window, and windows that closed with none.
        self.hits = 0
        self.misses = 0

    @property
    def enabled(self) -> bool:
        return self.window > 0

    def answered(self, size: int) -> None:
        if size > SMALL_ANSWER or not self.window:
            return
        if self._deadline:
            self._caught += 1
            self._deadline = self._clock() + self.window
            return
        if self._skip:
            self._skip -= 1
            return
        self._caught = 0
        self._deadline = self._clock() + self.window
        self.loop.call_soon(self._turn)

    def _turn(self) -> None:
        if self.window and self._clock() < self._deadline:
            self.loop.call_soon(self._turn)
            return
        self._deadline = 0.0
        if self._caught:
            self.hits += self._caught
            self._misses = 0
        else:
            self.misses += 1
            self._misses += 1
            self._skip = min(1 << self._misses, _MAX_SKIP)

    def close(self) -> None:
        """No more windows; an open one ends on its next turn."""
        self.window = 0.0
