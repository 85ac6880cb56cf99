"""The broker: the life cycle of the components the composition root built, and the
listeners."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import structlog

from kafkalite.coordinator.group_service import GroupService
from kafkalite.coordinator.runtime import CoordinatorRuntime, OnDemand
from kafkalite.storage.catalog import TopicCatalog, TopicInfo
from kafkalite.storage.compaction import LogCleaner
from kafkalite.storage.manager import LogManager
from kafkalite.timekeeping.scheduler import Scheduler

from .apis import KafkaApis
from .busy_poll import BusyPoll
from .cluster import BoundListener, Cluster
from .config.dynamic import DynamicBrokerConfig
from .config.listeners import ConnectionLimitsConfigs, ListenerSecurityMap, NodeListenerSecurity
from .config.properties import Config, ConfigError, Listener, parse_listeners
from .connection import KafkaConnection
from .control.clock import ClockControl
from .control.faults import FaultRules
from .control.scenarios import CoordinatorScenarios
from .handlers.data.fetch_session import FetchSessionCache
from .limits import ConnectionQuotas, IdleReaper, Limits
from .metrics import BrokerMetrics
from .security.setup import ListenerSecurity, SecurityState
from .security.tls_accept import TlsAcceptor
from .share.path import SharePath
from .topic_store import Storage

if TYPE_CHECKING:
    from kafkalite.coordinator.txn.transactions import TransactionCoordinatorCore

    from .share.manager import SharePartitionManager

log = structlog.get_logger("kafkalite.broker")

class Service(Protocol):
    """A component with a life cycle: started in build order, stopped in reverse."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@runtime_checkable
class Loading(Protocol):
    """A service that goes on loading after ``start()`` returns."""

    async def loaded(self) -> None: ...


#: How long a node in controlled shutdown answers after its leadership moved.
CONTROLLED_DRAIN_S = 0.05


class NodeReplicas(Protocol):
    """The replicas of a process running several nodes, as stopping and starting a node
    changes them (``cluster.replication.ReplicaManager``; imported only for several)."""

    def status(self, node: int) -> str: ...

    def stop_node(self, node: int, controlled: bool = True) -> None: ...

    def start_node(self, node: int) -> None: ...

    def isolate_node(self, node: int) -> None: ...

    def heal_node(self, node: int) -> None: ...


