"""Real aiokafka consumers forming a group over TCP."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer

from kafkalite.broker.testing.fixtures import BrokerThread

FAST = {
    "group.min.session.timeout.ms": "100",
    "group.initial.rebalance.delay.ms": "100",
}


async def _wait_assigned(consumers: list[AIOKafkaConsumer], total: int, timeout: float) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        for c in consumers:
            try:
                await asyncio.wait_for(c.getmany(timeout_ms=20), 0.5)
            except TimeoutError:
                pass
        owned = [tp for c in consumers for tp in c.assignment()]
        if len(owned) == total and len(set(owned)) == total and all(c.assignment()
                                                                   for c in consumers):
            return
    raise AssertionError(f"not assigned: {[c.assignment() for c in consumers]}")


def test_two_aiokafka_consumers_split_partitions(make_broker) -> None:  # type: ignore[no-untyped-def]
    b: BrokerThread = make_broker(FAST)
    b.call(lambda: b.broker.create_topic("t4", 4))  # type: ignore[union-attr]

    async def run() -> None:
        cs = [
            AIOKafkaConsumer(
                "t4", bootstrap_servers=b.bootstrap, group_id="g1",
                session_timeout_ms=6000, heartbeat_interval_ms=200,
            )
            for _ in range(2)
        ]
        await asyncio.gather(*(c.start() for c in cs))
        try:
            await _wait_assigned(cs, 4, 20)
            assert [len(c.assignment()) for c in cs] == [2, 2]
            # One leaves: the other takes every partition.
            await cs[1].stop()
            await _wait_assigned(cs[:1], 4, 20)
            g = b.call(lambda: b.broker.groups.core.group("g1"))  # type: ignore[union-attr]
            assert g.state.value == "Stable"
            assert len(g.members) == 1
        finally:
            for c in cs:
                await c.stop()

    asyncio.run(run())
    g = b.call(lambda: b.broker.groups.core.group("g1"))  # type: ignore[union-attr]
    assert g.state.value == "Empty"


def test_stable_group_survives_broker_restart(make_broker) -> None:  # type: ignore[no-untyped-def]
    b: BrokerThread = make_broker(FAST)
    b.call(lambda: b.broker.create_topic("t6", 6))  # type: ignore[union-attr]

    def group_state() -> tuple[str, int, dict[str, bytes]]:
        def read() -> tuple[str, int, dict[str, bytes]]:
            g = b.broker.groups.core.group("rg")  # type: ignore[union-attr]
            return g.state.value, g.generation, {m: x.assignment for m, x in g.members.items()}
        return b.call(read)

    async def run() -> None:
        cs = [
            AIOKafkaConsumer(
                "t6", bootstrap_servers=b.bootstrap, group_id="rg",
                session_timeout_ms=6000, heartbeat_interval_ms=200,
            )
            for _ in range(2)
        ]
        await asyncio.gather(*(c.start() for c in cs))
        try:
            await _wait_assigned(cs, 6, 20)
            before = [set(c.assignment()) for c in cs]
            state, gen, members = group_state()
            assert state == "Stable"
            b.restart()
            # Reloaded from the log: same generation, members and assignments.
            assert group_state() == (state, gen, members)
            loop = asyncio.get_running_loop()
            end = loop.time() + 2.0
            while loop.time() < end:
                for c in cs:
                    await c.getmany(timeout_ms=50)
            assert [set(c.assignment()) for c in cs] == before
            assert group_state() == (state, gen, members)
        finally:
            for c in cs:
                await c.stop()

    asyncio.run(run())
