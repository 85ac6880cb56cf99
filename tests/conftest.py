"""Shared fixtures. The broker fixtures come from broker.pytest_plugin (kafkalite_broker,
kafkalite_factory); they are re-exported here under shorter names."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from broker.pytest_plugin import kafkalite_broker, kafkalite_factory  # noqa: F401
from broker.testing import BrokerThread


@pytest.fixture
def broker(kafkalite_broker: BrokerThread) -> BrokerThread:  # noqa: F811
    return kafkalite_broker


@pytest.fixture
def make_broker(
    kafkalite_factory: Callable[..., BrokerThread],  # noqa: F811
) -> Callable[..., BrokerThread]:
    return kafkalite_factory
