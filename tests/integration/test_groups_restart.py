"""A broker restarted under a Stable group of real consumers (aiokafka, kafka-python and
confluent-kafka members of one group, eager range): the group comes back from
``__consumer_offsets`` Stable at the same generation, and the consumers, heartbeating
through the restart, keep their partitions with no rebalance."""

from __future__ import annotations

import time
from collections.abc import Callable

from kafkalite.broker.testing.fixtures import BrokerThread

from .group_helpers import (
    FAST_BROKER,
    Member,
    create_topic,
    describe_all,
    group_view,
    stop_all,
    wait_stable,
)

SESSION_MS = 6000


def test_broker_restart_keeps_stable_group(make_broker: Callable[..., BrokerThread]) -> None:
    broker = make_broker(FAST_BROKER)
    topic, group = "t-restart", "g-restart"
    create_topic(broker, topic)
    members = [Member(client, broker.bootstrap, group, topic, session_ms=SESSION_MS,
                      heartbeat_ms=300, name=client)
               for client in ("aiokafka", "kafka-python", "confluent")]
    try:
        before = wait_stable(broker, group, members, what="before restart")
        owned = [m.snapshot() for m in members]

        broker.restart()
        loaded = group_view(broker, group)
        assert loaded is not None, "group not reloaded"
        assert (loaded.state, loaded.generation, loaded.member_ids, loaded.leader_id) == (
            "Stable", before.generation, before.member_ids, before.leader_id), loaded
        # Past one session timeout, every member must still be there: they heartbeat to the
        # restarted broker with their old generation and are accepted.
        time.sleep(SESSION_MS / 1000 + 1)
        after = wait_stable(broker, group, members, what="after restart")
        assert after.generation == before.generation, describe_all(broker, group, members)
        assert (after.leader_id, after.member_ids) == (before.leader_id, before.member_ids)
        assert [m.snapshot() for m in members] == owned, describe_all(broker, group, members)
    finally:
        stop_all(members)
