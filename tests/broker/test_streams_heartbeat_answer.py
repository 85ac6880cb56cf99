"""StreamsGroupHeartbeat's answer carries the group's acceptable recovery lag and task
offset interval as the coordinator gives them (the group's configs, else the broker's):
v1's int64 lag, v0's legacy field left 0 as Kafka 4.4 leaves it, Kafka's defaults in an
error answer."""

from __future__ import annotations

import datetime

from kafkalite.broker.handlers.groups.streams_groups import _heartbeat_response
from kafkalite.coordinator.streams.group import StreamsHeartbeatResult
from kafkalite.protocol.errors import NO_ERROR, ErrorCode


def test_the_groups_lag_and_interval_reach_the_answer() -> None:
    res = StreamsHeartbeatResult(NO_ERROR, member_id="m", member_epoch=2,
                                 heartbeat_interval_ms=5000, status=(),
                                 acceptable_recovery_lag=1234, task_offset_interval_ms=20_000)
    v1 = _heartbeat_response(1, res)
    assert int(v1.acceptable_recovery_lag) == 1234
    assert v1.task_offset_interval == datetime.timedelta(milliseconds=20_000)
    assert int(_heartbeat_response(0, res).acceptable_recovery_lag) == 0
    err = _heartbeat_response(1, StreamsHeartbeatResult(ErrorCode.unknown_member_id))
    assert (int(err.acceptable_recovery_lag), err.task_offset_interval) == (
        -1, datetime.timedelta(0))
