"""``share.auto.offset.reset``: where a share-partition starts when it has no state yet.

``latest`` (Kafka's default): the log end; ``earliest``: the log start;
``by_duration:<ISO-8601 duration>`` (``PnDTnHnMn.nS``, as ``java.time.Duration.parse``
takes it, not negative): the first record at or after ``now`` minus the duration, or the
log end when there is none.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(?:T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
    r"(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class OffsetReset:
    #: "latest", "earliest" or "by_duration"
    strategy: str
    #: The duration of ``by_duration``, in ms.
    duration_ms: int = 0


def parse(value: str) -> OffsetReset | None:
    """The strategy named by ``value``, or None when Kafka would refuse it."""
    v = value.strip().lower()
    if v in ("latest", "earliest"):
        return OffsetReset(v)
    if not v.startswith("by_duration:"):
        return None
    text = v[len("by_duration:"):].strip()
    m = _DURATION.fullmatch(text)
    if m is None or m.group(1) == "-" or ("t" in text and text.endswith("t")):
        return None
    days, hours, minutes, seconds, fraction = (m.group(i) for i in (2, 3, 4, 5, 6))
    if not any((days, hours, minutes, seconds)):
        return None
    parts = [int(x) if x else 0 for x in (days, hours, minutes, seconds)]
    if any(p < 0 for p in parts):
        return None
    ms = ((parts[0] * 24 + parts[1]) * 60 + parts[2]) * 60_000 + parts[3] * 1000
    ms += int((fraction or "0").ljust(3, "0")[:3])
    return OffsetReset("by_duration", ms)


def initial_start_offset(reset: OffsetReset, now: int, log_start: int, log_end: int,
                         offset_for_timestamp: Callable[[int], int | None]) -> int:
    """The start offset of a share-partition without state, by ``reset``."""
    if reset.strategy == "earliest":
        return log_start
    if reset.strategy == "by_duration":
        found = offset_for_timestamp(now - reset.duration_ms)
        return log_end if found is None else max(found, log_start)
    return log_end
