"""The composition root: the one place that builds a broker, in dependency order.

1. configuration (given), with the dynamic broker configs persisted in the data
   directory merged in, and the broker's one clock (the system clock, or a manual one
   for tests) with the scheduler that holds every deadline on it;
2. storage: the data directory's cluster id, the topic catalogue, topic config
   resolution, the partition logs (kept in step with the catalogue by its events) and
   the log cleaner; retention, flushing and cleaning are scheduler tasks;
3. the coordinators: the group coordinator's pure core and the runtime that drives it
   over ``__consumer_offsets`` (offset retention is a scheduler task; every topic
   catalogue event reaches the core through the runtime as a typed ``TopicChange``:
   consumer groups follow created, grown and deleted topics), and the transaction
   coordinator's core, which the same runtime drives over ``__transaction_state`` (its
   markers go to the partition logs and, for ``__consumer_offsets``, through the runtime
   to the group coordinator);
4. test control and the live view: the broker's clock as users see it, the metrics, the
   fault rules dispatch consults, and the admin HTTP listener when ``admin.listener``
   is set;
5. the handlers: every API bound to the components it uses, in one table
   (``routes.py``), registered with the dispatcher.

Building does the disk reads that decide the shape of the broker (cluster id, the
catalogue); ``Broker.start()`` then starts the components in this order (loading logs,
then the coordinator, then the scheduler) and opens the listeners; ``stop()`` reverses it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import structlog

from kafkalite.coordinator.config import CoreConfig, GroupOverrides
from kafkalite.coordinator.core import GroupCoordinatorCore
from kafkalite.coordinator.group_service import GroupService
from kafkalite.coordinator.runtime import CoordinatorRuntime, OnDemand
from kafkalite.coordinator.state_topics import StateTopic
from kafkalite.coordinator.topics_image import TopicChange, TopicEvent
from kafkalite.protocol.features import TRANSACTION_VERSION
from kafkalite.protocol.names import (
    OFFSETS_TOPIC,
    SHARE_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
)
from kafkalite.protocol.releases import release
from kafkalite.storage import handles, meta
from kafkalite.storage.catalog import TopicCatalog, TopicInfo
from kafkalite.storage.compaction import LogCleaner
from kafkalite.storage.manager import LogManager
from kafkalite.timekeeping.clock import Clock, SystemClock
from kafkalite.timekeeping.scheduler import Scheduler

from .admin_http.address import parse_admin_listener
from .admin_http.views import BrokerView
from .apis import KafkaApis
from .auth import Access
from .cluster import Cluster
from .compose_peers import build_peers
from .config.dynamic import DynamicBrokerConfig, LogDefaults
from .config.groups import GroupConfigs, broker_value
from .config.properties import Config, ConfigError, consumer_assignors, rebalance_protocols
from .control.clock import ClockControl
from .control.faults import FaultRules
from .control.scenarios import CoordinatorScenarios
from .handlers.data.fetch_session import FetchSessionCache
from .metrics import BrokerMetrics
from .quotas import ClientQuotaStore
from .quotas.accept_rate import AcceptRateConfigs, AcceptRates, listener_rates
from .quotas.managers import QuotaManagers
from .quotas.metrics import quota_families
from .quotas.throttling import Throttling
from .routes import routes
from .security.setup import SecurityState, build_security
from .server import AdminListener, Broker
from .share.path import BuiltShare, SharePath
from .telemetry.clients import ClientRegistry
from .telemetry.instances import Instances
from .topic_store import Storage, TopicConfigs

if TYPE_CHECKING:
    from kafkalite.coordinator.results import Outcome
    from kafkalite.coordinator.share.membership import ShareMembership
    from kafkalite.coordinator.share.state_store import ShareKey
    from kafkalite.coordinator.txn.transactions import TransactionCoordinatorCore, Transactions

    from .cluster.replication import ReplicaManager
    from .share.manager import SharePartitionManager
    from .share.offsets_store import ManagerOffsetsStore
    from .share.stats import ShareCounters

log = structlog.get_logger("kafkalite.compose")

class CoordinatorLoader:
    """The runtime's life cycle: replays the internal topics (``__consumer_offsets``,
    ``__transaction_state``) in the background once the broker starts, as Kafka loads
    coordinator partitions after its listeners open; a group or transactional id whose
    partition is still loading is answered COORDINATOR_LOAD_IN_PROGRESS."""

    def __init__(self, runtime: CoordinatorRuntime, catalog: TopicCatalog) -> None:
        self.runtime = runtime
        self.catalog = catalog
        self._loading: asyncio.Task[None] | None = None

    async def start(self) -> None:
        # Every partition is loading from now on, before any request can reach it.
        def exists(name: str) -> bool:
            return self.catalog.get(name) is not None

        topics = self.runtime.begin_loading(exists)
        self._loading = asyncio.get_running_loop().create_task(
            self.runtime.load_all(exists, topics))
        self._loading.add_done_callback(_report_load_failure)

    async def loaded(self) -> None:
        """Until every partition is loaded (raises what loading raised)."""
        if self._loading is not None:
            await asyncio.shield(self._loading)

    async def stop(self) -> None:
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loading
        await self.runtime.stop()


def _report_load_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("coordinator.load_failed", error=repr(task.exception()))


class SchedulerService:
    """Arms the scheduler on the broker's loop once everything it calls is loaded."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    async def start(self) -> None:
        self.scheduler.start()

    async def stop(self) -> None:
        self.scheduler.stop()


