"""pytest fixtures for projects that test against kafkalite.

``kafkalite_broker`` gives a fresh broker per test (in a background thread, port 0);
``kafkalite_factory({"group.min.session.timeout.ms": "100"})`` starts more, with
Kafka property overrides. ``kafkalite_factory(security=SecuritySetup("SASL_SSL"))``
starts a secured one (certificates, users, optionally ACLs); ``broker.client()`` then
gives the settings a client needs (bootstrap, CA, credentials), e.g.
``Producer(broker.client().librdkafka())``. To secure ``kafkalite_broker`` itself,
override ``kafkalite_security`` in a test module or conftest::

    @pytest.fixture
    def kafkalite_security() -> SecuritySetup:
        return SecuritySetup("SASL_SSL", mechanisms=("SCRAM-SHA-512",))

Every broker takes fault rules from the test (``broker.faults.add("Heartbeat",
error="REBALANCE_IN_PROGRESS", count=1)``, or ``with broker.faults.injected(...):``);
``kafkalite_factory(admin=True)`` also opens the admin HTTP listener (``broker.admin_url``:
JSON API, ``/metrics``, the web console). ``kafkalite_factory(manual_clock=True)`` runs
the broker on a manual clock: ``broker.advance(45_000)`` makes 45 s pass at once (session
expiry, rebalance timeouts, retention all fire). ``broker.scenario("rebalance",
group_id="g")`` forces a coordinator scenario (also ``expire-member``, ``evict-member``,
``fence-static-member``, ``partition-loading``, ``partition-moved``).

``schema_registry_url`` starts a broker that also serves the Schema Registry
(``kafkalite_registry_broker``, whose ``bootstrap`` producers and consumers use) and
gives its base URL, for confluent-kafka's ``SchemaRegistryClient({"url": ...})``;
``kafkalite_factory(schema_registry=True)`` starts more.
``kafkalite_factory(as_version="3.9")`` presents the broker as that Kafka release: its
APIs, versions and feature levels in ApiVersions (``kafkalite.as.version``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ..security.fixture import SecuritySetup
from .fixtures import BrokerThread


@pytest.fixture
def kafkalite_factory(tmp_path: Path) -> Iterator[Callable[..., BrokerThread]]:
    started: list[BrokerThread] = []

    def make(overrides: dict[str, str] | None = None, name: str = "broker",
             security: SecuritySetup | None = None, admin: bool = False,
             manual_clock: bool = False, schema_registry: bool = False,
             as_version: str | None = None, nodes: int = 1) -> BrokerThread:
        b = BrokerThread(tmp_path / f"{name}-{len(started)}", overrides, security,
                         admin=admin, manual_clock=manual_clock,
                         schema_registry=schema_registry, as_version=as_version,
                         nodes=nodes).start()
        started.append(b)
        return b

    yield make
    for b in started:
        b.stop()


@pytest.fixture
def kafkalite_security() -> SecuritySetup | None:
    """The security of ``kafkalite_broker``: none unless a test module overrides this."""
    return None


@pytest.fixture
def kafkalite_broker(kafkalite_factory: Callable[..., BrokerThread],
                     kafkalite_security: SecuritySetup | None) -> BrokerThread:
    return kafkalite_factory(security=kafkalite_security)


@pytest.fixture
def kafkalite_registry_broker(kafkalite_factory: Callable[..., BrokerThread],
                              kafkalite_security: SecuritySetup | None) -> BrokerThread:
    """A broker serving the Schema Registry too (``schema.registry.listener``)."""
    return kafkalite_factory(security=kafkalite_security, schema_registry=True)


@pytest.fixture
def schema_registry_url(kafkalite_registry_broker: BrokerThread) -> str:
    """The Schema Registry's base URL, on a broker started for the test."""
    return kafkalite_registry_broker.schema_registry_url
