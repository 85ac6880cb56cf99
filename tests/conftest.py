"""Shared fixtures. The broker fixtures come from broker.pytest_plugin (kafkalite_broker,
kafkalite_factory); they are re-exported here under shorter names."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.broker.testing.pytest_plugin import kafkalite_broker, kafkalite_factory  # noqa: F401


@pytest.fixture
def broker(kafkalite_broker: BrokerThread) -> BrokerThread:  # noqa: F811
    return kafkalite_broker


@pytest.fixture
def make_broker(
    kafkalite_factory: Callable[..., BrokerThread],  # noqa: F811
) -> Callable[..., BrokerThread]:
    return kafkalite_factory


@pytest.fixture
def kafka_bootstrap(
    kafkalite_factory: Callable[..., BrokerThread],  # noqa: F811
) -> str:
    """Bootstrap address for tests that only talk Kafka: ``KAFKALITE_BOOTSTRAP`` names an
    external broker (the compose ``tests`` service sets it), else one is started here."""
    external = os.environ.get("KAFKALITE_BOOTSTRAP")
    if external:
        return external
    return kafkalite_factory().bootstrap
