"""confluent-kafka (librdkafka) consumers in groups: eager range and cooperative-sticky,
and a static member (group.instance.id) restart under each."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkalite.broker.testing.fixtures import BrokerThread

from .group_helpers import FAST_BROKER, run_lifecycle, run_static_restart


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_confluent_join_leave_kill(make_broker: Callable[..., BrokerThread],
                                   strategy: str) -> None:
    run_lifecycle(make_broker(FAST_BROKER), "confluent", strategy)


@pytest.mark.parametrize("role", ["follower", "leader"])
@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_confluent_static_member_restart(make_broker: Callable[..., BrokerThread],
                                         strategy: str, role: str) -> None:
    run_static_restart(make_broker(FAST_BROKER), "confluent", strategy, leader=role == "leader")
