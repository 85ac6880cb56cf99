"""The broker: owns configuration, storage, the coordinator and the listeners."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from kafkalite.storage import meta
from kafkalite.storage.catalog import TopicCatalog, TopicInfo

from .apis import KafkaApis
from .config import Config, Listener, parse_listeners
from .connection import KafkaConnection

log = structlog.get_logger("kafkalite.broker")

Hook = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class BoundListener:
    name: str
    host: str
    port: int
    #: What Metadata tells clients to connect to.
    advertised_host: str
    advertised_port: int


class Broker:
    """A one-node Kafka broker. ``await start()``, then ``await stop()``."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.node_id = config.int("node.id")
        self.data_dir = config.data_dir
        self.cluster_id = ""
        self.apis = KafkaApis()
        self.catalog: TopicCatalog | None = None
        #: storage.manager.LogManager, set when the storage handlers install.
        self.logs: Any = None
        #: The group coordinator runtime, set when the group handlers install.
        self.coordinator: Any = None
        self.listeners: list[BoundListener] = []
        self._servers: list[asyncio.AbstractServer] = []
        self._connections: set[KafkaConnection] = set()
        #: (start, stop) hooks of components, run in order on start and reversed on stop.
        self._services: list[tuple[Hook, Hook]] = []
        self.stopped = asyncio.Event()

    def add_service(self, start: Hook, stop: Hook) -> None:
        self._services.append((start, stop))

    def broker_value(self, prop: str) -> str | None:
        """A broker property the operator set explicitly (for topic config synonyms)."""
        return None if self.config.is_default(prop) else self.config.raw(prop)

    def topic_config(self, topic: str, name: str) -> str:
        """Effective value of a topic config (topic override, broker property, default)."""
        from kafkalite.storage.topic_config import resolve

        info = self.topics.get(topic)
        return resolve(info.configs if info else {}, self.broker_value, name).value

    @property
    def topics(self) -> TopicCatalog:
        assert self.catalog is not None, "broker not started"
        return self.catalog

    def create_topic(
        self, name: str, partitions: int | None = None, configs: dict[str, str] | None = None,
        internal: bool = False,
    ) -> TopicInfo:
        """Create a topic in the catalogue; storage creates its logs on the catalogue event."""
        n = self.config.int("num.partitions") if partitions is None else partitions
        info = self.topics.create(name, n, configs, internal=internal)
        log.info("topic.created", topic=name, partitions=n, topic_id=str(info.topic_id))
        return info

    async def start(self) -> None:
        from .handlers import install_all

        self.cluster_id = meta.load_or_create(self.data_dir, self.node_id)
        self.catalog = TopicCatalog(self.data_dir)
        install_all(self)
        for start, _stop in self._services:
            await start()
        await self._listen()
        log.info(
            "broker.started",
            cluster_id=self.cluster_id,
            node_id=self.node_id,
            data_dir=str(self.data_dir),
            listeners=[f"{b.name}://{b.host}:{b.port}" for b in self.listeners],
        )

    async def _listen(self) -> None:
        loop = asyncio.get_running_loop()
        configured = parse_listeners(self.config.text("listeners"))
        advertised_raw = self.config.text("advertised.listeners")
        advertised = {a.name: a for a in parse_listeners(advertised_raw)} if advertised_raw else {}
        max_size = self.config.int("socket.request.max.bytes")
        for lst in configured:

            def factory(name: str = lst.name) -> KafkaConnection:
                return KafkaConnection(self.apis, max_size, name, self._connections)

            server = await loop.create_server(
                factory,
                lst.host,
                lst.port,
                reuse_address=True,
            )
            self._servers.append(server)
            port = server.sockets[0].getsockname()[1]
            adv: Listener | None = advertised.get(lst.name)
            adv_host = adv.host if adv else lst.host
            if adv_host in ("0.0.0.0", "::", ""):
                adv_host = "127.0.0.1"
            adv_port = adv.port if adv and adv.port else port
            self.listeners.append(BoundListener(lst.name, lst.host, port, adv_host, adv_port))

    @property
    def port(self) -> int:
        """Port of the first listener (handy with port 0)."""
        return self.listeners[0].port

    @property
    def bootstrap(self) -> str:
        b = self.listeners[0]
        return f"{b.advertised_host}:{b.advertised_port}"

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for conn in list(self._connections):
            conn.close()
        for server in self._servers:
            try:
                await asyncio.wait_for(server.wait_closed(), 2)
            except TimeoutError:
                pass
        for _start, stop in reversed(self._services):
            try:
                await stop()
            except Exception:
                log.exception("broker.service_stop_failed")
        self._servers.clear()
        self.stopped.set()
        log.info("broker.stopped", node_id=self.node_id)


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop where available, asyncio's own otherwise."""
    try:
        import uvloop

        loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        return loop
    except ImportError:
        return asyncio.new_event_loop()


async def serve_until_signalled(
    broker: Broker, ready: Callable[[Broker], Any] | None = None
) -> None:
    import signal

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass
    await broker.start()
    if ready is not None:
        ready(broker)
    await stop.wait()
    log.info("broker.stopping", reason="signal")
    await broker.stop()
