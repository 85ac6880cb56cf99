"""Handlers without a socket: a broker built by the composition root on a temporary data
directory, its components started but no listener bound; ``call`` sends a decoded
request to the handler registered for the API, as dispatch would after decoding."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafkalite.broker.cluster import BoundListener
from kafkalite.broker.compose import build_broker
from kafkalite.broker.config.properties import Config
from kafkalite.broker.context import RequestContext
from kafkalite.broker.server import Broker
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build
from kafkalite.protocol.headers import RequestHeader
from kafkalite.timekeeping.clock import Clock

#: Short group timeouts, as the integration fixtures use.
DEFAULTS = {
    "group.min.session.timeout.ms": "100",
    "group.initial.rebalance.delay.ms": "0",
}


class Handlers:
    def __init__(self, data_dir: Path, overrides: Mapping[str, str] | None = None,
                 clock: Clock | None = None) -> None:
        config = Config.build(environ={}, overrides={**DEFAULTS, **(overrides or {}),
                                                     "log.dirs": str(data_dir)})
        self.broker: Broker = build_broker(config, clock)
        # What Metadata and FindCoordinator advertise; nothing listens there.
        self.broker.cluster.listeners.append(
            BoundListener("PLAINTEXT", "127.0.0.1", 9092, "127.0.0.1", 9092))
        self._correlation = 0

    async def open(self) -> None:
        await self.broker.open()

    async def close(self) -> None:
        await self.broker.stop()

    def request(self, api_key: int, version: int, **fields: Any) -> Any:
        """A kio request of that version; fields left out take kio's defaults."""
        return build(codecs.codec(api_key, version).request_type, **fields)

    async def call(self, api_key: int, version: int, request: Any = None,
                   client_id: str = "test", **fields: Any) -> Any:
        """The handler's response to ``request`` (or one built from ``fields``), decoded:
        a parked request is awaited, a hand-encoded body is decoded with kio's codec."""
        reg = self.broker.apis.registration(api_key)
        assert reg is not None, f"api {api_key} is not registered"
        assert reg.min_version <= version <= reg.max_version, f"v{version} is not served"
        if request is None:
            request = self.request(api_key, version, **fields)
        self._correlation += 1
        ctx = RequestContext(RequestHeader(api_key, version, self._correlation, client_id, 0),
                             "User:ANONYMOUS", "127.0.0.1", 50000, "PLAINTEXT", 1)
        result = reg.handler(ctx, request)
        if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
            result = await asyncio.wait_for(result, 10)
        if isinstance(result, bytes):
            return codecs.decode_response(api_key, version, result, 0)
        return result
