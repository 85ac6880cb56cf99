"""A fake-clock driver for the pure coordinator core: no sockets, no sleeps."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from kafkalite.coordinator.core import CoreConfig, GroupCoordinatorCore
from kafkalite.coordinator.results import PARKED, Outcome
from kafkalite.protocol.consumer_offsets import Key, Value
from kafkalite.protocol.errors import ErrorCode

GROUP = "g"
SESSION = 1000
REBALANCE = 5000
DELAY = 100


class Box:
    """A parked response's waiter: remembers what it was answered."""

    def __init__(self) -> None:
        self.value: Any = None
        self.calls = 0

    def __call__(self, value: Any) -> None:
        self.value = value
        self.calls += 1

    @property
    def done(self) -> bool:
        return self.calls > 0


@dataclass
class Harness:
    core: GroupCoordinatorCore
    now: int = 1_000_000
    written: list[list[tuple[Key, Value | None]]] = field(default_factory=list)
    #: When set, the next appends fail with this error instead of being written.
    fail_with: ErrorCode | None = None

    @classmethod
    def make(cls, **cfg: Any) -> Harness:
        base: dict[str, Any] = dict(
            num_partitions=4, min_session_timeout_ms=10, max_session_timeout_ms=60000,
            initial_rebalance_delay_ms=DELAY,
        )
        base.update(cfg)
        ids = itertools.count(1)
        core = GroupCoordinatorCore(CoreConfig(**base), new_id=lambda: f"id{next(ids)}")
        for p in range(base["num_partitions"]):
            core.begin_load(p)
            core.finish_load(p, 0)
        return cls(core)

    def run(self, out: Outcome) -> Any:
        for waiter, resp in out.replies:
            waiter(resp)
        for w in out.writes:
            err = self.fail_with or ErrorCode.none
            if err is ErrorCode.none:
                self.written.append(w.records)
                for k, v in w.records:
                    self.core.replay(w.partition, k, v)
            if w.then is not None:
                self.run(w.then(err, self.now))
        return out.response

    def advance(self, ms: int) -> None:
        self.now += ms
        self.run(self.core.expire(self.now))

    # --- requests --------------------------------------------------------------------

    def join(self, member_id: str = "", *, group: str = GROUP, instance: str | None = None,
             protocols: list[tuple[str, bytes]] | None = None, session: int = SESSION,
             rebalance: int = REBALANCE, protocol_type: str = "consumer",
             require_known: bool = False, client_id: str = "c") -> Box:
        box = Box()
        resp = self.run(self.core.join(
            self.now, box, group_id=group, member_id=member_id, group_instance_id=instance,
            require_known_member_id=require_known, client_id=client_id,
            client_host="/127.0.0.1", rebalance_timeout_ms=rebalance,
            session_timeout_ms=session, protocol_type=protocol_type,
            protocols=protocols if protocols is not None else [("range", b"m")],
            reason="test",
        ))
        if resp is not PARKED:
            box(resp)
        return box

    def sync(self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None,
             *, group: str = GROUP, instance: str | None = None,
             protocol_type: str | None = None, protocol_name: str | None = None) -> Box:
        box = Box()
        resp = self.run(self.core.sync(
            self.now, box, group_id=group, generation=generation, member_id=member_id,
            group_instance_id=instance, protocol_type=protocol_type,
            protocol_name=protocol_name, assignments=assignments or {},
        ))
        if resp is not PARKED:
            box(resp)
        return box

    def heartbeat(self, member_id: str, generation: int, *, group: str = GROUP,
                  instance: str | None = None) -> ErrorCode:
        return self.core.heartbeat(self.now, group, member_id, instance, generation)

    def leave(self, *members: tuple[str, str | None], group: str = GROUP) -> Any:
        return self.run(self.core.leave(self.now, group, [(m, i, "bye") for m, i in members]))

    def settle(self, boxes: list[Box]) -> None:
        """Advance by the initial delay until every box is answered (each join extends)."""
        for _ in range(100):
            if all(b.done for b in boxes):
                return
            self.advance(DELAY)

    # --- shortcuts -------------------------------------------------------------------

    def group(self, group: str = GROUP) -> Any:
        return self.core.group(group)

    def stable_group(self, n: int, **kw: Any) -> list[str]:
        """Form a Stable group of ``n`` dynamic members; returns their ids, leader first."""
        boxes = [self.join(**kw) for _ in range(n)]
        self.settle(boxes)
        assert all(b.done for b in boxes), [b.value for b in boxes]
        ids = [b.value.member_id for b in boxes]
        g = self.group()
        gen = g.generation
        leader = g.leader_id
        syncs = [self.sync(m, gen, {x: x.encode() for x in ids} if m == leader else None)
                 for m in ids]
        assert all(s.done and s.value.error is ErrorCode.none for s in syncs)
        assert g.state.value == "Stable"
        return [leader] + [m for m in ids if m != leader]
