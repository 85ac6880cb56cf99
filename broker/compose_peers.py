"""The other nodes of a ``--nodes N`` process: the controller they share, the replicas of
their partitions, and each node's guarded handlers (``cluster/``). ``compose`` calls this
once node 1's broker is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkalite.coordinator.group_service import GroupService
from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol.names import (
    OFFSETS_TOPIC,
    SHARE_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
    CoordinatorType,
)
from kafkalite.storage.catalog import TopicInfo
from kafkalite.timekeeping.scheduler import Scheduler

from .apis import KafkaApis, Route
from .cluster import Cluster
from .config.properties import Config
from .handlers.data.fetch_session import FetchSessionCache
from .topic_store import Storage

if TYPE_CHECKING:
    from kafkalite.coordinator.txn.transactions import TransactionCoordinatorCore

    from .cluster.replication import ReplicaManager


def build_peers(config: Config, first: Cluster, storage: Storage, groups: GroupService,
                txn_core: TransactionCoordinatorCore, runtime: CoordinatorRuntime,
                scheduler: Scheduler, apis: KafkaApis, fetch_sessions: FetchSessionCache,
                node_routes: Callable[..., list[Route]]
                ) -> tuple[list[tuple[Cluster, KafkaApis]], ReplicaManager]:
    """``kafkalite.nodes`` above 1: the other nodes, the controller all of them share and
    the replicas of their partitions (``cluster/``); each node serves its own handlers,
    guarded so that it answers only for the partitions it leads and the groups and
    transactions it coordinates. Returns nodes 2..N with their handlers (node 1's are
    registered on ``apis``) and the replica manager."""
    from .cluster.follower_fetch import FetchReplicas
    from .cluster.guard import guarded_routes
    from .cluster.nodes import build_cluster, node_count, place, racks
    from .cluster.placement import place as placement
    from .cluster.reassignment import Reassignments
    from .cluster.replication import ReplicaManager
    from .cluster.selector import selector_for

    def state_partition(key_type: int, key: str) -> tuple[str, int]:
        if key_type == CoordinatorType.TRANSACTION:
            return TRANSACTION_STATE_TOPIC, txn_core.partition_for(key)
        return OFFSETS_TOPIC, groups.core.partition_for(key)

    def epoch(topic: str, partition: int) -> int:
        # Without opening the log: an unopened one's is the epoch it will lead in.
        return storage.logs.leader_epoch(topic, partition)

    n = node_count(config)
    ids = tuple(first.node_id + i for i in range(n))
    node_racks = racks(config, n)
    internal_rf = {OFFSETS_TOPIC: "offsets.topic.replication.factor",
                   TRANSACTION_STATE_TOPIC: "transaction.state.log.replication.factor",
                   SHARE_STATE_TOPIC: "share.coordinator.state.topic.replication.factor"}

    def placer(topic: str, start: int, count: int, rf: int | None) -> list[list[int]]:
        if rf is None:
            setting = internal_rf.get(topic, "default.replication.factor")
            # Internal and auto-created topics take at most the nodes there are.
            rf = min(config.int(setting), n)
        return placement(topic, start, count, rf, ids, node_racks)

    def replicas(topic: str, partition: int) -> tuple[int, ...] | None:
        info = storage.catalog.get(topic)
        if info is None:
            return None
        if info.replicas is not None and partition < len(info.replicas):
            return tuple(info.replicas[partition])
        return tuple(placement(topic, partition, 1, 1, ids)[0])

    root = first.data_dir
    controller = build_cluster(config, first, state_partition, replicas, epoch)
    storage.catalog.placer = placer
    # Logs open when the broker starts, so every one goes under its leader's directory.
    storage.logs.place = place(root, controller)

    def coordinators() -> dict[str, Callable[[int, bool], None]]:
        def loader(name: str) -> Callable[[int, bool], None]:
            def load(partition: int, on: bool) -> None:
                (runtime.load if on else runtime.unload)(name, partition)
            return load
        return {name: loader(name) for name in runtime.topics}

    manager = ReplicaManager(controller, storage, root, scheduler.clock.now_ms, coordinators)
    reassignments = Reassignments(manager)
    for member in controller.members:
        member.elections = manager
        member.reassignments = reassignments

    def forget(event: str, info: TopicInfo) -> None:
        if event == "deleted":
            controller.forget(info.name)

    storage.catalog.listeners.append(manager.on_topic_event)
    # Leaders, ISRs and replicas move in the controller: the kept Metadata entries follow.
    controller.on_change.append(storage.metadata_entries.forget)
    storage.catalog.listeners.append(forget)

    def lag_interval() -> int:
        return max(min(config.int("replica.lag.time.max.ms"),
                       config.int("broker.session.timeout.ms")) // 2, 1)

    scheduler.every("replica-lag", lag_interval, manager.check_lag)

    def rebalance(_now: int) -> None:
        if config.bool("auto.leader.rebalance.enable"):
            manager.rebalance_leaders()

    scheduler.every("leader-rebalance",
                    lambda: config.int("leader.imbalance.check.interval.seconds") * 1000,
                    rebalance)
    selector = selector_for(config)
    peers: list[tuple[Cluster, KafkaApis]] = []
    for node in controller.members:
        if node is first:
            node_apis, sessions = apis, fetch_sessions
        else:
            node_apis = KafkaApis(apis.access, apis.faults, apis.metrics, apis.release,
                                  node.node_id)
            node_apis.disconnect_listeners.extend(apis.disconnect_listeners)
            # One set of quota managers for the process: its nodes share the rates.
            node_apis.quota_managers, node_apis.throttling = apis.quota_managers, apis.throttling
            sessions = FetchSessionCache(
                config.int("max.incremental.fetch.session.cache.slots"),
                fetch_sessions.clock)
            peers.append((node, node_apis))
        # The console charts each node's request rate and latency.
        node_apis.count_per_node()
        for route in guarded_routes(node, storage.catalog,
                                    node_routes(node, apis=node_apis, fetch_sessions=sessions),
                                    epoch, FetchReplicas(node, manager, storage, selector)):
            node_apis.register(route)
    return peers, manager