def build_storage(config: Config, scheduler: Scheduler) -> tuple[Cluster, Storage, LogCleaner]:
    data_dir = config.data_dir
    node_id = config.int("node.id")
    cluster = Cluster(node_id, meta.load_or_create(data_dir, node_id), data_dir,
                      rack=config.raw_or_none("broker.rack") or None)
    catalog = TopicCatalog(data_dir)
    topic_configs = TopicConfigs(config, catalog)
    logs = LogManager(data_dir, topic_configs.value, durable=config.bool("log.durable"),
                      clock=scheduler.clock.now_ms)
    storage = Storage(config, catalog, topic_configs, logs)
    catalog.listeners.append(storage.on_topic_event)
    cleaner = LogCleaner(storage.compacted_logs, scheduler.clock.now_ms)

    def retention(_now: int) -> None:
        logs.apply_retention()

    scheduler.every("log-retention", lambda: config.int("log.retention.check.interval.ms"),
                    retention)
    scheduler.every("log-flush", lambda: config.int("log.retention.check.interval.ms"),
                    logs.flush_due)
    scheduler.every("log-cleaner", lambda: config.int("log.cleaner.backoff.ms"),
                    cleaner.run_pass)
    def close_idle_handles(_now: int) -> None:
        handles.sweep()  # idle segments' descriptors (storage/handles.py)

    scheduler.every("log-handles", handles.SWEEP_MS, close_idle_handles)

    def expire_producers(now: int) -> None:
        logs.expire_producers(now, config.int("producer.id.expiration.ms"))

    scheduler.every("producer-expiry",
                    lambda: config.int("producer.id.expiration.check.interval.ms"),
                    expire_producers)
    return cluster, storage, cleaner


