"""Random request sequences against the core (fake clock): state invariants hold after
every step, and a fresh core rebuilt from the records written holds the live core's whole
persisted state (groups and committed offsets)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.coordinator.classic.states import GroupState
from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit
from kafkalite.protocol import consumer_offsets as co
from kafkalite.protocol.errors import ErrorCode as E

from .harness import GROUP, Harness, check_replay

OPS = st.lists(
    st.tuples(
        st.sampled_from(["join", "rejoin", "rejoin_changed", "sync", "heartbeat", "leave",
                         "advance", "static_join", "commit", "simple_commit",
                         "delete_group"]),
        st.integers(min_value=0, max_value=3),
        st.integers(min_value=1, max_value=1500),
    ),
    min_size=1,
    max_size=40,
)


def _check(h: Harness, last_gen: int) -> int:
    g = h.group()
    if g is None:
        return 0  # deleted: a group of that id starts again from generation 0
    assert g.generation >= last_gen
    if g.members:
        assert g.leader_id in g.members
    else:
        assert g.leader_id is None
    assert g.pending_sync <= set(g.members)
    for mid in g.members:
        assert ("heartbeat", GROUP, mid) in h.core.timers, mid
    for inst, mid in g.static_members.items():
        assert g.members[mid].group_instance_id == inst
    if g.state is GroupState.EMPTY:
        assert not g.members
    if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
        assert g.members and g.protocol_name == "range"
    group_records = [v for records in h.written for k, v in records
                     if isinstance(k, co.GroupMetadataKey) and k.group == GROUP]
    if g.state is GroupState.STABLE and group_records:
        # The last group record describes the Stable generation's members.
        value = group_records[-1]
        if value is not None and value.generation == g.generation:
            assert {m.member_id for m in value.members} == set(g.members)
    return g.generation


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_random_sequences_keep_invariants(ops: list[tuple[str, int, int]]) -> None:
    h = Harness.make()
    ids: dict[int, str] = {}
    gen = 0
    for op, who, ms in ops:
        g = h.group()
        mid = ids.get(who, "")
        if op == "join":
            r = h.join()
            if r.done and r.value.error is E.none:
                ids[who] = r.value.member_id
            elif not r.done:
                ids[who] = next(reversed(h.group().members))
        elif op == "static_join":
            h.join(instance=f"i{who}")
            if g is None:
                g = h.group()
            sid = h.group().static_member_id(f"i{who}")
            if sid is not None:
                ids[who] = sid
        elif op in ("rejoin", "rejoin_changed") and mid:
            inst = g.members[mid].group_instance_id if g and mid in g.members else None
            meta = b"m2" if op == "rejoin_changed" else b"m"
            h.join(mid, instance=inst, protocols=[("range", meta)])
        elif op == "sync" and mid and g is not None:
            inst = g.members[mid].group_instance_id if mid in g.members else None
            h.sync(mid, g.generation, {m: m.encode() for m in g.members}, instance=inst)
        elif op == "heartbeat" and mid and g is not None:
            inst = g.members[mid].group_instance_id if mid in g.members else None
            h.heartbeat(mid, g.generation, instance=inst)
        elif op == "leave" and mid:
            h.leave((mid, None))
        elif op == "advance":
            h.advance(ms)
        elif op == "commit" and mid and g is not None:
            inst = g.members[mid].group_instance_id if mid in g.members else None
            h.run(h.core.commit_offsets(h.now, CommitRequest(
                GROUP, mid, inst, g.generation,
                topics=[("t", [PartitionCommit(who, ms)])])))
        elif op == "simple_commit":
            h.run(h.core.commit_offsets(h.now, CommitRequest(
                f"simple-{who}", topics=[("t", [PartitionCommit(0, ms, -1, "md")])])))
        elif op == "delete_group":
            h.run(h.core.delete_group(h.now, f"simple-{who}" if ms % 2 else GROUP))
        gen = _check(h, gen)
        if ms % 97 == 0:
            check_replay(h)
    check_replay(h)
