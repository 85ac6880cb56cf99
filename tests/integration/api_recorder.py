"""Record what a running broker's handler for one API was asked and answered: the proof,
from the broker's side, that a client used that API and got a good answer."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from kafkalite.broker.context import RequestContext
from kafkalite.broker.testing.fixtures import BrokerThread


@dataclass
class Calls:
    #: (api version, decoded request, response entity or encoded body) per request.
    seen: list[tuple[int, Any, Any]] = field(default_factory=list)

    @property
    def versions(self) -> list[int]:
        return [v for v, _req, _resp in self.seen]


def record(broker: BrokerThread, api_key: int) -> Calls:
    """Wrap the registered handler of ``api_key`` so every call is kept in the result."""
    assert broker.broker is not None
    reg = broker.broker.apis.registration(api_key)
    assert reg is not None, f"api {api_key} is not served"
    calls = Calls()
    inner = reg.handler

    def recorded(ctx: RequestContext, req: Any) -> Any:
        resp = inner(ctx, req)
        assert not asyncio.iscoroutine(resp) and not isinstance(resp, asyncio.Future)
        calls.seen.append((ctx.api_version, req, resp))
        return resp

    def install() -> None:
        reg.handler = recorded

    broker.call(install)
    return calls
