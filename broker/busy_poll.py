"""A short busy poll after the broker answers, so a client's next request finds it awake.

A client that sends one request at a time (``commitSync`` in a loop, a test calling an
admin API, a producer flushing every record) waits a full round trip per request. On a
loopback connection most of that round trip is the kernel waking processes that went to
sleep in ``epoll_wait``: about 35 µs per wake-up on the 2-core machine of
docs/benchmarks.md, against a few µs to handle an OffsetFetch. So after the loop has
written responses, it polls the client connections (``epoll_wait`` with no timeout, on a
private epoll set) for up to ``socket.busy.poll.us`` before going back to sleep: a
request that arrives within the window is read at once, without a wake-up. Linux's
``SO_BUSY_POLL`` does the same below the socket layer for network cards, not for loopback.

The poll costs CPU only while it waits, and it backs off when it does not pay: after a
window that saw nothing, the next 2, 4, ... up to 64 chances to poll are skipped, and
the first window that sees a request resets that. An idle broker never polls; a broker
whose clients pause between requests polls once in 64 answers. It is off on a machine
with one CPU (the poll would hold the CPU the client needs to send) and where
``select.epoll`` does not exist.
"""

from __future__ import annotations

import asyncio
import os
import select
import time
from collections.abc import Callable

#: After this many empty windows in a row, one chance in 2**n is taken, up to 1 in 64.
_MAX_SKIP = 64


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class BusyPoll:
    """Polls the watched sockets for up to ``window_us`` after responses go out.

    ``answered()`` is called on every write of responses; the poll itself runs once per
    loop iteration, as a callback after the ones already ready, so the responses it
    follows have been handed to the kernel.
    """

    def __init__(
        self, window_us: int, loop: asyncio.AbstractEventLoop, *,
        clock: Callable[[], float] = time.perf_counter, cpus: int | None = None,
    ) -> None:
        usable = (cpus if cpus is not None else _usable_cpus()) > 1
        self.window = window_us / 1e6 if usable and hasattr(select, "epoll") else 0.0
        self.loop = loop
        self._clock = clock
        self._epoll = select.epoll() if self.window else None
        self._armed = False
        self._misses = 0
        self._skip = 0
        #: Windows that ended with a socket readable, and windows that ran out.
        self.hits = 0
        self.misses = 0

    @property
    def enabled(self) -> bool:
        return self._epoll is not None

    def watch(self, fd: int) -> None:
        """Poll this socket too. A closed socket leaves the set by itself (epoll drops a
        file on its last close), so there is no unwatch: an explicit one could remove a
        new socket that reused the number."""
        ep = self._epoll
        if ep is None or fd < 0:
            return
        try:
            ep.register(fd, select.EPOLLIN)
        except FileExistsError:
            ep.modify(fd, select.EPOLLIN)

    def answered(self) -> None:
        if self._armed or self._epoll is None:
            return
        if self._skip:
            self._skip -= 1
            return
        self._armed = True
        self.loop.call_soon(self._poll)

    def _poll(self) -> None:
        self._armed = False
        ep = self._epoll
        if ep is None:
            return
        clock = self._clock
        deadline = clock() + self.window
        poll = ep.poll
        while True:
            if poll(0):
                self.hits += 1
                self._misses = 0
                return
            if clock() >= deadline:
                break
        self.misses += 1
        self._misses += 1
        self._skip = min(1 << self._misses, _MAX_SKIP)

    def close(self) -> None:
        if self._epoll is not None:
            self._epoll.close()
            self._epoll = None
