"""The composition root: one table of APIs, typed components, no listener needed."""

from __future__ import annotations

import typing

from kafkalite.broker.server import Broker
from kafkalite.protocol import apis as codecs

from .harness import Handlers


def test_broker_components_are_typed() -> None:
    hints = typing.get_type_hints(Broker.__init__)
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
