"""Shared fixtures. The broker fixtures come from broker.pytest_plugin (kafkalite_broker,
kafkalite_factory); they are re-exported here under shorter names."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.broker.testing.pytest_plugin import kafkalite_broker, kafkalite_factory  # noqa: F401

from .kafka_reference import KafkaAddress, shared_kafka


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


@pytest.fixture(scope="session")
def kafka_reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaAddress]:
    """A real Apache Kafka (tests/kafka_reference.py), started once for the whole run:
    pytest-xdist workers share one JVM through a file lock in the run's temporary root.
    Fails (never skips) with a clear message when Kafka's jars cannot be resolved."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with shared_kafka(Path(root) / "kafka-reference") as address:
        yield address
