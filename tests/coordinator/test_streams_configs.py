"""A streams group's own configs (resource type GROUP) over the broker's
``group.streams.*`` defaults, on the manual clock: ``streams.num.standby.replicas`` in the
assignor, ``streams.acceptable.recovery.lag`` and ``streams.task.offset.interval.ms`` in
the heartbeat's answer, each read per group, as Kafka 4.4's coordinator reads them."""

from __future__ import annotations

from kafkalite.coordinator.streams.group import AssignmentConfigs

from .harness import Harness
from .test_streams_group import APP, hb, make, ready, tasks

OTHER = "other"


class Overrides:
    """Group configs of APP only (the broker's GroupConfigs answers the same way)."""

    def __init__(self, values: dict[str, int]) -> None:
        self.values = values

    def int_value(self, group: str, name: str) -> int | None:
        return self.values.get(name) if group == APP else None


def _make(overrides: Overrides) -> Harness:
    # Broker defaults unlike Kafka's, so a constant standing in for them would show.
    return make(group_overrides=overrides, streams_acceptable_recovery_lag_default=7000,
                streams_task_offset_interval_ms=45_000, streams_num_warmup_replicas_default=1)


def test_recovery_lag_and_task_offset_interval_answered_per_group() -> None:
    ov = Overrides({"streams.acceptable.recovery.lag": 500,
                    "streams.task.offset.interval.ms": 30_000})
    h = _make(ov)
    a = hb(h, "a", 0)
    assert (a.acceptable_recovery_lag, a.task_offset_interval_ms) == (500, 30_000)
    o = hb(h, "o", 0, group=OTHER)
    assert (o.acceptable_recovery_lag, o.task_offset_interval_ms) == (7000, 45_000)
    # A change of the group's config is answered from the next heartbeat on.
    ov.values["streams.acceptable.recovery.lag"] = 0
    assert hb(h, "a", a.member_epoch).acceptable_recovery_lag == 0
    # A leave answers Kafka's defaults of an answer without them.
    left = hb(h, "o", -1, group=OTHER)
    assert (left.acceptable_recovery_lag, left.task_offset_interval_ms) == (-1, 0)


def test_assignment_configs_are_the_groups_own() -> None:
    ov = Overrides({"streams.num.standby.replicas": 1, "streams.num.warmup.replicas": 0,
                    "streams.acceptable.recovery.lag": 250})
    h = _make(ov)
    assert h.core.streams._assignment_configs(APP) == AssignmentConfigs(1, 0, 250)
    assert h.core.streams._assignment_configs(OTHER) == AssignmentConfigs(0, 1, 7000)
    # The group's standby replica reaches the assignor: b, another process, holds one of
    # a's stateful tasks as a standby; the other group, at the broker's 0, has none.
    hb(h, "a", 0)
    ready(h)
    hb(h, "a", 2, frozenset())
    b = hb(h, "b", 0)
    assert b.standby_tasks is not None and len(b.standby_tasks) == 1
    assert b.standby_tasks <= tasks("1_0", "1_1")
    # The internal topics exist already: x gets every task at its join.
    x = hb(h, "x", 0, group=OTHER)
    assert x.active_tasks is not None and len(x.active_tasks) == 4
    y = hb(h, "y", 0, group=OTHER)
    assert y.standby_tasks == frozenset()


def test_a_changed_standby_count_is_a_new_epoch_at_the_next_heartbeat() -> None:
    ov = Overrides({})
    h = _make(ov)
    hb(h, "a", 0)
    ready(h)
    hb(h, "a", 2, frozenset())
    group = h.core.streams_group(APP)
    assert group is not None
    b = hb(h, "b", 0)
    epoch = group.group_epoch
    assert b.standby_tasks == frozenset()
    # Nothing else changes: the group config alone moves the epoch, and b's target now
    # has a standby (Kafka: "Assignment configurations changed").
    ov.values["streams.num.standby.replicas"] = 1
    b = hb(h, "b", b.member_epoch)
    assert group.group_epoch == epoch + 1 and group.target_epoch == epoch + 1
    assert sum(len(t.standby) for t in group.target.values()) == 2
    # Unchanged since: no further epoch.
    hb(h, "b", b.member_epoch)
    assert group.group_epoch == epoch + 1
