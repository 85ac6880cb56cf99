"""The composition root: one table of APIs, typed components, no listener needed."""

from __future__ import annotations

import typing

from kafkalite.broker.server import Broker
from kafkalite.protocol import apis as codecs

from .harness import Handlers


def test_broker_components_are_typed() -> None:
    # The parts built on first use are named for the type checker only.
    from kafkalite.broker.share.manager import SharePartitionManager
    from kafkalite.coordinator.txn.transactions import TransactionCoordinatorCore

    hints = typing.get_type_hints(Broker.__init__, localns={
        "TransactionCoordinatorCore": TransactionCoordinatorCore,
        "SharePartitionManager": SharePartitionManager})
    assert all(hint is not typing.Any for hint in hints.values()), hints


async def test_api_versions_lists_exactly_the_route_table(handlers: Handlers) -> None:
    supported = handlers.broker.apis.supported()
    keys = [k for k, _lo, _hi in supported]
    assert len(keys) == len(set(keys))
    # The data, group, offset and admin APIs a client library needs are all routed.
    assert {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 22, 32, 42} <= set(keys)
    resp = await handlers.call(codecs.API_VERSIONS_KEY, 3, client_software_name="t",
                               client_software_version="1")
    assert [(a.api_key, a.min_version, a.max_version) for a in resp.api_keys] == supported


def test_the_deferred_handler_modules_serve_the_versions_the_route_table_lists() -> None:
    """The routes of handler modules imported on their first request list those modules'
    versions from a copy (ApiVersions answers before any is imported): the two agree."""
    import importlib

    from kafkalite.broker.routes import DEFERRED_VERSIONS

    assert DEFERRED_VERSIONS
    for name, versions in DEFERRED_VERSIONS.items():
        module = importlib.import_module(f"kafkalite.broker.handlers.{name}")
        assert module.VERSIONS == versions, name


async def test_the_share_fetch_path_is_built_on_first_use(handlers: Handlers) -> None:
    """A broker no share consumer has used has not built KIP-932's fetch path (nor served
    ``__share_group_state``); FindCoordinator for a share-partition key builds it, and the
    topic's partitions are loaded at once, as a new broker's are."""
    import base64
    import uuid

    from kafkalite.protocol.errors import ErrorCode
    from kafkalite.protocol.names import SHARE_STATE_TOPIC

    runtime = handlers.broker.coordinator
    assert SHARE_STATE_TOPIC not in runtime.topics
    topic_id = uuid.uuid4()
    key = f"g:{base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip('=')}:0"
    resp = await handlers.call(10, 6, key_type=2, coordinator_keys=(key,))
    assert [c.error_code for c in resp.coordinators] == [ErrorCode.none]
    core = runtime.topics[SHARE_STATE_TOPIC].core
    assert core.status(("g", topic_id, 0)) is ErrorCode.none
    assert handlers.broker.share is not None


async def test_the_transaction_coordinator_is_built_on_first_use(handlers: Handlers) -> None:
    """No transactional producer yet: ``__transaction_state`` is not served; FindCoordinator
    for a transactional id builds the coordinator, loaded at once, and InitProducerId is
    answered by it."""
    from kafkalite.protocol.errors import ErrorCode
    from kafkalite.protocol.names import TRANSACTION_STATE_TOPIC

    runtime = handlers.broker.coordinator
    assert TRANSACTION_STATE_TOPIC not in runtime.topics
    resp = await handlers.call(10, 4, key_type=1, coordinator_keys=("t1",))
    assert [c.error_code for c in resp.coordinators] == [ErrorCode.none]
    assert TRANSACTION_STATE_TOPIC in runtime.topics
    init = await handlers.call(22, 4, transactional_id="t1", transaction_timeout=60_000,
                               producer_id=-1, producer_epoch=-1)
    assert init.error_code is ErrorCode.none and init.producer_id >= 0
    assert handlers.broker.transactions.transaction("t1") is not None
