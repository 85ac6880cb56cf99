"""A streams group's timers when its partition is loaded (a restart, or the coordinator
moving to another node), as Kafka's ``onLoaded`` arms them: every member's session, and
the rebalance timeout of a member still revoking tasks, from the load on."""

from __future__ import annotations

from kafkalite.coordinator.partitions import streams_rebalance_key, streams_session_key

from .test_streams_group import APP, REBALANCE, SESSION, hb, make, ready, tasks

ALL = tasks("0_0", "0_1", "1_0", "1_1")


def test_a_loaded_member_still_revoking_is_fenced_past_its_rebalance_timeout() -> None:
    h = make()
    hb(h, "a", 0)
    ready(h)
    hb(h, "a", 2, frozenset())
    hb(h, "b", 0)
    hb(h, "a", 3, ALL)  # told to revoke half; it has not yet
    h.advance(1000)
    loaded = h.reload()
    timers = loaded.core.timers
    assert timers.deadline(streams_session_key(APP, "a")) == loaded.now + SESSION
    assert timers.deadline(streams_session_key(APP, "b")) == loaded.now + SESSION
    assert timers.deadline(streams_rebalance_key(APP, "a")) == loaded.now + REBALANCE
    assert timers.deadline(streams_rebalance_key(APP, "b")) is None
    # a keeps heartbeating on the new coordinator without giving the tasks up.
    for _ in range(REBALANCE // 5000 - 1):
        loaded.advance(5000)
        hb(loaded, "a", 3, ALL)
        hb(loaded, "b", 4, frozenset())
    loaded.advance(5000)
    group = loaded.core.streams_group(APP)
    assert group is not None and set(group.members) == {"b"}
    assert hb(loaded, "b", 4, frozenset()).active_tasks == ALL
