"""The segments holding an open descriptor, and the sweep that closes the idle ones.

A segment opens its file on first read or write (``Segment.fd``) and marks itself used
at each access; every ``SWEEP_MS`` the broker's scheduler calls ``sweep``, which closes
the descriptors of segments not used since the sweep before (a clock: one flag per
access, no ordering kept on the hot path). A log idle for one to two sweeps therefore
holds no descriptor; the next fetch or produce reopens its file (one ``open``). A segment
a worker thread reads is pinned and kept open, as closing a descriptor under a ``pread``
could hand its number to another file.

Descriptors are a process resource, so there is one registry per process, shared by the
nodes a process may run.
"""

from __future__ import annotations

import time
from typing import Protocol


class Handle(Protocol):
    used: bool
    pins: int

    def release(self) -> None: ...


#: How often idle descriptors are closed (ms): a log unused for 30-60 s holds none.
SWEEP_MS = 30_000

_open: dict[Handle, None] = {}
#: When the last sweep ran (monotonic s): brokers sharing the process share the sweeps.
_last = [0.0]


def opened(h: Handle) -> None:
    _open[h] = None


def closed(h: Handle) -> None:
    _open.pop(h, None)


def count() -> int:
    """Segments holding an open descriptor."""
    return len(_open)


def sweep(force: bool = False) -> int:
    """Close the descriptors of segments not used since the last sweep; how many. A sweep
    soon after another (several brokers in one process each schedule one) is skipped
    unless ``force``d, so a segment always has about ``SWEEP_MS`` to be used again."""
    now = time.monotonic()
    if not force and now - _last[0] < SWEEP_MS / 2000:
        return 0
    _last[0] = now
    released = 0
    for h in list(_open):
        if h.used or h.pins:
            h.used = False
        else:
            h.release()  # calls ``closed``
            released += 1
    return released


def release_all() -> int:
    """Close every segment's descriptor now (tests; a broker under descriptor pressure)."""
    hs = list(_open)
    for h in hs:
        h.release()
    return len(hs)
