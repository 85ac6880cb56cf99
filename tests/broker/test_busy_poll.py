"""The busy poll after answers (broker/busy_poll.py): a small answer keeps the loop
turning for the window, answers within it extend it, empty windows back off, and other
callbacks run between turns. A real event loop; a settable clock stands for time, so
nothing here sleeps."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.broker.busy_poll import SMALL_ANSWER, BusyPoll, usable_cpus

WINDOW_US = 100


class SetClock:
    def __init__(self) -> None:
        self.now = 1.0

    def __call__(self) -> float:
        return self.now

    def advance_us(self, us: float) -> None:
        self.now += us / 1e6


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    lp = asyncio.new_event_loop()
    yield lp
    lp.close()


def make(loop: asyncio.AbstractEventLoop, cpus: float = 2) -> tuple[BusyPoll, SetClock]:
    clock = SetClock()
    return BusyPoll(WINDOW_US, loop, clock=clock, cpus=cpus), clock


def turn(loop: asyncio.AbstractEventLoop, times: int = 1) -> None:
    """Run the loop ``times`` iterations."""
    for _ in range(times):
        loop.run_until_complete(asyncio.sleep(0))


def is_turning(loop: asyncio.AbstractEventLoop) -> bool:
    # An open window keeps a callback ready: the loop polls without sleeping.
    return bool(loop._ready)  # type: ignore[attr-defined]


def close_window(poll: BusyPoll, loop: asyncio.AbstractEventLoop, clock: SetClock) -> None:
    clock.advance_us(WINDOW_US + 1)
    turn(loop, 2)
    assert not is_turning(loop)


def test_a_small_answer_keeps_the_loop_turning_for_the_window(
        loop: asyncio.AbstractEventLoop) -> None:
    poll, clock = make(loop)
    assert not is_turning(loop)
    poll.answered(100)
    turn(loop, 5)
    assert is_turning(loop)
    clock.advance_us(WINDOW_US - 1)
    turn(loop)
    assert is_turning(loop)
    clock.advance_us(2)
    turn(loop, 2)
    assert not is_turning(loop)
    assert (poll.hits, poll.misses) == (0, 1)


def test_answers_within_the_window_extend_it_and_count_as_caught(
        loop: asyncio.AbstractEventLoop) -> None:
    poll, clock = make(loop)
    poll.answered(100)
    for _ in range(10):  # a client answered within the window, ten times over
        clock.advance_us(WINDOW_US * 0.8)
        turn(loop)
        poll.answered(100)
    turn(loop)
    assert is_turning(loop)  # 8 windows' time since the first answer, still open
    close_window(poll, loop, clock)
    assert (poll.hits, poll.misses) == (10, 0)


def test_empty_windows_back_off_and_a_caught_request_resets_it(
        loop: asyncio.AbstractEventLoop) -> None:
    poll, clock = make(loop)
    opened = []
    for _ in range(12):
        poll.answered(100)
        opened.append(is_turning(loop))
        if is_turning(loop):
            close_window(poll, loop, clock)
    # Open, then 2 skipped, open, 4 skipped, open, ...
    assert opened == [True, False, False, True, False, False, False, False, True,
                      False, False, False]
    assert poll.misses == 3
    for _ in range(5):  # the rest of the 8 skipped after the third miss
        poll.answered(100)
    assert not is_turning(loop)
    poll.answered(100)
    assert is_turning(loop)
    poll.answered(100)  # caught: the back-off is over
    close_window(poll, loop, clock)
    poll.answered(100)
    assert is_turning(loop)
    close_window(poll, loop, clock)
    assert (poll.hits, poll.misses) == (1, 4)


def test_other_callbacks_run_while_the_window_is_open(loop: asyncio.AbstractEventLoop) -> None:
    poll, clock = make(loop)
    ran: list[int] = []
    poll.answered(100)
    turn(loop)
    loop.call_soon(ran.append, 1)
    loop.call_later(0, ran.append, 2)
    turn(loop, 2)
    assert ran == [1, 2] and is_turning(loop)
    close_window(poll, loop, clock)


def test_a_large_answer_opens_no_window(loop: asyncio.AbstractEventLoop) -> None:
    poll, _clock = make(loop)
    poll.answered(SMALL_ANSWER + 1)
    assert not is_turning(loop)
    poll.answered(SMALL_ANSWER)
    assert is_turning(loop)


def test_no_window_with_one_cpu(loop: asyncio.AbstractEventLoop) -> None:
    poll, _clock = make(loop, cpus=1)
    assert not poll.enabled
    poll.answered(100)
    assert not is_turning(loop)


@pytest.mark.parametrize(("cpu_max", "limit"), [("max 100000\n", None),
                                                ("150000 100000\n", 1.5),
                                                ("50000 100000\n", 0.5)])
def test_a_container_quota_limits_the_cpus(tmp_path: Path, cpu_max: str,
                                           limit: float | None) -> None:
    f = tmp_path / "cpu.max"
    f.write_text(cpu_max)
    mask = len(os.sched_getaffinity(0))
    assert usable_cpus(str(f)) == (mask if limit is None else min(mask, limit))
    assert usable_cpus(str(tmp_path / "absent")) == mask


def test_close_ends_an_open_window(loop: asyncio.AbstractEventLoop) -> None:
    poll, _clock = make(loop)
    poll.answered(100)
    turn(loop, 3)
    poll.close()
    turn(loop, 2)
    assert not is_turning(loop) and not poll.enabled
    poll.answered(100)
    assert not is_turning(loop)
