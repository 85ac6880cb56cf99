"""Random ConsumerGroupHeartbeat sequences through the real core and runtime (manual clock):
clients join, heartbeat, revoke promptly or late, lose responses, change subscriptions,
leave or die (their session expires); topics grow and appear. After every step no
partition is owned by two members on the server nor held by two clients; once everyone
keeps acknowledging, the group converges to its target; a reload gives the same state."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.coordinator.consumer.group import ConsumerGroupState, MemberState
from kafkalite.protocol.errors import ErrorCode as E

from .consumer_helpers import held
from .harness import Harness, check_replay, topic_id

SESSION = 60_000
#: Long enough never to fence a slow revoker: a fenced client that still consumes is a
#: zombie by design, outside this property.
REBALANCE = 10**9
TP = tuple[uuid.UUID, int]


@dataclass
class Client:
    member_id: str
    names: list[str]
    regex: str | None
    epoch: int = 0
    held: set[TP] = field(default_factory=set)
    revoking: set[TP] = field(default_factory=set)
    #: What the last heartbeat reported owning: as clients do, an unchanged set is not
    #: sent again (the coordinator's steady-state path answers those heartbeats).
    reported: set[TP] | None = None
    #: The last response was lost: as the Java client (heartbeat state reset on a failed
    #: request) and librdkafka (its send-full-request flag) do, the next heartbeat sends
    #: every field, and the coordinator answers a full request with the assignment.
    full: bool = False

    def owned(self) -> list[tuple[uuid.UUID, list[int]]]:
        by: dict[uuid.UUID, list[int]] = {}
        for t, p in sorted(self.held):
            by.setdefault(t, []).append(p)
        return list(by.items())


class Cluster:
    def __init__(self, assignor: str) -> None:
        self.h = Harness.make(topics={"a": 3, "b": 5}, consumer_session_timeout_ms=SESSION,
                              regex_refresh_interval_ms=0)
        self.assignor = assignor
        self.clients: dict[str, Client] = {}

    def heartbeat(self, mid: str, lose: bool = False, revoke: bool = True) -> None:
        c = self.clients[mid]
        self.h.now += 1
        if c.epoch == 0:
            r = self.h.cg(mid, 0, names=c.names, regex=c.regex, rebalance=REBALANCE,
                          assignor=self.assignor)
            c.reported = set()
        elif c.full:
            r = self.h.cg(mid, c.epoch, names=c.names, regex=c.regex, rebalance=REBALANCE,
                          assignor=self.assignor, owned=c.owned())
            c.reported = set(c.held)
        else:
            same = c.reported == c.held
            r = self.h.cg(mid, c.epoch, owned=None if same else c.owned())
            c.reported = set(c.held)
        c.full = False
        if r.error in (E.fenced_member_epoch, E.unknown_member_id):
            c.held.clear()
            c.revoking.clear()
            c.epoch = 0
            c.reported = None
            return
        assert r.error is E.none, r
        if lose:
            c.full = True
            return
        c.epoch = r.member_epoch
        if r.assignment is not None:
            assigned = {(t, p) for t, ps in r.assignment.items() for p in ps}
            c.revoking = (c.revoking | (c.held - assigned)) & c.held
            c.held |= assigned
        if revoke:
            self.revoke(mid)

    def revoke(self, mid: str) -> None:
        c = self.clients[mid]
        c.held -= c.revoking
        c.revoking.clear()

    def join(self, mid: str, names: list[str], regex: str | None) -> None:
        self.clients[mid] = Client(mid, names, regex)
        self.heartbeat(mid)

    def leave(self, mid: str) -> None:
        c = self.clients.pop(mid)
        if c.epoch > 0:
            self.h.cg(mid, -1)

    def kill(self, mid: str) -> None:
        """The process dies: the others keep heartbeating until its session expires."""
        self.clients.pop(mid)
        for _ in range(2):
            self.h.now += SESSION // 2 + 1
            for other in list(self.clients):
                self.heartbeat(other, revoke=False)
            self.h.advance(0)
        assert mid not in (self.h.cgroup().members if self.h.cgroup() else {})

    def check(self) -> None:
        g = self.h.cgroup()
        server = held(self.h) if g is not None else {}
        seen: dict[tuple[str, int], str] = {}
        for mid, tps in server.items():
            for tp in tps:
                assert tp not in seen, f"{tp} owned by {seen[tp]} and {mid}"
                seen[tp] = mid
        holders: dict[TP, str] = {}
        for mid, c in self.clients.items():
            for tp in c.held:
                assert tp not in holders, f"{tp} held by {holders[tp]} and {mid}"
                holders[tp] = mid

    def converge(self) -> None:
        for _ in range(15):
            for mid in sorted(self.clients):
                self.heartbeat(mid)
                self.check()
        g = self.h.cgroup()
        if not self.clients:
            assert g is None or g.state is ConsumerGroupState.EMPTY
            return
        assert g.state is ConsumerGroupState.STABLE, g.state
        topics = self.h.topics
        wanted: set[TP] = set()
        for mid, c in self.clients.items():
            m = g.members[mid]
            assert m.state is MemberState.STABLE and m.member_epoch == g.assignment_epoch
            assert m.assigned_partitions == g.target_assignment.get(mid, {})
            assert c.held == {(t, p) for t, ps in m.assigned_partitions.items() for p in ps}
            names = set(c.names)
            if c.regex:
                names |= g.resolved_regexes[c.regex].topics
            wanted |= {(topic_id(n), p) for n in names if n in topics
                       for p in range(topics[n])}
        assert set().union(*(c.held for c in self.clients.values())) == wanted


ACTIONS = st.lists(st.one_of(
    st.tuples(st.just("join"), st.integers(0, 4),
              st.sampled_from([["a"], ["b"], ["a", "b"], []]),
              st.sampled_from([None, None, "a.*", "[bc]"])),
    st.tuples(st.just("heartbeat"), st.integers(0, 4), st.booleans(), st.booleans()),
    st.tuples(st.just("revoke"), st.integers(0, 4)),
    st.tuples(st.just("leave"), st.integers(0, 4)),
    st.tuples(st.just("kill"), st.integers(0, 4)),
    st.tuples(st.just("subscribe"), st.integers(0, 4), st.sampled_from([["a"], ["b"]])),
    st.tuples(st.just("grow"), st.sampled_from(["a", "b"]), st.integers(1, 3)),
    st.tuples(st.just("create"), st.sampled_from(["c", "ab"]), st.integers(1, 3)),
), max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ACTIONS, st.sampled_from(["uniform", "range"]))
def test_random_heartbeats_through_the_core(actions: list[tuple], assignor: str  # type: ignore[type-arg]
                                            ) -> None:
    c = Cluster(assignor)
    for action in actions:
        kind = action[0]
        mid = f"m{action[1]}" if kind not in ("grow", "create") else ""
        if kind == "join" and mid not in c.clients:
            c.join(mid, action[2], action[3])
        elif kind == "heartbeat" and mid in c.clients:
            c.heartbeat(mid, lose=action[2], revoke=action[3])
        elif kind == "revoke" and mid in c.clients:
            c.revoke(mid)
        elif kind == "leave" and mid in c.clients:
            c.leave(mid)
        elif kind == "kill" and mid in c.clients:
            c.kill(mid)
        elif kind == "subscribe" and mid in c.clients and c.clients[mid].epoch > 0:
            cl = c.clients[mid]
            cl.names = action[2]
            c.h.now += 1
            full = {"regex": cl.regex, "rebalance": REBALANCE, "assignor": assignor} \
                if cl.full else {}
            r = c.h.cg(mid, cl.epoch, names=cl.names, owned=cl.owned(), **full)
            cl.reported, cl.full = set(cl.held), False
            if r.error is E.none and r.assignment is not None:
                assigned = {(t, p) for t, ps in r.assignment.items() for p in ps}
                cl.epoch = r.member_epoch
                cl.revoking = (cl.revoking | (cl.held - assigned)) & cl.held
                cl.held |= assigned
            elif r.error is E.none:
                cl.epoch = r.member_epoch
        elif kind == "grow":
            c.h.grow_topic(action[1], c.h.topics[action[1]] + action[2])
        elif kind == "create" and action[1] not in c.h.topics:
            c.h.create_topic(action[1], action[2])
        c.check()
    c.converge()
    check_replay(c.h)
