"""The keyed heap purgatory."""

from __future__ import annotations

from collections.abc import Hashable

from kafkalite.timekeeping.timers import Timers


def _due(t: Timers, now: int) -> list[Hashable]:
    return [k for k, _deadline in t.pop_due(now)]


def test_schedule_expire_cancel() -> None:
    t = Timers()
    t.schedule("a", 10)
    t.schedule("b", 5)
    t.schedule("c", 20)
    t.cancel("c")
    assert t.next_deadline() == 5
    assert _due(t, 4) == []
    assert _due(t, 10) == ["b", "a"]
    assert _due(t, 100) == []
    assert len(t) == 0 and t.next_deadline() is None


def test_rescheduling_later_pushes_back_without_growing_the_heap() -> None:
    t = Timers()
    t.schedule("hb", 10)
    for i in range(1000):
        t.schedule("hb", 11 + i)  # a heartbeat: deadline moves later
    assert t.pushes == 1
    assert len(t._heap) == 1
    assert _due(t, 500) == []  # surfaced, pushed back to 1010
    assert t.next_deadline() == 1010
    assert _due(t, 1010) == ["hb"]


def test_rescheduling_earlier_fires_once_at_the_new_deadline() -> None:
    t = Timers()
    t.schedule("k", 100)
    t.schedule("k", 50)
    t.schedule("k", 80)
    assert _due(t, 60) == []
    assert _due(t, 80) == ["k"]
    assert _due(t, 1000) == []
    assert "k" not in t
