"""The composition root: the one place that builds a broker, in dependency order.

1. configuration (given);
2. storage: the data directory's cluster id, the topic catalogue, topic config
   resolution, the partition logs (kept in step with the catalogue by its events) and
   the log cleaner;
3. the group coordinator: its runtime over ``__consumer_offsets`` and the offsets store
   and service whose replay hook the runtime calls for every offset record;
4. the handlers: every API bound to the components it uses, in one table
   (``routes.py``), registered with the dispatcher.

Building does the disk reads that decide the shape of the broker (cluster id, the
catalogue); ``Broker.start()`` then starts the components in this order (loading logs,
then the coordinator) and opens the listeners; ``stop()`` reverses it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from kafkalite.coordinator.core import CoreConfig
from kafkalite.coordinator.offsets import OffsetStore
from kafkalite.coordinator.offsets_runtime import OffsetsService
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol.names import OFFSETS_TOPIC
from kafkalite.storage import meta
from kafkalite.storage.catalog import TopicCatalog
from kafkalite.storage.compaction import LogCleaner
from kafkalite.storage.log import now_ms
from kafkalite.storage.manager import LogManager

from .apis import KafkaApis
from .auth import Access
from .cluster import Cluster
from .config import Config
from .routes import routes
from .security.setup import build_security
from .server import Broker
from .storage import Storage, TopicConfigs


class CoordinatorLoader:
    """The runtime's life cycle: replays ``__consumer_offsets`` on start (groups see
    COORDINATOR_LOAD_IN_PROGRESS until their partition is loaded)."""

    def __init__(self, runtime: CoordinatorRuntime, catalog: TopicCatalog) -> None:
        self.runtime = runtime
        self.catalog = catalog

    async def start(self) -> None:
        await self.runtime.load_all(exists=self.catalog.get(OFFSETS_TOPIC) is not None)

    async def stop(self) -> None:
        await self.runtime.stop()


def build_storage(config: Config) -> tuple[Cluster, Storage, LogCleaner]:
    data_dir = config.data_dir
    node_id = config.int("node.id")
    cluster = Cluster(node_id, meta.load_or_create(data_dir, node_id), data_dir)
    catalog = TopicCatalog(data_dir)
    topic_configs = TopicConfigs(config, catalog)
    logs = LogManager(
        data_dir,
        topic_configs.value,
        durable=config.bool("log.durable"),
        retention_check_interval_ms=config.int("log.retention.check.interval.ms"),
    )
    storage = Storage(config, catalog, topic_configs, logs)
    catalog.listeners.append(storage.on_topic_event)
    cleaner = LogCleaner(storage.compacted_logs, config.int("log.cleaner.backoff.ms"), now_ms)
    return cluster, storage, cleaner


def build_coordinator(config: Config, storage: Storage
                      ) -> tuple[CoordinatorRuntime, OffsetsService, Callable[[], None]]:
    """The runtime, the offsets service, and what creates ``__consumer_offsets`` on first
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
    )
    runtime = CoordinatorRuntime(core_cfg, storage.logs)
    ensure_topic = partial(storage.ensure_offsets_topic, core_cfg.num_partitions)
    runtime.ensure_topic = ensure_topic
    store = OffsetStore(
        max_metadata_bytes=config.int("offset.metadata.max.bytes"),
        retention_ms=config.int("offsets.retention.minutes") * 60_000,
    )
    service = OffsetsService(lambda: runtime, store,
                             config.int("offsets.retention.check.interval.ms"))
    # Offset commit records reach the store from the first load on.
    runtime.offsets = service.replay_hook
    return runtime, service, ensure_topic


def build_broker(config: Config) -> Broker:
    cluster, storage, cleaner = build_storage(config)
    runtime, offsets_service, ensure_offsets_topic = build_coordinator(config, storage)
    security, authorizer = build_security(config)
    access = Access(authorizer)
    apis = KafkaApis(access)
    for route in routes(cluster, storage, access, runtime, offsets_service,
                        ensure_offsets_topic, apis, security):
        apis.register(route)
    return Broker(
        config, cluster, storage, runtime, offsets_service, cleaner, apis,
        services=(storage, offsets_service, cleaner, CoordinatorLoader(runtime, storage.catalog)),
        security=security,
    )
