"""Random KIP-848 heartbeat sequences: no partition ever has two owners, and the group
converges to its target assignment once members keep acknowledging."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.coordinator.consumer.group import ConsumerGroupState, MemberState, TopicMetadata

from .kip848_sim import Sim

NAMES = frozenset({"a", "b"})


def topics() -> dict[str, TopicMetadata]:
    return {"a": TopicMetadata(uuid.UUID(int=1), "a", 3),
            "b": TopicMetadata(uuid.UUID(int=2), "b", 5)}


_actions = st.lists(st.one_of(
    st.tuples(st.just("join"), st.integers(0, 5),
              st.sampled_from([frozenset({"a"}), frozenset({"b"}), NAMES, frozenset()]),
              st.sampled_from(["", "", "", "a.*", "[bc]"])),
    st.tuples(st.just("heartbeat"), st.integers(0, 5), st.booleans(), st.booleans()),
    st.tuples(st.just("revoke"), st.integers(0, 5)),
    st.tuples(st.just("leave"), st.integers(0, 5)),
    st.tuples(st.just("subscribe"), st.integers(0, 5),
              st.sampled_from([frozenset({"a"}), frozenset({"b"}), NAMES])),
    st.tuples(st.just("grow"), st.sampled_from(["a", "b"]), st.integers(1, 8)),
    st.tuples(st.just("create"), st.sampled_from(["c", "ab"]), st.integers(1, 4)),
), max_size=40)


def run(sim: Sim, actions: list[tuple]) -> None:  # type: ignore[type-arg]
    for action in actions:
        kind = action[0]
        member = f"m{action[1]}" if kind not in ("grow", "create") else ""
        if kind == "join" and member not in sim.clients:
            sim.join(member, action[2], action[3])
        elif kind == "heartbeat" and member in sim.clients:
            # Lose the response, or keep partitions the server asked back for a while.
            sim.client_heartbeat(member, lose_response=action[2], revoke_now=action[3])
        elif kind == "revoke" and member in sim.clients:
            sim.finish_revocation(member)
        elif kind == "leave" and member in sim.clients:
            sim.leave(member)
        elif kind == "subscribe" and member in sim.clients:
            sim.clients[member].names = action[2]
            sim.client_heartbeat(member)
        elif kind == "grow":
            sim.grow_topic(action[1], action[2])
        elif kind == "create":
            sim.create_topic(action[1], action[2])
        sim.check_exclusive()


def converge(sim: Sim) -> None:
    for _ in range(12):
        for member in sorted(sim.clients):
            sim.client_heartbeat(member)
            sim.check_exclusive()
    g = sim.group
    if not sim.clients:
        assert g.state is ConsumerGroupState.EMPTY
        return
    assert g.state is ConsumerGroupState.STABLE, g.state
    assert g.assignment_epoch == g.group_epoch
    assigned: set[tuple[uuid.UUID, int]] = set()
    for mid, m in g.members.items():
        assert m.state is MemberState.STABLE and m.member_epoch == g.assignment_epoch
        assert m.assigned_partitions == g.target_assignment.get(mid, {})
        assert not m.partitions_pending_revocation
        tps = {(t, p) for t, ps in m.assigned_partitions.items() for p in ps}
        # What the client consumes is exactly what the server assigned.
        assert sim.clients[mid].held == tps
        assigned |= tps
    assert assigned == sim.subscribed_partitions()


@settings(max_examples=120, deadline=None)
@given(_actions, st.sampled_from(["uniform", "range"]))
def test_random_heartbeats_never_share_a_partition_and_converge(
    actions: list[tuple], assignor: str  # type: ignore[type-arg]
) -> None:
    sim = Sim(topics(), assignor)
    run(sim, actions)
    converge(sim)


def test_three_members_then_a_fourth_step_by_step() -> None:
    sim = Sim(topics())
    for m in ("m0", "m1", "m2"):
        sim.join(m, NAMES)
    converge(sim)
    before = {m: set(c.held) for m, c in sim.clients.items()}
    epoch = sim.group.group_epoch
    sim.join("m3", NAMES)
    # The newcomer waits: everything it should get is still owned by the others.
    assert sim.group.group_epoch == epoch + 1
    assert sim.group.members["m3"].state is MemberState.UNRELEASED_PARTITIONS
    assert not sim.clients["m3"].held
    converge(sim)
    after = {m: set(c.held) for m, c in sim.clients.items()}
    moved = {tp for m in before for tp in before[m] - after[m]}
    assert moved == after["m3"] and len(after["m3"]) == 2  # 8 partitions over 4 members


def test_regex_member_picks_up_a_topic_created_later() -> None:
    sim = Sim(topics())
    sim.join("m0", frozenset(), "a.*")
    converge(sim)
    assert {t for t, _ in sim.clients["m0"].held} == {uuid.UUID(int=1)}
    sim.create_topic("ab", 2)
    converge(sim)
    assert len(sim.clients["m0"].held) == 5  # a: 3 partitions, ab: 2
    assert sim.group.resolved_regexes["a.*"].topics == {"a", "ab"}
