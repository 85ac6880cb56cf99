"""A streams group's initial rebalance delay (``group.streams.initial.rebalance.delay.ms``
and the group config ``streams.initial.rebalance.delay.ms``) on the manual clock: a member
joining an empty group starts it, every heartbeat until it ends answers ASSIGNMENT_DELAYED
with no tasks and its target is computed when it ends, as Kafka 4.4's coordinator runs it."""

from __future__ import annotations

from typing import Any

from kafkalite.coordinator.partitions import streams_initial_rebalance_key
from kafkalite.coordinator.streams.group import StreamsHeartbeatResult
from kafkalite.coordinator.streams.topology import ASSIGNMENT_DELAYED, MISSING_INTERNAL_TOPICS
from kafkalite.protocol.errors import ErrorCode as E
from kafkalite.protocol.streams_group_records import StreamsGroupTargetAssignmentMetadataKey

from .harness import Harness
from .test_streams_group import APP, NONE, hb, make, ready, tasks

DELAY = 3000
ALL4 = tasks("0_0", "0_1", "1_0", "1_1")
DELAYED_TEXT = "Assignment delayed due to the configured initial rebalance delay."


def codes(res: StreamsHeartbeatResult) -> list[int]:
    return [s.code for s in res.status or ()]


def delayed(h: Harness) -> bool:
    return h.runtime.scheduler.timers.deadline(streams_initial_rebalance_key(APP)) is not None


def test_first_assignment_waits_for_the_delay_then_splits_the_tasks_at_once() -> None:
    h = make(streams_initial_rebalance_delay_ms=DELAY)
    a = hb(h, "a", 0)
    # Kafka's order: the delay, then the topics' status. A new group's first heartbeat
    # takes it to epoch 2; the member reconciles to the initial assignment (epoch 1, empty).
    assert (a.error, a.member_epoch, a.active_tasks) == (E.none, 1, NONE)
    assert codes(a) == [ASSIGNMENT_DELAYED, MISSING_INTERNAL_TOPICS]
    assert a.status is not None and a.status[0].detail == DELAYED_TEXT
    ready(h)
    h.advance(1000)
    b = hb(h, "b", 0)
    assert (b.member_epoch, b.active_tasks, codes(b)) == (1, NONE, [ASSIGNMENT_DELAYED])
    group = h.core.streams_group(APP)
    assert group is not None and group.target_epoch == 1 and group.group_epoch > 1
    assert group.state == "Assigning"
    h.advance(DELAY - 1000 - 1)
    a = hb(h, "a", 1)
    assert (a.member_epoch, a.active_tasks, codes(a)) == (1, None, [ASSIGNMENT_DELAYED])
    before = len(h.written)
    h.advance(1)
    # The delay's end computes the target and writes it; no heartbeat needed.
    assert not delayed(h)
    assert len(h.written) == before + 1
    assert any(isinstance(k, StreamsGroupTargetAssignmentMetadataKey)
               for k, _v in h.written[-1])
    assert group.target_epoch == group.group_epoch
    a, b = hb(h, "a", 1), hb(h, "b", 1)
    # Both members were there: each gets half at once, nothing to revoke first.
    assert a.status == () and b.status == ()
    assert a.member_epoch == b.member_epoch == group.group_epoch
    assert a.active_tasks is not None and b.active_tasks is not None
    assert len(a.active_tasks) == len(b.active_tasks) == 2
    assert a.active_tasks | b.active_tasks == ALL4
    assert group.state == "Stable"


def test_a_group_that_empties_starts_the_delay_again() -> None:
    h = make(streams_initial_rebalance_delay_ms=DELAY)
    hb(h, "a", 0)
    ready(h)
    h.advance(DELAY)
    a = hb(h, "a", 1)
    assert a.active_tasks == ALL4 and not delayed(h)
    hb(h, "a", -1)
    group = h.core.streams_group(APP)
    assert group is not None and not group.members
    empty_epoch = group.group_epoch
    assert group.target_epoch == empty_epoch
    # A member joining the empty group: the delay again; it reconciles to the
    # assignment epoch (the empty group's) with no tasks.
    c = hb(h, "c", 0)
    assert codes(c) == [ASSIGNMENT_DELAYED] and delayed(h)
    assert (c.member_epoch, c.active_tasks) == (empty_epoch, NONE)
    c = hb(h, "c", empty_epoch)
    assert codes(c) == [ASSIGNMENT_DELAYED] and c.active_tasks is None
    h.advance(DELAY)
    c = hb(h, "c", empty_epoch)
    assert c.status == () and c.active_tasks == ALL4
    assert c.member_epoch == group.group_epoch


def test_leaving_during_the_delay_leaves_the_target_to_its_end() -> None:
    h = make(streams_initial_rebalance_delay_ms=DELAY)
    hb(h, "a", 0)
    ready(h)
    hb(h, "b", 0)
    hb(h, "b", -1)
    group = h.core.streams_group(APP)
    assert group is not None and set(group.members) == {"a"}
    assert group.target_epoch == 1 and delayed(h)
    h.advance(DELAY)
    assert group.target_epoch == group.group_epoch
    assert group.target["a"].active == ALL4
    # Every member gone before the end: nothing to compute; the next join waits again.
    h2 = make(streams_initial_rebalance_delay_ms=DELAY)
    hb(h2, "a", 0)
    hb(h2, "a", -1)
    before = len(h2.written)
    h2.advance(DELAY)
    assert len(h2.written) == before and not delayed(h2)
    assert codes(hb(h2, "b", 0))[0] == ASSIGNMENT_DELAYED and delayed(h2)


def test_session_expiry_during_the_delay_keeps_the_target_waiting() -> None:
    h = make(streams_initial_rebalance_delay_ms=100_000)
    hb(h, "a", 0)
    ready(h)
    h.advance(30_000)
    hb(h, "b", 0)
    h.advance(15_000)  # a's session (45 s) ends; b's runs on
    group = h.core.streams_group(APP)
    assert group is not None and set(group.members) == {"b"}
    assert group.target_epoch == 1 and delayed(h)


def test_group_config_sets_the_delay_and_zero_assigns_at_once() -> None:
    class Overrides:
        def __init__(self, values: dict[str, int]) -> None:
            self.values = values

        def int_value(self, group: str, name: str) -> int | None:
            return self.values.get(name) if group == APP else None

    overrides = Overrides({"streams.initial.rebalance.delay.ms": 0})
    kw: dict[str, Any] = dict(streams_initial_rebalance_delay_ms=DELAY,
                              group_overrides=overrides)
    h = make(**kw)
    a = hb(h, "a", 0)
    assert (a.member_epoch, codes(a)) == (2, [MISSING_INTERNAL_TOPICS])
    assert not delayed(h)
    overrides.values["streams.initial.rebalance.delay.ms"] = 500
    h2 = make(**kw)
    hb(h2, "a", 0)
    ready(h2)
    h2.advance(499)
    assert codes(hb(h2, "a", 0)) == [ASSIGNMENT_DELAYED]
    h2.advance(1)
    assert hb(h2, "a", 0).active_tasks == ALL4


def test_a_restart_during_the_delay_assigns_at_the_next_heartbeat() -> None:
    h = make(streams_initial_rebalance_delay_ms=DELAY)
    hb(h, "a", 0)
    ready(h)
    # The delay is a timer, not a record: the reloaded coordinator has none (as Kafka's).
    again = h.reload()
    a = hb(again, "a", 0)
    assert a.status == () and a.active_tasks == ALL4
