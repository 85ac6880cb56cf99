"""aiokafka consumers (eager range; aiokafka has no cooperative assignor) in groups, and a
static member (group_instance_id) restart, as a follower and as the leader."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkalite.broker.testing.fixtures import BrokerThread

from .group_helpers import FAST_BROKER, run_lifecycle, run_static_restart


def test_aiokafka_range_join_leave_kill(make_broker: Callable[..., BrokerThread]) -> None:
    run_lifecycle(make_broker(FAST_BROKER), "aiokafka", "range")


@pytest.mark.parametrize("role", ["follower", "leader"])
def test_aiokafka_static_member_restart(make_broker: Callable[..., BrokerThread],
                                        role: str) -> None:
    run_static_restart(make_broker(FAST_BROKER), "aiokafka", "range", leader=role == "leader")