class AdminListener(Protocol):
    """The admin HTTP listener (``admin_http.app.AdminServer``), as the broker runs it:
    aiohttp is imported only by a broker that has one."""

    host: str
    port: int

    @property
    def url(self) -> str: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class Broker:
    """A one-node Kafka broker, built by ``compose.build_broker(config)``.
    ``await start()`` opens storage, loads the coordinator and listens; ``await stop()``."""

    def __init__(
        self,
        config: Config,
        cluster: Cluster,
        storage: Storage,
        coordinator: CoordinatorRuntime,
        transactions: OnDemand[TransactionCoordinatorCore],
        cleaner: LogCleaner,
        apis: KafkaApis,
        scheduler: Scheduler,
        services: Sequence[Service],
        security: SecurityState | None = None,
        dynamic: DynamicBrokerConfig | None = None,
        fetch_sessions: FetchSessionCache | None = None,
        *,
        faults: FaultRules,
        metrics: BrokerMetrics,
        clock_control: ClockControl,
        scenarios: CoordinatorScenarios,
        groups: GroupService,
        admin: AdminListener | None = None,
        schema_registry: AdminListener | None = None,
        peers: Sequence[tuple[Cluster, KafkaApis]] = (),
        replicas: NodeReplicas | None = None,
        share: SharePath | None = None,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.node_id = cluster.node_id
        self.data_dir = config.data_dir
        self.storage = storage
        self.logs: LogManager = storage.logs
        self.coordinator = coordinator
        #: The group coordinator's work outside requests, and its core for inspection.
        self.groups = groups
        self._transactions = transactions
        self.log_cleaner = cleaner
        self.apis = apis
        self._share = share
        #: Every deadline of the broker, on its one clock (``scheduler.clock``).
        self.scheduler = scheduler
        #: Fault rules on the request path (dispatch reads the same object).
        self.faults = faults
        #: What ``/metrics`` shows; dispatch and the data handlers bump it.
        self.metrics = metrics
        #: The broker's clock (``scheduler.clock``) as the admin API and the fixtures see it.
        self.clock_control = clock_control
        #: Coordinator scenarios by name (test control).
        self.scenarios = scenarios
        #: The admin HTTP listener (``admin.listener``); None when it is off.
        self.admin = admin
        #: The Schema Registry's REST listener (``schema.registry.listener``); None when off.
        self.schema_registry = schema_registry
        self._services = tuple(services)
        #: Every node this process runs (``kafkalite.nodes``): its identity and its
        #: handlers. The first is ``cluster`` with ``apis``.
        self.nodes: tuple[tuple[Cluster, KafkaApis], ...] = ((cluster, apis), *peers)
        #: The replicas of the nodes' partitions and what stops and starts nodes do to
        #: them (several nodes); None for one node.
        self.replicas = replicas
        #: Each node's listening servers, by node id (a stopped node's are closed).
        self._node_servers: dict[int, list[asyncio.AbstractServer]] = {}
        self._configured: tuple[list[Listener], list[ListenerSecurity]] | None = None
        #: SCRAM credentials and, with an authorizer configured, the ACLs.
        self.security = security or SecurityState.empty(config.data_dir)
        self.scram = self.security.scram
        self.acls = self.security.acls
        #: Incremental fetch sessions (KIP-227).
        self.fetch_sessions = (fetch_sessions if fetch_sessions is not None
                               else FetchSessionCache(0))
        #: The KIP-226 dynamic broker configs and what applies them.
        self.dynamic = dynamic or DynamicBrokerConfig(config, cluster.node_id, cluster.data_dir)
        self.listener_security = ListenerSecurityMap(config, self.scram)
        #: Each node's connection counts and limits, by node id.
        self.quotas: dict[int, ConnectionQuotas] = {}
        limits_configs = ConnectionLimitsConfigs(
            lambda: self.quotas, lambda node: self.dynamic.node_config(node, {}))
        #: The other nodes' listeners' security, each from its node's own values.
        self.node_security = NodeListenerSecurity(
            lambda node: self.dynamic.node_config(node, {}), self.scram)
        self.dynamic.reconfigurables += [self.listener_security, limits_configs,
                                         self.node_security]
        self.dynamic.node_reconfigurables += [limits_configs, self.node_security]
        self._started: list[Service] = []
        self._servers: list[asyncio.AbstractServer] = []
        self._connections: set[KafkaConnection] = set()
        self._reaper: IdleReaper | None = None
        self._busy_poll: BusyPoll | None = None
        self.stopped = asyncio.Event()

    @property
    def connections(self) -> set[KafkaConnection]:
        """Every open client connection, of every node."""
        return self._connections

    @property
    def cluster_id(self) -> str:
        return self.cluster.cluster_id

    @property
    def listeners(self) -> list[BoundListener]:
        return self.cluster.listeners

    @property
    def topics(self) -> TopicCatalog:
        return self.storage.catalog

    def topic_config(self, topic: str, name: str) -> str:
        """Effective value of a topic config (topic override, broker property, default)."""
        return self.storage.topic_configs.value(topic, name)

    def create_topic(
        self, name: str, partitions: int | None = None, configs: dict[str, str] | None = None,
        internal: bool = False,
    ) -> TopicInfo:
        """Create a topic in the catalogue; storage creates its logs on the catalogue event."""
        return self.storage.create_topic(name, partitions, configs, internal)

    @property
    def transactions(self) -> TransactionCoordinatorCore:
        """The transaction coordinator's core (driven by ``coordinator``, the runtime),
        built now if no producer has needed it yet."""
        return self._transactions.core

    @property
    def share(self) -> SharePartitionManager | None:
        """KIP-932's share-partition manager (share-partitions, their locks and state),
        built now if no share consumer has needed it yet."""
        return None if self._share is None else self._share.manager

    async def start(self) -> None:
        """Check every listener's TLS and SASL settings, open the components, listen.
        A failure part way stops what had started and raises (``ConfigError`` for a
        setting), so the process can end with one line instead of a traceback."""
        configured = parse_listeners(self.config.text("listeners"))
        # Before anything starts: a bad keystore or JAAS setting is a configuration error.
        securities = self.listener_security.load([lst.name for lst in configured])
        try:
            try:
                await self.open(wait_loaded=False)
            except OSError as e:
                raise ConfigError(data_dir_problem(self.data_dir, e)) from None
            self._configured = (configured, securities)
            for i, (node, apis) in enumerate(self.nodes):
                await self._listen(configured, securities, node, apis, i)
        except BaseException:
            await self.stop()
            raise
        if self.admin is not None:
            await self.admin.start()
            log.info("admin.listening", url=self.admin.url)
        if self.schema_registry is not None:
            await self.schema_registry.start()
        log.info(
            "broker.started",
            cluster_id=self.cluster_id,
            node_id=self.node_id,
            data_dir=str(self.data_dir),
            listeners=[f"{b.name}://{b.host}:{b.port}" for b in self.listeners],
            nodes=len(self.nodes),
            console=self.console_url,
            busy_poll_us=self.busy_poll_us,
        )

    @property
    def busy_poll_us(self) -> int:
        """The busy poll's window in effect, µs (0: off; ``broker/busy_poll.py``)."""
        return round(self._busy_poll.window * 1e6) if self._busy_poll is not None else 0

    async def open(self, wait_loaded: bool = True) -> None:
        """Start the components in build order (storage, then the coordinator) without
        listening: ``start()`` does this, then binds the listeners while the internal
        topics load. Handler tests call handlers on an opened broker, with no socket, once
        everything is loaded."""
        for service in self._services:
            await service.start()
            self._started.append(service)
        if wait_loaded:
            await self.loaded()

    async def loaded(self) -> None:
        """Until every component that loads in the background (the coordinators' internal
        topics) has loaded."""
        for service in self._services:
            if isinstance(service, Loading):
                await service.loaded()

    async def _listen(self, configured: list[Listener], securities: list[ListenerSecurity],
                      node: Cluster, apis: KafkaApis, index: int) -> None:
        """Bind ``node``'s listeners: the configured ports, each moved up by ``index``
        (the node's place in the process; port 0 stays 0, any free port)."""
        loop = asyncio.get_running_loop()
        advertised_raw = self.config.text("advertised.listeners")
        advertised = {a.name: a for a in parse_listeners(advertised_raw)} if advertised_raw else {}
        max_size = self.config.int("socket.request.max.bytes")
        limits = Limits.from_config(self.config)
        if self._reaper is None:
            self._reaper = IdleReaper(limits, lambda: self._connections)
            await self._reaper.start()
            poll = BusyPoll(self.config.int("socket.busy.poll.us"), loop)
            # Off (0, or fewer than two CPUs): connections do not even call it.
            self._busy_poll = poll if poll.enabled else None
        quotas = self.quotas.get(node.node_id)
        if quotas is None:
            # The node's own limits: its own dynamic level over the cluster default.
            quotas = self.quotas[node.node_id] = ConnectionQuotas(
                Limits.from_config(self.dynamic.node_config(node.node_id, {})))
        busy_poll = self._busy_poll
        # A new connection takes its listener's security as it is now: dynamic configs
        # may have replaced it (a rotated keystore, another JAAS config).
        current = (self.listener_security if index == 0 else
                   self.node_security.for_node(node.node_id, [lst.name for lst in configured]))
        # A node started again listens where it listened before.
        bound = list(node.listeners)
        node.listeners.clear()
        for lst, sec in zip(configured, securities, strict=True):

            def factory(name: str = lst.name) -> KafkaConnection:
                conn = KafkaConnection(apis, max_size, name, self._connections, limits,
                                       quotas, current[name], busy_poll)
                conn.connected_at = self.scheduler.clock.now_ms()
                return conn

            make: Callable[[], asyncio.Protocol] = factory
            if sec.ssl_context is not None:
                def make(factory: Callable[[], KafkaConnection] = factory,
                         name: str = lst.name) -> asyncio.Protocol:
                    ctx = current[name].ssl_context
                    assert ctx is not None
                    return TlsAcceptor(ctx, factory, name)

            want = lst.port + index if lst.port else 0
            if bound:
                want = bound.pop(0).port
            try:
                server = await loop.create_server(make, lst.host, want, reuse_address=True)
            except OSError as e:
                where = f" (node {node.node_id})" if index else ""
                raise ConfigError(f"listeners: cannot listen on {lst.host}:{want} "
                                  f"({lst.name}){where}: {e.strerror or e}") from None
            self._servers.append(server)
            self._node_servers.setdefault(node.node_id, []).append(server)
            port = server.sockets[0].getsockname()[1]
            adv: Listener | None = advertised.get(lst.name)
            adv_host = adv.host if adv else lst.host
            if adv_host in ("0.0.0.0", "::", ""):
                adv_host = "127.0.0.1"
            adv_port = adv.port + index if adv and adv.port else port
            node.listeners.append(BoundListener(lst.name, lst.host, port, adv_host, adv_port,
                                                sec.protocol.value))

    # --- nodes that stop, start and get cut off (several nodes) -------------------------

    def _node(self, node_id: int) -> tuple[int, Cluster, KafkaApis]:
        for i, (node, apis) in enumerate(self.nodes):
            if node.node_id == node_id:
                return i, node, apis
        raise KeyError(f"no node {node_id}")

    def _replica_manager(self) -> NodeReplicas:
        if self.replicas is None:
            raise KeyError("one node: nothing to stop or start (kafkalite.nodes)")
        return self.replicas

    async def stop_node(self, node_id: int, controlled: bool = True) -> None:
        """Stop one node: its listeners and connections close, its replicas stop and
        its leadership moves (at once when ``controlled``, else when the controller fences
        it after broker.session.timeout.ms)."""
        manager = self._replica_manager()
        _i, _node, apis = self._node(node_id)
        if manager.status(node_id) == "stopped":
            return
        manager.stop_node(node_id, controlled)
        if controlled:
            # As a Kafka broker in controlled shutdown, it goes on answering for a moment
            # after its leadership moved: a request in flight gets NOT_LEADER_OR_FOLLOWER
            # with the new leader (KIP-951) instead of a closed connection.
            await asyncio.sleep(CONTROLLED_DRAIN_S)
        servers = self._node_servers.pop(node_id, [])
        for server in servers:
            server.close()
            self._servers.remove(server)
        for conn in list(self._connections):
            if conn.apis is apis:
                conn.close()
        log.info("broker.node_stopped", node_id=node_id, controlled=controlled)

    async def start_node(self, node_id: int) -> None:
        """Start a stopped node again on its addresses: its replicas recover, catch up
        and rejoin the ISRs."""
        manager = self._replica_manager()
        i, node, apis = self._node(node_id)
        if manager.status(node_id) != "stopped":
            return
        manager.start_node(node_id)
        if self._configured is not None:
            await self._listen(*self._configured, node, apis, i)
        log.info("broker.node_started", node_id=node_id)

    def isolate_node(self, node_id: int) -> None:
        """Cut one node off from the others, as a network partition: it keeps its
        connections but stops replicating and is fenced after the session timeout."""
        self._node(node_id)
        self._replica_manager().isolate_node(node_id)
        log.info("broker.node_isolated", node_id=node_id)

    def heal_node(self, node_id: int) -> None:
        self._node(node_id)
        self._replica_manager().heal_node(node_id)
        log.info("broker.node_healed", node_id=node_id)

    def node_status(self, node_id: int) -> str:
        """running, stopped, isolated or fenced."""
        return "running" if self.replicas is None else self.replicas.status(node_id)

    @property
    def bootstraps(self) -> list[str]:
        """Every node's first advertised address, in node order."""
        return [f"{n.listeners[0].advertised_host}:{n.listeners[0].advertised_port}"
                for n, _apis in self.nodes if n.listeners]

    @property
    def port(self) -> int:
        """Port of the first listener (handy with port 0)."""
        return self.listeners[0].port

    @property
    def bootstrap(self) -> str:
        b = self.listeners[0]
        return f"{b.advertised_host}:{b.advertised_port}"

    @property
    def console_url(self) -> str | None:
        """The web console's address, when the admin listener is on."""
        return f"{self.admin.url}/" if self.admin is not None and self.admin.port else None

    @property
    def schema_registry_url(self) -> str | None:
        """The Schema Registry's address, when it is on."""
        return self.schema_registry.url if self.schema_registry is not None else None

    async def stop(self) -> None:
        if self.schema_registry is not None:
            await self.schema_registry.stop()
        if self.admin is not None:
            await self.admin.stop()
        if self._reaper is not None:
            await self._reaper.stop()
            self._reaper = None
        # A start after this one sets the connection limits and the other nodes'
        # listeners' security up anew.
        self.quotas = {}
        self.node_security.maps.clear()
        for server in self._servers:
            server.close()
        for conn in list(self._connections):
            conn.close()
        for server in self._servers:
            try:
                await asyncio.wait_for(server.wait_closed(), 2)
            except TimeoutError:
                pass
        if self._busy_poll is not None:
            self._busy_poll.close()
            self._busy_poll = None
        for service in reversed(self._started):
            try:
                await service.stop()
            except Exception:
                log.exception("broker.service_stop_failed")
        self._started.clear()
        self._servers.clear()
        self.stopped.set()
        log.info("broker.stopped", node_id=self.node_id)


def data_dir_problem(data_dir: object, e: OSError) -> str:
    """``log.dirs``, named in one line, for a data directory the broker cannot use."""
    from pathlib import Path

    if Path(str(data_dir)).exists() and not Path(str(data_dir)).is_dir():
        return f"log.dirs {data_dir}: not a directory"
    where = f" ({e.filename})" if e.filename and str(e.filename) != str(data_dir) else ""
    return f"log.dirs {data_dir}: {e.strerror or e}{where}"


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop where available, asyncio's own otherwise."""
    try:
        import uvloop

        loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        return loop
    except ImportError:
        return asyncio.new_event_loop()


async def serve_until_signalled(
    broker: Broker, ready: Callable[[Broker], None] | None = None
) -> None:
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
