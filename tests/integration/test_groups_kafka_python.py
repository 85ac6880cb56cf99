"""kafka-python consumers in groups: eager range and KIP-429 cooperative-sticky, and a
static member (group_instance_id) follower restart."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkalite.broker.testing.fixtures import BrokerThread

from .group_helpers import FAST_BROKER, run_lifecycle, run_static_restart


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_kafka_python_join_leave_kill(make_broker: Callable[..., BrokerThread],
                                      strategy: str) -> None:
    run_lifecycle(make_broker(FAST_BROKER), "kafka-python", strategy)


def test_kafka_python_static_member_restart(make_broker: Callable[..., BrokerThread]) -> None:
    run_static_restart(make_broker(FAST_BROKER), "kafka-python", "range")
