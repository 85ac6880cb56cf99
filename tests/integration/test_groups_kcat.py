"""``kcat -G`` balanced consumers (librdkafka's high-level consumer, eager range)."""

from __future__ import annotations

from collections.abc import Callable

from kafkalite.broker.testing.fixtures import BrokerThread

from .group_helpers import FAST_BROKER, run_lifecycle


def test_kcat_join_leave_kill(make_broker: Callable[..., BrokerThread]) -> None:
    run_lifecycle(make_broker(FAST_BROKER), "kcat", "range")
