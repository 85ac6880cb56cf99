"""Which replica a consumer is sent to (KIP-392): Kafka's two selectors, the setting
that names them, and the candidates the leader offers them (in-sync, live, holding the
fetch offset), on a real three-node broker's replica logs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkalite.broker.cluster.follower_fetch import FetchReplicas
from kafkalite.broker.cluster.selector import (
    LeaderSelector,
    RackAwareReplicaSelector,
    ReplicaView,
    selector_for,
)
from kafkalite.broker.config.properties import (
    LEADER_SELECTOR,
    RACK_AWARE_SELECTOR,
    Config,
    ConfigError,
)
from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol.errors import ErrorCode

LEADER = ReplicaView(1, "r1", 100, 0)


def test_rack_aware_picks_the_clients_rack_else_the_leader() -> None:
    near = ReplicaView(2, "r2", 100, 10)
    far = ReplicaView(3, "r3", 100, 0)
    select = RackAwareReplicaSelector().select
    assert select("r2", LEADER, [LEADER, near, far]) is near
    assert select("r3", LEADER, [LEADER, near, far]) is far
    # The leader's own rack, a rack with no candidate, no rack: the leader.
    assert select("r1", LEADER, [LEADER, near, far]) is LEADER
    assert select("r9", LEADER, [LEADER, near, far]) is LEADER
    assert select("", LEADER, [LEADER, near, far]) is LEADER
    # Several in the rack: the furthest log end, then the most recently caught up.
    behind = ReplicaView(4, "r2", 90, 0)
    stale = ReplicaView(5, "r2", 100, 500)
    assert select("r2", LEADER, [LEADER, behind, stale, near]) is near


def test_leader_selector_always_answers_the_leader() -> None:
    near = ReplicaView(2, "r2", 100, 0)
    assert LeaderSelector().select("r2", LEADER, [LEADER, near]) is LEADER


def test_selector_setting() -> None:
    def config(value: str | None) -> Config:
        return Config.build(environ={}, overrides={} if value is None
                            else {"replica.selector.class": value})

    assert selector_for(config(None)) is None
    assert isinstance(selector_for(config(LEADER_SELECTOR)), LeaderSelector)
    assert isinstance(selector_for(config(RACK_AWARE_SELECTOR)), RackAwareReplicaSelector)
    with pytest.raises(ConfigError, match=r"replica\.selector\.class: unknown class"):
        config("org.example.Nearest")


def _replicas(broker: BrokerThread, node: int) -> FetchReplicas:
    inner = broker.inner
    manager = inner.replicas
    assert manager is not None
    member = next(m for m in manager.controller.members if m.node_id == node)
    return FetchReplicas(member, manager, inner.storage, RackAwareReplicaSelector())


def test_candidates_are_live_in_sync_replicas_holding_the_offset(
        make_broker: Callable[..., BrokerThread]) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = make_broker({"broker.rack": "r1,r2,r3", "default.replication.factor": "3",
                          "replica.lag.time.max.ms": "5000",
                          "broker.session.timeout.ms": "60000"},
                         nodes=3, manual_clock=True)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("sel", 1, 3)])["sel"].result(10)
    producer = Producer({"bootstrap.servers": ",".join(broker.bootstraps), "acks": "all"})
    for i in range(4):
        producer.produce("sel", b"%d" % i, partition=0)
    assert producer.flush(10) == 0
    leader, replicas, _isr = broker.partition_state("sel", 0)
    follower, other = (n for n in replicas if n != leader)

    def resolve(node: int, offset: int, rack: str, consumer: bool = True
                ) -> tuple[int, int, int]:
        def run() -> tuple[int, int, int]:
            plog, err, preferred = _replicas(broker, node).resolve(
                "sel", 0, offset, -1, consumer, rack)
            return (plog.high_watermark if plog is not None else -1), err, preferred
        return broker.call(run)

    # The leader sends a consumer of a follower's rack to that follower.
    assert resolve(leader, 0, f"r{follower}") == (4, 0, follower)
    assert resolve(leader, 0, f"r{leader}") == (4, 0, -1)
    # A broker's fetch, or an old version's (no client metadata): never redirected,
    # and a follower does not serve it.
    assert resolve(leader, 0, f"r{follower}", consumer=False) == (4, 0, -1)
    assert resolve(follower, 0, "", consumer=False)[1] == ErrorCode.not_leader_or_follower
    # A follower serves a consumer from its own replica.
    assert resolve(follower, 0, "") == (4, 0, -1)
    # An offset past a follower's end: not offered.
    broker.isolate_node(follower)
    leader_only = Producer({"bootstrap.servers": ",".join(broker.bootstraps), "acks": "1"})
    leader_only.produce("sel", b"4", partition=0)
    assert leader_only.flush(10) == 0
    assert resolve(leader, 5, f"r{follower}") == (4, 0, -1)
    assert resolve(leader, 4, f"r{follower}") == (4, 0, follower)
    # Out of the ISR: not offered at all; it still serves what it knew.
    broker.advance(8000)
    assert follower not in broker.partition_state("sel", 0)[2]
    assert resolve(leader, 0, f"r{follower}") == (5, 0, -1)
    assert resolve(follower, 0, "") == (4, 0, -1)
    assert resolve(leader, 0, f"r{other}") == (5, 0, other)
    # A stopped node is not offered, and serves nothing.
    broker.heal_node(follower)
    broker.stop_node(other)
    assert resolve(leader, 0, f"r{other}") == (5, 0, -1)
    assert resolve(leader, 0, f"r{follower}") == (5, 0, follower)
