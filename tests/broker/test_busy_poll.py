"""The busy poll after answers (broker/busy_poll.py): it ends as soon as a watched socket
is readable, runs out its window otherwise, and backs off after empty windows. Real
sockets and a real loop; a counting clock stands for time, so nothing here sleeps."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest

from kafkalite.broker.busy_poll import BusyPoll


class CountingClock:
    """Each read is one microsecond after the one before."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.reads / 1e6


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    lp = asyncio.new_event_loop()
    yield lp
    lp.close()


def run_answers(poll: BusyPoll, count: int, writes: int = 1) -> None:
    """``count`` loop iterations that each write ``writes`` answers, then run what was
    scheduled."""
    for _ in range(count):
        for _ in range(writes):
            poll.answered()
        poll.loop.run_until_complete(asyncio.sleep(0))


def make(loop: asyncio.AbstractEventLoop, window_us: int = 100, cpus: int = 2
         ) -> tuple[BusyPoll, CountingClock]:
    clock = CountingClock()
    return BusyPoll(window_us, loop, clock=clock, cpus=cpus), clock


def test_a_readable_socket_ends_the_window_at_once(
        loop: asyncio.AbstractEventLoop, pair: tuple[socket.socket, socket.socket]) -> None:
    poll, clock = make(loop)
    server, client = pair
    poll.watch(server.fileno())
    client.send(b"next request")
    run_answers(poll, 3, writes=2)  # two writes in one iteration: one poll
    assert (poll.hits, poll.misses) == (3, 0)
    # One clock read for the deadline and none after: the first look saw the request.
    assert clock.reads == 3
    poll.close()


def test_an_empty_window_runs_out_then_polling_backs_off(
        loop: asyncio.AbstractEventLoop, pair: tuple[socket.socket, socket.socket]) -> None:
    poll, clock = make(loop, window_us=100)
    server, _client = pair
    poll.watch(server.fileno())
    run_answers(poll, 1)
    assert (poll.hits, poll.misses) == (0, 1)
    assert clock.reads == 1 + 100  # the deadline, then one read per empty look
    # After one miss the next 2 chances are skipped, after the second 4, and so on.
    polled = []
    for _ in range(40):
        before = poll.misses
        run_answers(poll, 1)
        polled.append(poll.misses - before)
    assert polled[:8] == [0, 0, 1, 0, 0, 0, 0, 1]
    poll.close()


def test_a_request_in_a_window_resets_the_back_off(
        loop: asyncio.AbstractEventLoop, pair: tuple[socket.socket, socket.socket]) -> None:
    poll, _clock = make(loop)
    server, client = pair
    poll.watch(server.fileno())
    run_answers(poll, 1)  # a miss: 2 chances skipped
    run_answers(poll, 2)
    client.send(b"x")
    run_answers(poll, 1)
    assert (poll.hits, poll.misses) == (1, 1)
    run_answers(poll, 3)  # readable still (nobody read it): every chance polls, and hits
    assert (poll.hits, poll.misses) == (4, 1)
    poll.close()


def test_no_poll_with_one_cpu(loop: asyncio.AbstractEventLoop) -> None:
    poll, _clock = make(loop, cpus=1)
    assert not poll.enabled
    run_answers(poll, 3)
    assert (poll.hits, poll.misses) == (0, 0)


def test_a_closed_socket_leaves_the_set_and_its_number_can_be_watched_again(
        loop: asyncio.AbstractEventLoop) -> None:
    poll, _clock = make(loop)
    a, b = socket.socketpair()
    fd = a.fileno()
    poll.watch(fd)
    a.close()
    b.close()
    c, d = socket.socketpair()
    try:
        poll.watch(c.fileno())  # often the same number: re-registered, not an error
        poll.watch(d.fileno())
        d.send(b"x")
        run_answers(poll, 1)
        assert poll.hits == 1
    finally:
        c.close()
        d.close()
        poll.close()
