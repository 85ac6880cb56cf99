"""The controller's placement and the multi-node settings, without sockets."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.broker.cluster import Cluster
from kafkalite.broker.cluster.controller import NO_LEADER, Controller
from kafkalite.broker.cluster.nodes import check_layout, racks
from kafkalite.broker.cluster.placement import place
from kafkalite.broker.config.properties import Config, ConfigError


def _controller(n: int, rf: int = 1, store: Path | None = None) -> Controller:
    members = [Cluster(i, "c", Path(f"/tmp/{i}")) for i in range(n, 0, -1)]
    ids = tuple(range(1, n + 1))
    return Controller(members, lambda kind, key: ("__consumer_offsets", len(key) % 50),
                      lambda t, p: tuple(place(t, p, 1, rf, ids)[0]), lambda t, p: 0, store)


def test_replicas_spread_as_kafka_places_them() -> None:
    ids = (1, 2, 3, 4)
    got = place("orders", 0, 8, 3, ids)
    # Every partition on three distinct nodes; leaders round robin; each node holds
    # as many replicas as any other.
    assert all(len(set(r)) == 3 for r in got)
    assert sorted(r[0] for r in got) == [1, 1, 2, 2, 3, 3, 4, 4]
    counts = [sum(n in r for r in got) for n in ids]
    assert counts == [6, 6, 6, 6]
    # The followers' shift moves after N partitions, so follower sets differ too.
    assert got[0][1:] != got[4][1:] or got[0][0] != got[4][0]
    assert place("orders", 3, 2, 3, ids) == got[3:5]


def test_elections_take_live_in_sync_replicas_first(tmp_path: Path) -> None:
    c = _controller(3, rf=3, store=tmp_path / "partitions.json")
    st = c.state("t", 0)
    assert st.isr == tuple(sorted(st.replicas)) and st.leader == st.replicas[0]
    first, second, third = st.replicas
    c.stopped.add(first)
    new = c.elect("t", 0, unclean=False)
    assert new.leader == second and new.leader_epoch == 1 and first not in new.isr
    c.set_isr("t", 0, [second])
    c.stopped.add(second)
    # The last in-sync replica gone: no leader, and it stays in the ISR.
    gone = c.elect("t", 0, unclean=False)
    assert gone.leader == NO_LEADER and gone.isr == (second,)
    unclean = c.elect("t", 0, unclean=True)
    assert unclean.leader == third and unclean.isr == (third,)
    # A restarted controller reads who led.
    assert _controller(3, rf=3, store=tmp_path / "partitions.json").leader("t", 0) == third


def test_leaders_spread_round_robin_and_stay_put() -> None:
    c = _controller(3)
    assert [m.node_id for m in c.members] == [1, 2, 3] and c.controller_id == 1
    leaders = [c.leader("orders", p) for p in range(6)]
    # Consecutive partitions on consecutive nodes, every node leading two.
    assert all(leaders[p + 1] == leaders[p] % 3 + 1 for p in range(5))
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3]
    # The placement is a function of the name: a new controller (a restart) agrees.
    assert [_controller(3).leader("orders", p) for p in range(6)] == leaders
    state = c.state("orders", 0)
    assert state.replicas == state.isr == (state.leader,) and state.leader_epoch == 0
    c.forget("orders")
    assert [c.leader("orders", p) for p in range(6)] == leaders


def test_coordinator_is_the_state_partition_leader() -> None:
    c = _controller(3)
    assert c.coordinator(0, "abc") == c.leader("__consumer_offsets", 3)


def test_one_node_leads_everything() -> None:
    one = Cluster(1, "c", Path("/tmp"))
    assert one.leader("t", 7) == 1 and one.coordinator(1, "x") == 1
    assert list(one.members()) == [one] and one.controller_id == 1


def test_racks() -> None:
    def config(value: str | None) -> Config:
        return Config.build(environ={}, overrides={} if value is None
                            else {"broker.rack": value})

    assert racks(config(None), 3) == [None, None, None]
    assert racks(config("a"), 3) == ["a", "a", "a"]
    assert racks(config("a, b,c"), 3) == ["a", "b", "c"]
    with pytest.raises(ConfigError, match=r"broker\.rack"):
        racks(config("a,b"), 3)


def test_node_count_is_checked_and_kept(tmp_path: Path) -> None:
    check_layout(tmp_path, 1)
    assert not (tmp_path / "nodes").exists()
    check_layout(tmp_path, 3)
    check_layout(tmp_path, 3)
    with pytest.raises(ConfigError, match="holds a cluster of 3 nodes, not 2"):
        check_layout(tmp_path, 2)
    with pytest.raises(ConfigError, match=r"kafkalite\.nodes"):
        Config.build(environ={}, overrides={"kafkalite.nodes": "0"})


def test_nodes_listed_rack_by_rack_in_turn() -> None:
    from kafkalite.broker.cluster.placement import rack_alternated

    assert rack_alternated({1: "a", 2: "a", 3: "b"}) == [1, 3, 2]
    assert rack_alternated({4: "c", 1: "b", 2: "a", 3: "a", 5: "b"}) == [2, 1, 4, 3, 5]


@pytest.mark.parametrize(("racks_of", "rf"), [
    (("a", "a", "b", "b"), 2), (("a", "a", "b", "b", "c", "c"), 3),
    (("a", "b", "c", "a", "b", "c"), 2), (("a", "a", "a", "b"), 3)])
def test_replicas_span_racks_when_every_node_has_one(racks_of: tuple[str, ...], rf: int) -> None:
    ids = tuple(range(1, len(racks_of) + 1))
    rack = dict(zip(ids, racks_of, strict=True))
    got = place("orders", 0, 12, rf, ids, racks_of)
    spread = min(rf, len(set(racks_of)))
    for replicas in got:
        assert len(set(replicas)) == rf
        assert len({rack[n] for n in replicas}) == spread, (replicas, rack)
    # Leaders still round robin over every node, and the walk is the same again.
    assert sorted(r[0] for r in got) == sorted(ids * (12 // len(ids)))
    assert place("orders", 5, 3, rf, ids, racks_of) == got[5:8]


def test_racks_are_ignored_unless_every_node_has_one() -> None:
    ids = (1, 2, 3, 4)
    unaware = place("orders", 0, 8, 2, ids)
    assert place("orders", 0, 8, 2, ids, ("a", None, "b", "b")) == unaware
    assert place("orders", 0, 8, 2, ids, None) == unaware
    # Rack-unaware placement of racks a, a, b, b puts some partitions in one rack only.
    rack = {1: "a", 2: "a", 3: "b", 4: "b"}
    assert any(len({rack[n] for n in r}) == 1 for r in place("orders", 0, 12, 2, ids))
