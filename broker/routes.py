"""The one table of every API this broker serves: handler (bound to its dependencies),
versions (each handler module's ``VERSIONS``, beside the code that depends on them) and
the authorization each request needs before its handler runs.

``acl=None`` means the handler authorizes per resource inside the request, as Kafka
answers those APIs (Metadata, CreateTopics, configs, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.protocol import features as protocol_features
from kafkalite.protocol.api_keys import ApiKey

from .apis import AclFn, Handler, KafkaApis, Route
from .auth import Access
from .cluster import Cluster
from .config.dynamic import DynamicBrokerConfig
from .context import RequestContext
from .handlers.cluster import (
    api_versions,
    cluster_admin,
    describe_topics,
    features,
    metadata,
    quorum,
    registrations,
    telemetry,
)
from .handlers.data import fetch, leader_epochs, list_offsets, produce
from .handlers.data.fetch_session import FetchSessionCache
from .handlers.groups import (
    consumer_groups,
    find_coordinator,
    group_admin,
    groups,
    offsets,
    share_groups,
    streams_groups,
)
from .handlers.security import delegation_tokens, sasl, scram_credentials
from .handlers.topics import client_quotas, config_resources, configs, create_delete
from .handlers.transactions import txn_offsets
from .handlers.transactions.txn_verify import TxnVerification
from .metrics import BrokerMetrics
from .quotas import ClientQuotaStore
from .quotas.managers import QuotaManagers
from .security.setup import SecurityState
from .share.path import SharePath
from .telemetry.clients import ClientRegistry
from .topic_store import Storage

if TYPE_CHECKING:
    from kafkalite.coordinator.txn.transactions import Transactions

#: The versions of the handler modules imported on their first request (``OnFirstRequest``),
#: as each declares them in its ``VERSIONS`` (a test holds the two equal): ApiVersions
#: lists them before any is imported.
DEFERRED_VERSIONS: dict[str, dict[int, tuple[int | None, int | None]]] = {
    "data.share_fetch": {ApiKey.SHARE_FETCH: (1, 2), ApiKey.SHARE_ACKNOWLEDGE: (1, 2)},
    "security.acls": {ApiKey.CREATE_ACLS: (1, 3), ApiKey.DESCRIBE_ACLS: (1, 3),
                      ApiKey.DELETE_ACLS: (1, 3)},
    "transactions.producer_ids": {ApiKey.INIT_PRODUCER_ID: (0, 5),
                                  ApiKey.DESCRIBE_PRODUCERS: (0, 0)},
    "transactions.transactions": {ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
                                  ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
                                  ApiKey.END_TXN: (0, 5), ApiKey.WRITE_TXN_MARKERS: (1, 2),
                                  ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
                                  ApiKey.LIST_TRANSACTIONS: (0, 2)},
    "groups.share_offsets": {ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),
                             ApiKey.ALTER_SHARE_GROUP_OFFSETS: (0, 0),
                             ApiKey.DELETE_SHARE_GROUP_OFFSETS: (0, 0)},
}


class OnFirstRequest:
    """A handler made on its first request: its module imported and what it serves built
    then, for the APIs many brokers never see a request of."""

    __slots__ = ("_handler", "_make")

    def __init__(self, make: Callable[[], Handler]) -> None:
        self._make = make
        self._handler: Handler | None = None

    def __call__(self, ctx: RequestContext, request: Any, **kwargs: Any) -> Any:
        # Keywords: what a multi-node broker's guard adds (``cluster.guard``).
        handler: Callable[..., Any] | None = self._handler
        if handler is None:
            handler = self._handler = self._make()
        return handler(ctx, request, **kwargs)


def _deferred(module: str, name: str, *bound: Any) -> OnFirstRequest:
    """Handler ``name`` of ``handlers.<module>`` (``module`` as ``data.share_fetch``) with
    ``bound`` before the request, imported on its first request."""
    def make() -> Handler:
        from importlib import import_module

        fn: Handler = partial(getattr(import_module(f"{__package__}.handlers.{module}"), name),
                              *bound)
        return fn

    return OnFirstRequest(make)


def _share_fetch(name: str, share: SharePath) -> OnFirstRequest:
    def make() -> Handler:
        from .handlers.data import share_fetch

        fn: Handler = partial(getattr(share_fetch, name), share.requests)
        return fn

    return OnFirstRequest(make)


def _share_offsets(name: str, runtime: CoordinatorRuntime, access: Access,
                   share: SharePath) -> OnFirstRequest:
    def make() -> Handler:
        from .handlers.groups import share_offsets

        fn: Handler = partial(getattr(share_offsets, name), runtime, access, share.store)
        return fn

    return OnFirstRequest(make)


def _route(api_key: int, versions: Mapping[int, tuple[int | None, int | None]],
           handler: Handler, acl: AclFn | None = None, advertised: bool = True,
           settle_first: bool = False) -> Route:
    """A route serving the versions its handler module declares."""
    low, high = versions[api_key]
    return Route(api_key, handler, low, high, acl, advertised, settle_first)


def routes(
    cluster: Cluster,
    storage: Storage,
    access: Access,
    runtime: CoordinatorRuntime,
    txn: Transactions,
    apis: KafkaApis,
    security: SecurityState,
    quotas: ClientQuotaStore,
    dynamic: DynamicBrokerConfig,
    fetch_sessions: FetchSessionCache,
    metrics: BrokerMetrics,
    share: SharePath,
    clients: ClientRegistry,
    consumer_protocol: bool = True,
    quota_managers: QuotaManagers | None = None,
) -> list[Route]:
    """``consumer_protocol``: KIP-848 consumer groups are enabled
    (``group.coordinator.rebalance.protocols`` lists ``consumer``)."""
    group_acl = groups.GroupAcl()
    pids, txns = "transactions.producer_ids", "transactions.transactions"
    mutations = (quota_managers or QuotaManagers()).mutation
    verify = TxnVerification(txn, storage.config)
    return [
        # --- data ---------------------------------------------------------------------
        _route(produce.PRODUCE, produce.VERSIONS,
               partial(produce.produce, storage, access, metrics, verify)),
        _route(fetch.FETCH, fetch.VERSIONS,
               partial(fetch.fetch, storage, access, fetch_sessions, metrics)),
        _route(list_offsets.LIST_OFFSETS, list_offsets.VERSIONS,
               partial(list_offsets.list_offsets, storage, access)),
        _route(list_offsets.DELETE_RECORDS, list_offsets.VERSIONS,
               partial(list_offsets.delete_records, storage, access)),
        _route(ApiKey.INIT_PRODUCER_ID, DEFERRED_VERSIONS[pids],
               _deferred(pids, "init_producer_id", storage, txn, access)),
        _route(ApiKey.DESCRIBE_PRODUCERS, DEFERRED_VERSIONS[pids],
               _deferred(pids, "describe_producers", storage, access)),
        _route(leader_epochs.OFFSET_FOR_LEADER_EPOCH, leader_epochs.VERSIONS,
               partial(leader_epochs.offset_for_leader_epoch, storage, access)),
        # --- metadata, topics and configs -----------------------------------------------
        _route(metadata.METADATA, metadata.VERSIONS,
               partial(metadata.metadata, cluster, storage, access)),
        _route(describe_topics.DESCRIBE_TOPIC_PARTITIONS, describe_topics.VERSIONS,
               partial(describe_topics.describe_topic_partitions, cluster, storage, access,
                       storage.config.int("max.request.partition.size.limit"))),
        # Run in slices, throttled by the controller mutation quota once finished.
        _route(create_delete.CREATE_TOPICS, create_delete.VERSIONS,
               partial(create_delete.create_topics, cluster, storage, access, mutations),
               settle_first=True),
        _route(create_delete.DELETE_TOPICS, create_delete.VERSIONS,
               partial(create_delete.delete_topics, storage, access, mutations),
               settle_first=True),
        _route(create_delete.CREATE_PARTITIONS, create_delete.VERSIONS,
               partial(create_delete.create_partitions, cluster, storage, access, mutations),
               settle_first=True),
        _route(configs.DESCRIBE_CONFIGS, configs.VERSIONS,
               partial(configs.describe_configs, cluster, storage, dynamic, access)),
        _route(configs.ALTER_CONFIGS, configs.VERSIONS,
               partial(configs.alter_configs, cluster, storage, dynamic, access)),
        _route(configs.INCREMENTAL_ALTER_CONFIGS, configs.VERSIONS,
               partial(configs.incremental_alter_configs, cluster, storage, dynamic, access)),
        _route(config_resources.LIST_CONFIG_RESOURCES, config_resources.VERSIONS,
               partial(config_resources.list_config_resources, cluster, storage,
                       dynamic.groups, dynamic.client_metrics),
               acl=cluster_admin.cluster_describe_configs_acl),
        _route(client_quotas.DESCRIBE_CLIENT_QUOTAS, client_quotas.VERSIONS,
               partial(client_quotas.describe_client_quotas, quotas),
               acl=cluster_admin.cluster_describe_configs_acl),
        _route(client_quotas.ALTER_CLIENT_QUOTAS, client_quotas.VERSIONS,
               partial(client_quotas.alter_client_quotas, quotas, access)),
        # --- cluster --------------------------------------------------------------------
        _route(cluster_admin.DESCRIBE_CLUSTER, cluster_admin.VERSIONS,
               partial(cluster_admin.describe_cluster, cluster, access)),
        _route(cluster_admin.DESCRIBE_LOG_DIRS, cluster_admin.VERSIONS,
               partial(cluster_admin.describe_log_dirs, cluster, storage),
               acl=cluster_admin.cluster_describe_acl),
        _route(cluster_admin.ALTER_REPLICA_LOG_DIRS, cluster_admin.VERSIONS,
               partial(cluster_admin.alter_replica_log_dirs, cluster, storage, access)),
        _route(quorum.DESCRIBE_QUORUM, quorum.VERSIONS,
               partial(quorum.describe_quorum, cluster, runtime.now),
               acl=cluster_admin.cluster_describe_acl),
        _route(features.UPDATE_FEATURES, features.VERSIONS,
               partial(features.update_features, cluster,
                       protocol_features.for_release(apis.release.features)),
               acl=cluster_admin.cluster_alter_acl),
        _route(registrations.UNREGISTER_BROKER, registrations.VERSIONS,
               partial(registrations.unregister_broker, cluster),
               acl=cluster_admin.cluster_alter_acl),
        _route(registrations.UNREGISTER_CONTROLLER, registrations.VERSIONS,
               partial(registrations.unregister_controller, cluster),
               acl=cluster_admin.cluster_alter_acl),
        _route(cluster_admin.ELECT_LEADERS, cluster_admin.VERSIONS,
               partial(cluster_admin.elect_leaders, cluster, storage),
               acl=cluster_admin.cluster_alter_acl),
        _route(cluster_admin.LIST_PARTITION_REASSIGNMENTS, cluster_admin.VERSIONS,
               partial(cluster_admin.list_reassignments, cluster),
               acl=cluster_admin.cluster_describe_acl),
        _route(cluster_admin.ALTER_PARTITION_REASSIGNMENTS, cluster_admin.VERSIONS,
               partial(cluster_admin.alter_reassignments, cluster, storage),
               acl=cluster_admin.cluster_alter_acl),
        _route(api_versions.API_VERSIONS, api_versions.VERSIONS,
               partial(api_versions.api_versions, apis, {}, cluster, clients)),
        # KIP-714 client telemetry, with the built-in receiver (Kafka: with a plugin).
        _route(telemetry.GET_TELEMETRY_SUBSCRIPTIONS, telemetry.VERSIONS,
               partial(telemetry.get_telemetry_subscriptions, clients,
                       partial(storage.config.int, "telemetry.max.bytes"))),
        _route(telemetry.PUSH_TELEMETRY, telemetry.VERSIONS,
               partial(telemetry.push_telemetry, clients)),
        # --- groups ---------------------------------------------------------------------
        _route(find_coordinator.FIND_COORDINATOR, find_coordinator.VERSIONS,
               partial(find_coordinator.find_coordinator, cluster, runtime, access)),
        _route(groups.JOIN_GROUP, groups.VERSIONS,
               partial(groups.join_group, runtime), acl=group_acl),
        _route(groups.SYNC_GROUP, groups.VERSIONS,
               partial(groups.sync_group, runtime), acl=group_acl),
        _route(groups.HEARTBEAT, groups.VERSIONS,
               partial(groups.heartbeat, runtime), acl=group_acl),
        _route(groups.LEAVE_GROUP, groups.VERSIONS,
               partial(groups.leave_group, runtime), acl=group_acl),
        # KIP-848: always advertised; answered UNSUPPORTED_VERSION when the protocol is
        # off, as KafkaApis. The handlers authorize (Read on the group, Describe on topics).
        _route(consumer_groups.CONSUMER_GROUP_HEARTBEAT, consumer_groups.VERSIONS,
               partial(consumer_groups.consumer_group_heartbeat, runtime, access,
                       consumer_protocol, group_acl)),
        _route(consumer_groups.CONSUMER_GROUP_DESCRIBE, consumer_groups.VERSIONS,
               partial(consumer_groups.consumer_group_describe, runtime, access,
                       consumer_protocol)),
        # KIP-932 share groups. The handlers authorize (Read on the group and topics).
        _route(share_groups.SHARE_GROUP_HEARTBEAT, share_groups.VERSIONS,
               partial(share_groups.share_group_heartbeat, runtime, access, group_acl)),
        _route(share_groups.SHARE_GROUP_DESCRIBE, share_groups.VERSIONS,
               partial(share_groups.share_group_describe, runtime, access)),
        # KIP-1071 streams groups. The handlers authorize (Read on the group, Describe on
        # the source topics, Create for the internal topics the coordinator creates).
        _route(streams_groups.STREAMS_GROUP_HEARTBEAT, streams_groups.VERSIONS,
               partial(streams_groups.streams_group_heartbeat, runtime, storage, access,
                       group_acl)),
        _route(streams_groups.STREAMS_GROUP_DESCRIBE, streams_groups.VERSIONS,
               partial(streams_groups.streams_group_describe, runtime, access)),
        _route(streams_groups.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE,
               streams_groups.VERSIONS,
               partial(streams_groups.streams_group_topology_description_update, access)),
        _route(ApiKey.SHARE_FETCH, DEFERRED_VERSIONS["data.share_fetch"],
               _share_fetch("share_fetch", share)),
        _route(ApiKey.SHARE_ACKNOWLEDGE, DEFERRED_VERSIONS["data.share_fetch"],
               _share_fetch("share_acknowledge", share)),
        _route(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, DEFERRED_VERSIONS["groups.share_offsets"],
               _share_offsets("describe_share_group_offsets", runtime, access, share)),
        _route(ApiKey.ALTER_SHARE_GROUP_OFFSETS, DEFERRED_VERSIONS["groups.share_offsets"],
               _share_offsets("alter_share_group_offsets", runtime, access, share)),
        _route(ApiKey.DELETE_SHARE_GROUP_OFFSETS, DEFERRED_VERSIONS["groups.share_offsets"],
               _share_offsets("delete_share_group_offsets", runtime, access, share)),
        # --- offsets and group administration -----------------------------------------
        _route(offsets.OFFSET_COMMIT, offsets.VERSIONS,
               partial(offsets.offset_commit, storage, runtime, access)),
        _route(offsets.OFFSET_FETCH, offsets.VERSIONS,
               partial(offsets.offset_fetch, storage, runtime, access)),
        _route(offsets.OFFSET_DELETE, offsets.VERSIONS,
               partial(offsets.offset_delete, storage, runtime, access),
               acl=offsets.offset_delete_acl),
        _route(group_admin.DESCRIBE_GROUPS, group_admin.VERSIONS,
               partial(group_admin.describe_groups, runtime, access)),
        _route(group_admin.LIST_GROUPS, group_admin.VERSIONS,
               partial(group_admin.list_groups, runtime, access)),
        _route(group_admin.DELETE_GROUPS, group_admin.VERSIONS,
               partial(group_admin.delete_groups, runtime, access)),
        # --- transactions -----------------------------------------------------------------
        _route(ApiKey.ADD_PARTITIONS_TO_TXN, DEFERRED_VERSIONS[txns],
               _deferred(txns, "add_partitions_to_txn", storage, txn, access)),
        _route(ApiKey.ADD_OFFSETS_TO_TXN, DEFERRED_VERSIONS[txns],
               _deferred(txns, "add_offsets_to_txn", txn, access)),
        _route(ApiKey.END_TXN, DEFERRED_VERSIONS[txns],
               _deferred(txns, "end_txn", txn, access)),
        _route(txn_offsets.TXN_OFFSET_COMMIT, txn_offsets.VERSIONS,
               partial(txn_offsets.txn_offset_commit, storage, runtime, verify, access)),
        _route(ApiKey.WRITE_TXN_MARKERS, DEFERRED_VERSIONS[txns],
               _deferred(txns, "write_txn_markers", storage, txn, access)),
        _route(ApiKey.DESCRIBE_TRANSACTIONS, DEFERRED_VERSIONS[txns],
               _deferred(txns, "describe_transactions", txn, access)),
        _route(ApiKey.LIST_TRANSACTIONS, DEFERRED_VERSIONS[txns],
               _deferred(txns, "list_transactions", txn, access)),
        # --- security -------------------------------------------------------------------
        _route(sasl.SASL_HANDSHAKE, sasl.VERSIONS, sasl.sasl_handshake),
        _route(sasl.SASL_AUTHENTICATE, sasl.VERSIONS, sasl.sasl_authenticate),
        _route(ApiKey.CREATE_ACLS, DEFERRED_VERSIONS["security.acls"],
               _deferred("security.acls", "handle_create", security.acls, access)),
        _route(ApiKey.DESCRIBE_ACLS, DEFERRED_VERSIONS["security.acls"],
               _deferred("security.acls", "handle_describe", security.acls, access)),
        _route(ApiKey.DELETE_ACLS, DEFERRED_VERSIONS["security.acls"],
               _deferred("security.acls", "handle_delete", security.acls, access)),
        _route(scram_credentials.DESCRIBE_USER_SCRAM_CREDENTIALS, scram_credentials.VERSIONS,
               partial(scram_credentials.handle_describe, security.scram, access)),
        _route(scram_credentials.ALTER_USER_SCRAM_CREDENTIALS, scram_credentials.VERSIONS,
               partial(scram_credentials.handle_alter, security.scram, access)),
        *_token_routes(security, access),
    ]


def _token_routes(security: SecurityState, access: Access) -> list[Route]:
    tokens = security.tokens
    if tokens is None:
        return []
    v = delegation_tokens.VERSIONS
    return [
        _route(delegation_tokens.CREATE, v, partial(delegation_tokens.handle_create, tokens,
                                                    access)),
        _route(delegation_tokens.RENEW, v, partial(delegation_tokens.handle_renew, tokens)),
        _route(delegation_tokens.EXPIRE, v, partial(delegation_tokens.handle_expire, tokens)),
        _route(delegation_tokens.DESCRIBE, v, partial(delegation_tokens.handle_describe,
                                                      tokens, access)),
    ]