def build_coordinator(config: Config, storage: Storage, scheduler: Scheduler,
                      group_overrides: GroupOverrides | None = None
                      ) -> tuple[CoordinatorRuntime, GroupService]:
    """The group coordinator's core and runtime; ``__consumer_offsets`` is created on first
    use (FindCoordinator for a group, or the runtime's first write)."""
    offsets_topic = storage.catalog.get(OFFSETS_TOPIC)
    core_cfg = CoreConfig(
        # An existing topic's partition count wins over the property, as in Kafka.
        num_partitions=(offsets_topic.partitions if offsets_topic is not None
                        else config.int("offsets.topic.num.partitions")),
        min_session_timeout_ms=config.int("group.min.session.timeout.ms"),
        max_session_timeout_ms=config.int("group.max.session.timeout.ms"),
        max_size=config.int("group.max.size"),
        initial_rebalance_delay_ms=config.int("group.initial.rebalance.delay.ms"),
        max_metadata_bytes=config.int("offset.metadata.max.bytes"),
        offsets_retention_ms=config.int("offsets.retention.minutes") * 60_000,
        consumer_session_timeout_ms=config.int("group.consumer.session.timeout.ms"),
        consumer_heartbeat_interval_ms=config.int("group.consumer.heartbeat.interval.ms"),
        consumer_max_size=config.int("group.consumer.max.size"),
        consumer_assignors=consumer_assignors(config),
        migration_policy=config.text("group.consumer.migration.policy").strip().lower(),
        regex_refresh_interval_ms=config.int("group.consumer.regex.refresh.interval.ms"),
        share_session_timeout_ms=config.int("group.share.session.timeout.ms"),
        share_heartbeat_interval_ms=config.int("group.share.heartbeat.interval.ms"),
        share_max_size=config.int("group.share.max.size"),
        streams_session_timeout_ms=int(broker_value(config, "group.streams.session.timeout.ms")),
        streams_heartbeat_interval_ms=int(
            broker_value(config, "group.streams.heartbeat.interval.ms")),
        streams_initial_rebalance_delay_ms=config.int(
            "group.streams.initial.rebalance.delay.ms"),
        streams_num_standby_replicas_default=int(
            broker_value(config, "group.streams.num.standby.replicas")),
        streams_num_warmup_replicas_default=int(
            broker_value(config, "group.streams.num.warmup.replicas")),
        streams_acceptable_recovery_lag_default=int(
            broker_value(config, "group.streams.acceptable.recovery.lag")),
        streams_task_offset_interval_ms=int(
            broker_value(config, "group.streams.task.offset.interval.ms")),
        group_overrides=group_overrides,
    )
    core = GroupCoordinatorCore(core_cfg, scheduler.timers)
    core.set_topics([topic_change("created", t) for t in storage.catalog], scheduler.now())
    runtime = CoordinatorRuntime(
        core, storage.logs, scheduler,
        ensure_topic=partial(storage.ensure_offsets_topic, core_cfg.num_partitions))
    groups = GroupService(
        runtime, core,
        retention_check_interval_ms=lambda: config.int("offsets.retention.check.interval.ms"))
    storage.catalog.listeners.append(partial(forward_topic_event, groups))
    return runtime, groups


def topic_change(event: str, info: TopicInfo) -> TopicChange:
    """A catalogue event as the coordinator takes it."""
    return TopicChange(TopicEvent(event), info.name, info.topic_id, info.partitions)


def forward_topic_event(groups: GroupService, event: str, info: TopicInfo) -> None:
    """Catalogue listener: the group coordinator learns of every topic change."""
    groups.on_topic_change(topic_change(event, info))


