"""The one table of every API this broker serves: handler (bound to its dependencies),
versions and the authorization each request needs before its handler runs.

``acl=None`` means the handler authorizes per resource inside the request, as Kafka
answers those APIs (Metadata, CreateTopics, configs, ...).
"""

from __future__ import annotations

from functools import partial

from kafkalite.coordinator.runtime import CoordinatorRuntime
from kafkalite.coordinator.transactions import Transactions
from kafkalite.protocol import apis as codecs

from .apis import KafkaApis, Route
from .auth import Access
from .cluster import Cluster
from .config.dynamic import DynamicBrokerConfig
from .handlers import (
    acls,
    api_versions,
    client_quotas,
    cluster_admin,
    config_resources,
    configs,
    consumer_groups,
    describe_topics,
    features,
    fetch,
    find_coordinator,
    group_admin,
    groups,
    leader_epochs,
    list_offsets,
    metadata,
    offsets,
    produce,
    producer_ids,
    quorum,
    sasl,
    scram_credentials,
    share_groups,
    topics,
    transactions,
    txn_offsets,
)
from .handlers.fetch_session import FetchSessionCache
from .handlers.txn_verify import TxnVerification
from .metrics import BrokerMetrics
from .quotas import ClientQuotaStore
from .security.setup import SecurityState
from .topic_store import Storage


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
    consumer_protocol: bool = True,
) -> list[Route]:
    """``consumer_protocol``: KIP-848 consumer groups are enabled
    (``group.coordinator.rebalance.protocols`` lists ``consumer``)."""
    group_acl = groups.GroupAcl()
    verify = TxnVerification(txn, storage.config)
    return [
        # --- data ---------------------------------------------------------------------
        Route(produce.PRODUCE, partial(produce.produce, storage, access, metrics, verify),
              min_version=3),
        Route(fetch.FETCH, partial(fetch.fetch, storage, access, fetch_sessions, metrics),
              min_version=4),
        Route(list_offsets.LIST_OFFSETS, partial(list_offsets.list_offsets, storage, access),
              min_version=1),
        Route(list_offsets.DELETE_RECORDS,
              partial(list_offsets.delete_records, storage, access)),
        Route(producer_ids.INIT_PRODUCER_ID,
              partial(producer_ids.init_producer_id, storage, txn, access),
              min_version=0, max_version=5),
        Route(producer_ids.DESCRIBE_PRODUCERS,
              partial(producer_ids.describe_producers, storage, access),
              min_version=0, max_version=0),
        Route(leader_epochs.OFFSET_FOR_LEADER_EPOCH,
              partial(leader_epochs.offset_for_leader_epoch, storage, access),
              min_version=2, max_version=4),
        # --- metadata, topics and configs -----------------------------------------------
        Route(metadata.METADATA, partial(metadata.metadata, cluster, storage, access),
              min_version=0, max_version=13),
        Route(describe_topics.DESCRIBE_TOPIC_PARTITIONS,
              partial(describe_topics.describe_topic_partitions, cluster, storage, access,
                      storage.config.int("max.request.partition.size.limit")),
              min_version=0, max_version=0),
        Route(topics.CREATE_TOPICS, partial(topics.create_topics, cluster, storage, access),
              min_version=2, max_version=7),
        Route(topics.DELETE_TOPICS, partial(topics.delete_topics, storage, access),
              min_version=1, max_version=6),
        Route(topics.CREATE_PARTITIONS,
              partial(topics.create_partitions, cluster, storage, access),
              min_version=0, max_version=3),
        Route(configs.DESCRIBE_CONFIGS,
              partial(configs.describe_configs, cluster, storage, dynamic, access),
              min_version=1, max_version=4),
        Route(configs.ALTER_CONFIGS,
              partial(configs.alter_configs, cluster, storage, dynamic, access),
              min_version=0, max_version=2),
        Route(configs.INCREMENTAL_ALTER_CONFIGS,
              partial(configs.incremental_alter_configs, cluster, storage, dynamic, access),
              min_version=0, max_version=1),
        Route(config_resources.LIST_CONFIG_RESOURCES,
              partial(config_resources.list_config_resources, cluster, storage,
                      dynamic.groups),
              min_version=0, max_version=1, acl=cluster_admin.cluster_describe_configs_acl),
        Route(client_quotas.DESCRIBE_CLIENT_QUOTAS,
              partial(client_quotas.describe_client_quotas, quotas),
              min_version=0, max_version=1, acl=cluster_admin.cluster_describe_configs_acl),
        Route(client_quotas.ALTER_CLIENT_QUOTAS,
              partial(client_quotas.alter_client_quotas, quotas, access),
              min_version=0, max_version=1),
        # --- cluster --------------------------------------------------------------------
        Route(cluster_admin.DESCRIBE_CLUSTER,
              partial(cluster_admin.describe_cluster, cluster, access),
              min_version=0, max_version=2),
        Route(cluster_admin.DESCRIBE_LOG_DIRS,
              partial(cluster_admin.describe_log_dirs, cluster, storage),
              min_version=1, max_version=5, acl=cluster_admin.cluster_describe_acl),
        Route(cluster_admin.ALTER_REPLICA_LOG_DIRS,
              partial(cluster_admin.alter_replica_log_dirs, cluster, storage, access),
              min_version=1, max_version=2),
        Route(quorum.DESCRIBE_QUORUM, partial(quorum.describe_quorum, cluster, runtime.now),
              min_version=0, max_version=2, acl=cluster_admin.cluster_describe_acl),
        Route(features.UPDATE_FEATURES, partial(features.update_features, cluster),
              min_version=0, max_version=2, acl=cluster_admin.cluster_alter_acl),
        Route(cluster_admin.ELECT_LEADERS, partial(cluster_admin.elect_leaders, storage),
              min_version=0, max_version=2, acl=cluster_admin.cluster_alter_acl),
        Route(cluster_admin.LIST_PARTITION_REASSIGNMENTS, cluster_admin.list_reassignments,
              min_version=0, max_version=0, acl=cluster_admin.cluster_describe_acl),
        Route(cluster_admin.ALTER_PARTITION_REASSIGNMENTS,
              partial(cluster_admin.alter_reassignments, cluster, storage),
              min_version=0, max_version=1, acl=cluster_admin.cluster_alter_acl),
        Route(codecs.API_VERSIONS_KEY, partial(api_versions.api_versions, apis, {}),
              min_version=0, max_version=4),
        # --- groups ---------------------------------------------------------------------
        Route(find_coordinator.FIND_COORDINATOR,
              partial(find_coordinator.find_coordinator, cluster, runtime, access),
              min_version=0, max_version=6),
        Route(groups.JOIN_GROUP, partial(groups.join_group, runtime),
              min_version=0, max_version=9, acl=group_acl),
        Route(groups.SYNC_GROUP, partial(groups.sync_group, runtime),
              min_version=0, max_version=5, acl=group_acl),
        Route(groups.HEARTBEAT, partial(groups.heartbeat, runtime),
              min_version=0, max_version=4, acl=group_acl),
        Route(groups.LEAVE_GROUP, partial(groups.leave_group, runtime),
              min_version=0, max_version=5, acl=group_acl),
        # KIP-848: always advertised; answered UNSUPPORTED_VERSION when the protocol is
        # off, as KafkaApis. The handlers authorize (Read on the group, Describe on topics).
        Route(consumer_groups.CONSUMER_GROUP_HEARTBEAT,
              partial(consumer_groups.consumer_group_heartbeat, runtime, access,
                      consumer_protocol, group_acl),
              min_version=0, max_version=1),
        Route(consumer_groups.CONSUMER_GROUP_DESCRIBE,
              partial(consumer_groups.consumer_group_describe, runtime, access,
                      consumer_protocol),
              min_version=0, max_version=1),
        # KIP-932 share groups: served, not advertised until ShareFetch and
        # ShareAcknowledge are (a share consumer seeing the heartbeat would rely on them).
        Route(share_groups.SHARE_GROUP_HEARTBEAT,
              partial(share_groups.share_group_heartbeat, runtime, access, group_acl),
              min_version=1, max_version=1, advertised=False),
        Route(share_groups.SHARE_GROUP_DESCRIBE,
              partial(share_groups.share_group_describe, runtime, access),
              min_version=1, max_version=1, advertised=False),
        # --- offsets and group administration -----------------------------------------
        Route(offsets.OFFSET_COMMIT,
              partial(offsets.offset_commit, storage, runtime, access),
              min_version=2, max_version=10),
        Route(offsets.OFFSET_FETCH, partial(offsets.offset_fetch, storage, runtime, access),
              min_version=1, max_version=10),
        Route(offsets.OFFSET_DELETE,
              partial(offsets.offset_delete, storage, runtime, access),
              min_version=0, max_version=0, acl=offsets.offset_delete_acl),
        Route(group_admin.DESCRIBE_GROUPS,
              partial(group_admin.describe_groups, runtime, access),
              min_version=0, max_version=6),
        Route(group_admin.LIST_GROUPS, partial(group_admin.list_groups, runtime, access),
              min_version=0, max_version=5),
        Route(group_admin.DELETE_GROUPS,
              partial(group_admin.delete_groups, runtime, access),
              min_version=0, max_version=2),
        # --- transactions -----------------------------------------------------------------
        Route(transactions.ADD_PARTITIONS_TO_TXN,
              partial(transactions.add_partitions_to_txn, storage, txn, access),
              min_version=0, max_version=5),
        Route(transactions.ADD_OFFSETS_TO_TXN,
              partial(transactions.add_offsets_to_txn, txn, access),
              min_version=0, max_version=4),
        Route(transactions.END_TXN, partial(transactions.end_txn, txn, access),
              min_version=0, max_version=5),
        Route(txn_offsets.TXN_OFFSET_COMMIT,
              partial(txn_offsets.txn_offset_commit, storage, runtime, verify, access),
              min_version=0, max_version=5),
        Route(transactions.WRITE_TXN_MARKERS,
              partial(transactions.write_txn_markers, storage, txn, access),
              min_version=1, max_version=1),
        Route(transactions.DESCRIBE_TRANSACTIONS,
              partial(transactions.describe_transactions, txn, access),
              min_version=0, max_version=0),
        Route(transactions.LIST_TRANSACTIONS,
              partial(transactions.list_transactions, txn, access),
              min_version=0, max_version=2),
        # --- security -------------------------------------------------------------------
        Route(sasl.SASL_HANDSHAKE, sasl.sasl_handshake, min_version=0, max_version=1),
        Route(sasl.SASL_AUTHENTICATE, sasl.sasl_authenticate, min_version=0, max_version=2),
        Route(acls.CREATE_ACLS, partial(acls.handle_create, security.acls, access),
              min_version=1, max_version=3),
        Route(acls.DESCRIBE_ACLS, partial(acls.handle_describe, security.acls, access),
              min_version=1, max_version=3),
        Route(acls.DELETE_ACLS, partial(acls.handle_delete, security.acls, access),
              min_version=1, max_version=3),
        Route(scram_credentials.DESCRIBE_USER_SCRAM_CREDENTIALS,
              partial(scram_credentials.handle_describe, security.scram, access)),
        Route(scram_credentials.ALTER_USER_SCRAM_CREDENTIALS,
              partial(scram_credentials.handle_alter, security.scram, access)),
    ]
