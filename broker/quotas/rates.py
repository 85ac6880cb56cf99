"""The measurements client quotas are enforced with, as Kafka's metrics library keeps them:
a ``Rate`` over windowed samples (``quota.window.num`` windows of
``quota.window.size.seconds``), a ``TokenBucket`` (controller mutations, KIP-599), and a
``QuotaSensor`` that records into them and reports a violation with its throttle time.

Times are the broker clock's milliseconds, so a manual clock moves them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Window:
    """A quota's window: ``samples`` windows of ``window_ms`` each, and its bound."""

    window_ms: int
    samples: int
    bound: float


def java_round(x: float) -> int:
    """Java's Math.round (half up), which Kafka's throttle times use."""
    return math.floor(x + 0.5)


class _Sample:
    __slots__ = ("last_event_ms", "start_ms", "value")

    def __init__(self, now: int) -> None:
        self.start_ms = now
        self.last_event_ms = now
        self.value = 0.0

    def reset(self, now: int) -> None:
        self.start_ms = now
        self.last_event_ms = now
        self.value = 0.0


class Rate:
    """Kafka's ``Rate`` over a ``WindowedSum``: the sum of the retained samples divided by
    the time they span, taken as at least ``samples - 1`` full windows."""

    __slots__ = ("_current", "_samples")

    def __init__(self) -> None:
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, w: Window, value: float, now: int) -> None:
        sample = self._current_sample(now)
        if now - sample.start_ms >= w.window_ms:
            # One extra sample is kept: the oldest may still overlap the measured span.
            self._current = (self._current + 1) % (w.samples + 1)
            if self._current >= len(self._samples):
                sample = _Sample(now)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.reset(now)
        sample.value += value
        sample.last_event_ms = now

    def _current_sample(self, now: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now))
        return self._samples[self._current]

    def _purge(self, w: Window, now: int) -> None:
        expire = w.samples * w.window_ms
        for s in self._samples:
            if now - s.last_event_ms >= expire:
                s.reset(now)

    def window_size(self, w: Window, now: int) -> int:
        """The span the rate is measured over, in ms (Rate.windowSize)."""
        self._purge(w, now)
        if not self._samples:
            self._samples.append(_Sample(now))
        oldest = min(s.start_ms for s in self._samples)
        elapsed = now - oldest
        full = elapsed // w.window_ms
        if full < w.samples - 1:
            elapsed += (w.samples - 1 - full) * w.window_ms
        return max(elapsed, 1)

    def measure(self, w: Window, now: int) -> float:
        return self.total(w, now) / (self.window_size(w, now) / 1000.0)

    def total(self, w: Window, now: int) -> float:
        """The sum of the retained samples (Kafka's WindowedSum)."""
        self._purge(w, now)
        return sum(s.value for s in self._samples)


class Avg:
    """Kafka's ``Avg`` over the same windows: the mean of the values recorded in the
    retained samples, NaN when there are none (a quota's throttle-time)."""

    __slots__ = ("_counts", "_values")

    def __init__(self) -> None:
        self._values = Rate()
        self._counts = Rate()

    def record(self, w: Window, value: float, now: int) -> None:
        self._values.record(w, value, now)
        self._counts.record(w, 1.0, now)

    def measure(self, w: Window, now: int) -> float:
        count = self._counts.total(w, now)
        return self._values.total(w, now) / count if count else math.nan


class TokenBucket:
    """Kafka's ``TokenBucket``: ``bound`` tokens a second, up to a burst of
    ``samples * window`` seconds' worth; a record takes its value in tokens."""

    __slots__ = ("_last_ms", "tokens")

    def __init__(self) -> None:
        self.tokens = 0.0
        self._last_ms = 0

    def _refill(self, w: Window, now: int) -> float:
        burst = w.samples * (w.window_ms / 1000.0) * w.bound
        self.tokens = min(burst, self.tokens + w.bound * ((now - self._last_ms) / 1000.0))
        self._last_ms = now
        return burst

    def measure(self, w: Window, now: int) -> float:
        self._refill(w, now)
        return self.tokens

    def record(self, w: Window, value: float, now: int) -> None:
        burst = self._refill(w, now)
        self.tokens = min(burst, self.tokens - value)


class RateSensor:
    """A rate with an upper bound (a byte rate, request time, connection creations)."""

    __slots__ = ("last_ms", "max_throttle_ms", "rate", "window")

    def __init__(self, window: Window, max_throttle_ms: int | None = None,
                 now: int = 0) -> None:
        self.window = window
        self.rate = Rate()
        #: The last record: a sensor unused for an hour is dropped (Kafka's expiry).
        self.last_ms = now
        #: The request and connection quotas cap a throttle at one window.
        self.max_throttle_ms = max_throttle_ms

    def record(self, value: float, now: int, check: bool = True) -> int:
        """Record ``value``; the throttle time in ms when the rate is now past the bound
        (QuotaUtils.throttleTime), else 0."""
        w = self.window
        self.last_ms = now
        self.rate.record(w, value, now)
        if not check:
            return 0
        measured = self.rate.measure(w, now)
        if measured <= w.bound:
            return 0
        if w.bound <= 0:  # Kafka's division gives infinity, bounded below
            ms = 2**31 - 1
        else:
            ms = java_round((measured - w.bound) / w.bound * self.rate.window_size(w, now))
        if self.max_throttle_ms is not None:
            ms = min(ms, self.max_throttle_ms)
        return ms


class MutationSensor:
    """Controller mutations: a rate (reported only) and the token bucket the quota is on."""

    __slots__ = ("bucket", "last_ms", "rate", "window")

    def __init__(self, window: Window, now: int = 0) -> None:
        self.window = window
        self.rate = Rate()
        self.bucket = TokenBucket()
        self.last_ms = now

    def _throttle(self, now: int) -> int:
        tokens = self.bucket.measure(self.window, now)
        if tokens >= 0:
            return 0
        return java_round(-tokens / self.window.bound * 1000)

    def check(self, now: int) -> int:
        """Throttle time if the bucket is already in debt (strict quotas refuse then)."""
        return self._throttle(now)

    def record(self, permits: float, now: int, check: bool) -> int:
        self.last_ms = now
        self.rate.record(self.window, permits, now)
        self.bucket.record(self.window, permits, now)
        return self._throttle(now) if check else 0