def build_transactions(config: Config, storage: Storage, runtime: CoordinatorRuntime,
                       groups: GroupService) -> OnDemand[TransactionCoordinatorCore]:
    """The transaction coordinator's core, served by the runtime over
    ``__transaction_state`` (created on first use, like ``__consumer_offsets``). Built on
    first use (the first transactional or idempotent producer, FindCoordinator for a
    transactional id), or at once by a broker whose ``__transaction_state`` exists or that
    runs several nodes (each node's coordinators are fixed when it is built)."""

    def build() -> Transactions:
        from kafkalite.coordinator.txn.markers import LocalMarkerWriter
        from kafkalite.coordinator.txn.transactions import (
            TRANSACTION_CODEC,
            TransactionCoordinatorCore,
            TxnConfig,
        )

        existing = storage.catalog.get(TRANSACTION_STATE_TOPIC)
        cfg = TxnConfig(
            # An existing topic's partition count wins over the property, as in Kafka.
            num_partitions=(existing.partitions if existing is not None
                            else config.int("transaction.state.log.num.partitions")),
            max_timeout_ms=config.int("transaction.max.timeout.ms"),
            transactional_id_expiration_ms=config.int("transactional.id.expiration.ms"),
            transaction_version=TRANSACTION_VERSION.level,
            offsets_partitions=groups.core.config.num_partitions,
            abort_retry_interval_ms=config.int(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms"),
            expire_retry_interval_ms=config.int(
                "transaction.remove.expired.transaction.cleanup.interval.ms"),
        )
        core = TransactionCoordinatorCore(
            cfg, runtime.scheduler.timers,
            allocate_producer_id=storage.logs.producer_ids.allocate,
            markers=LocalMarkerWriter(storage.logs.get, groups),
            group_partition_for=groups.core.partition_for)
        return runtime.serve(StateTopic(TRANSACTION_STATE_TOPIC, cfg.num_partitions, core,
                                        TRANSACTION_CODEC,
                                        partial(storage.ensure_transaction_topic,
                                                cfg.num_partitions)),
                             core)

    txn: OnDemand[TransactionCoordinatorCore] = OnDemand(build)
    if (storage.catalog.get(TRANSACTION_STATE_TOPIC) is not None
            or config.int("kafkalite.nodes") > 1):
        txn.served()
    else:
        runtime.serve_on_demand(TRANSACTION_STATE_TOPIC, txn.served)
    return txn


def build_share(config: Config, storage: Storage, runtime: CoordinatorRuntime,
                groups: GroupService, group_configs: GroupConfigs, access: Access,
                control: Control) -> SharePath:
    """KIP-932's fetch path, built on first use (``share.path``): the share coordinator's
    core, served by the runtime over ``__share_group_state`` (created on first use), the
    share-partition manager over the partition logs, and the share sessions. A member's
    removal from its share group (its session expired) or its connection closing ends its
    share session and releases its records. A broker whose ``__share_group_state``
    exists, or that runs several nodes (each node's routes and coordinators are fixed when
    it is built), builds it at once."""

    def build() -> BuiltShare:
        from kafkalite.coordinator.share.sessions import ShareSessions
        from kafkalite.coordinator.share.state_core import SHARE_STATE_CODEC, ShareStateCore

        from .handlers.data.share_fetch import ShareRequests
        from .share.manager import SharePartitionManager

        existing = storage.catalog.get(SHARE_STATE_TOPIC)
        partitions = (existing.partitions if existing is not None
                      else config.int("share.coordinator.state.topic.num.partitions"))
        core = ShareStateCore(
            partitions, config.int("share.coordinator.snapshot.update.records.per.snapshot"))
        served = runtime.serve(StateTopic(SHARE_STATE_TOPIC, partitions, core,
                                          SHARE_STATE_CODEC,
                                          partial(storage.ensure_share_state_topic,
                                                  partitions)),
                               core)
        manager = SharePartitionManager(storage, served, runtime.scheduler, group_configs)
        share = ShareRequests(
            manager, partial(ShareSessions, config.int("group.share.max.share.sessions")),
            access, config.int("node.id"))
        groups.core.share_member_expired.append(share.end_member)
        groups.core.admin.share_group_deleted.append(manager.delete_group)

        def record_15(step: Callable[[ShareMembership], Callable[..., Outcome]]
                      ) -> Callable[[ShareKey], None]:
            # Record 15 of the group names the share-partition initializing, then
            # initialized, around its first state write, as Kafka's coordinator does.
            def on(key: ShareKey) -> None:
                group, topic_id, partition = key
                info = storage.catalog.by_id(topic_id)
                if info is not None:
                    runtime.groups.write(lambda g, now: step(g.share)(
                        now, group, topic_id, info.name, partition))
            return on

        manager.initializing.append(record_15(lambda s: s.partition_initializing))
        manager.initialized.append(record_15(lambda s: s.partition_initialized))

        def topic_deleted(event: str, info: TopicInfo) -> None:
            if event == "deleted":
                # Deleting in record 15 while the state goes, then gone.
                runtime.groups.write(lambda g, now: g.share.state_deleting(
                    now, None, {info.topic_id}))
                manager.delete_topic(info.topic_id)
                runtime.groups.write(lambda g, now: g.share.state_deleted(
                    now, None, {info.topic_id}))

        storage.catalog.listeners.append(topic_deleted)
        store, counters = share_views(control, manager, groups)
        return BuiltShare(share, store, counters)

    path = SharePath(build)
    if (storage.catalog.get(SHARE_STATE_TOPIC) is not None
            or config.int("kafkalite.nodes") > 1):
        path.get()
    else:
        runtime.serve_on_demand(SHARE_STATE_TOPIC, path.get)
    control.metrics.share = path.totals
    return path


def share_views(control: Control, manager: SharePartitionManager,
                groups: GroupService) -> tuple[ManagerOffsetsStore, ShareCounters]:
    """Share-partitions in the admin API and the console, their counters in ``/metrics``;
    the store the share-group offsets APIs read and write (it tells the counters of the
    share-partitions it drops)."""
    from .admin_http.share_view import ShareView
    from .share.offsets_store import ManagerOffsetsStore
    from .share.stats import ShareCounters

    counters = ShareCounters(manager)
    store = ManagerOffsetsStore(manager, counters.retire_group)
    control.view.share = ShareView(manager, store.states, groups.core.topics.name_of,
                                   store.high_watermark)
    return store, counters


@dataclass(frozen=True, slots=True)
class Control:
    """Test control and the live view: what dispatch, ``/metrics`` and the admin API share."""

    clock: ClockControl
    scenarios: CoordinatorScenarios
    metrics: BrokerMetrics
    faults: FaultRules
    view: BrokerView
    admin: AdminListener | None


def build_control(config: Config, cluster: Cluster, storage: Storage,
                  runtime: CoordinatorRuntime, scheduler: Scheduler) -> Control:
    clock = ClockControl(scheduler)
    scenarios = CoordinatorScenarios(runtime)
    view = BrokerView(cluster, storage, runtime, clock)
    metrics = BrokerMetrics(groups=view.group_rows)
    # Rule durations run on the broker's clock, as every other deadline does.
    faults = FaultRules(scheduler.clock.now_ms, on_fire=metrics.fault_fired)
    try:
        where = parse_admin_listener(config.text("admin.listener"))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    admin: AdminListener | None = None
    if where is not None:
        # aiohttp is imported only here, by a broker that serves HTTP.
        from .admin_http.app import AdminServer
        from .series.sampler import Sampler

        # Sampled only for a broker that serves the console.
        sampler = Sampler(metrics, view)
        scheduler.every("series-sample", sampler.interval_ms, sampler.sample)
        admin = AdminServer(where.host, where.port, view, faults, metrics, clock, scenarios,
                            sampler)
    return Control(clock, scenarios, metrics, faults, view, admin)


def build_schema_registry(config: Config, storage: Storage, scheduler: Scheduler,
                          security: SecurityState, control: Control
                          ) -> AdminListener | None:
    """The Schema Registry when ``schema.registry.listener`` is set; nothing of it is
    imported otherwise."""
    try:
        where = parse_admin_listener(config.text("schema.registry.listener"))
    except ValueError as e:
        raise ConfigError(str(e).replace("admin.listener", "schema.registry.listener")) from None
    if where is None:
        return None
    from kafkalite.schema_registry.hooks import build_registry, missing_libraries

    from .security.basic_auth import broker_users

    missing = missing_libraries()
    if missing:
        raise ConfigError(f"schema.registry.listener needs {', '.join(missing)}: "
                          "pip install 'kafkalite[registry]'")
    return build_registry(where.host, where.port, storage, scheduler.clock.now_ms,
                          broker_users(config, security.scram), control.metrics, control.view)


def build_broker(config: Config, clock: Clock | None = None) -> Broker:
    # The dynamic broker configs first: every component below reads the merged values
    # (the scheduler reads its intervals, log.cleaner.backoff.ms among them, anew each time).
    dynamic = DynamicBrokerConfig(config, config.int("node.id"), config.data_dir)
    dynamic.load()
    scheduler = Scheduler(clock or SystemClock())
    cluster, storage, cleaner = build_storage(config, scheduler)
    dynamic.reconfigurables.append(LogDefaults(storage))
    runtime, groups = build_coordinator(config, storage, scheduler, dynamic.groups)
    txn = build_transactions(config, storage, runtime, groups)
    control = build_control(config, cluster, storage, runtime, scheduler)
    security, authorizer = build_security(config, scheduler.clock.now_ms)
    tokens = security.tokens
    if tokens is not None:
        def expire_tokens(now: int) -> None:
            # Not ``expire_due`` itself: what a task returns is read as its next delay.
            tokens.expire_due(now)

        scheduler.every("delegation-token-expiry",
                        lambda: config.int("delegation.token.expiry.check.interval.ms"),
                        expire_tokens)
    registry = build_schema_registry(config, storage, scheduler, security, control)
    access = Access(authorizer)
    # The console's message search is authorized as this principal by the broker's ACLs.
    control.view.access = access
    control.view.principal = config.text("admin.principal")
    share = build_share(config, storage, runtime, groups, dynamic.groups, access, control)
    apis = KafkaApis(access, control.faults, control.metrics,
                     release(config.text("kafkalite.as.version")), cluster.node_id)
    apis.disconnect_listeners.append(share.disconnected)
    quotas = ClientQuotaStore(config.data_dir)
    quota_managers = QuotaManagers(
        quotas, config.int("quota.window.num"), config.int("quota.window.size.seconds"),
        config.int("controller.quota.window.num"),
        config.int("controller.quota.window.size.seconds"), scheduler.clock.now_ms)
    apis.quota_managers = quota_managers
    try:
        listener_rates(config.values, check=False)
    except ValueError as e:
        raise ConfigError(f"{e}: Value must be at least 0") from None
    accepts = AcceptRates(scheduler, config.int("quota.window.size.seconds") * 1000,
                          config.int("quota.window.num"),
                          lambda node: dynamic.node_config(node, {}).values)
    accept_configs = AcceptRateConfigs(accepts)
    dynamic.reconfigurables.append(accept_configs)
    dynamic.node_reconfigurables.append(accept_configs)
    apis.throttling = Throttling(quota_managers, scheduler, accepts)
    clients = ClientRegistry(Instances(dynamic.client_metrics, scheduler.clock.now_ms,
                                       partial(config.int, "telemetry.max.bytes")))
    apis.disconnect_listeners.append(clients.disconnected)
    fetch_sessions = FetchSessionCache(config.int("max.incremental.fetch.session.cache.slots"),
                                       scheduler.clock.now_ms)
    consumer_protocol = "consumer" in rebalance_protocols(config)
    node_routes = partial(routes, storage=storage, access=access, runtime=runtime, txn=txn,
                          security=security, quotas=quotas, dynamic=dynamic,
                          quota_managers=quota_managers,
                          metrics=control.metrics, share=share, clients=clients,
                          consumer_protocol=consumer_protocol)
    peers: list[tuple[Cluster, KafkaApis]] = []
    replicas: ReplicaManager | None = None
    if config.int("kafkalite.nodes") > 1:
        peers, replicas = build_peers(config, cluster, storage, groups, txn.core, runtime,
                                      scheduler, apis, fetch_sessions, node_routes)
    else:
        if (config.data_dir / "nodes").exists():
            from .cluster.nodes import check_layout

            check_layout(config.data_dir, 1)
        for route in node_routes(cluster, apis=apis, fetch_sessions=fetch_sessions):
            apis.register(route)
    broker = Broker(
        config, cluster, storage, runtime, txn, cleaner, apis, scheduler, groups=groups,
        services=(storage, *((replicas,) if replicas is not None else ()),
                  CoordinatorLoader(runtime, storage.catalog), cleaner,
                  SchedulerService(scheduler)),
        security=security, dynamic=dynamic, fetch_sessions=fetch_sessions,
        faults=control.faults, metrics=control.metrics, clock_control=control.clock,
        scenarios=control.scenarios, admin=control.admin, schema_registry=registry,
        peers=peers, replicas=replicas,
        share=share,
    )
    if replicas is not None:
        control.view.nodes = broker
    clients.connections = lambda: broker.connections
    control.view.clients_registry = clients
    control.metrics.clients = clients.families
    control.metrics.quotas = partial(quota_families, quota_managers, accepts,
                                     scheduler.clock.now_ms)
    return broker
