"""The registry as one of the broker's services: built by the broker's composition root
when ``schema.registry.listener`` is set, started after storage (it replays ``_schemas``
from the broker's log), stopped before it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import structlog

from .app import MAX_BODY, Authenticate, build_app, rejection
from .http import HttpProtocol
from .service import Registry
from .store import RegistryState, SchemasTopic

log = structlog.get_logger("kafkalite.schema_registry")


class RegistryServer:
    """Confluent's REST API on ``host:port`` (port 0: any free port)."""

    def __init__(self, host: str, port: int, storage: Any, now_ms: Callable[[], int],
                 auth: Authenticate | None = None) -> None:
        self.host = host
        self.port = port
        self._requested_port = port
        self.state = RegistryState()
        self.topic = SchemasTopic(storage, self.state, now_ms)
        self.registry = Registry(self.state, self.topic)
        self.app = build_app(self.registry, auth)
        self.auth = auth
        self._server: asyncio.AbstractServer | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        records = self.topic.replay()
        loop = asyncio.get_running_loop()
        app = self.app
        self._server = await loop.create_server(
            lambda: HttpProtocol(app, rejection, MAX_BODY), self.host, self._requested_port,
            reuse_address=True)
        self.port = int(self._server.sockets[0].getsockname()[1])
        log.info("schema_registry.listening", url=self.url, records=records,
                 subjects=len(self.state.subjects), auth=self.auth is not None)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
