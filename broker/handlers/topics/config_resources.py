"""ListConfigResources (API key 74; v0 is Kafka 3.7-4.0's ListClientMetricsResources,
v1 is KIP-1142's ListConfigResources of Kafka 4.1): the resources that have configs.

v0 lists client-metrics subscriptions only. v1 lists the resource types asked for, or all
of Kafka 4.1's when none is named: groups with configs, client-metrics subscriptions,
broker loggers, brokers and topics; a type outside those is UNSUPPORTED_VERSION, as in
Kafka. Authorization (DescribeConfigs on the cluster) is checked before the handler.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE, ConfigResourceType

from ...cluster import Cluster
from ...config.groups import GroupConfigs
from ...context import RequestContext
from ...telemetry.subscriptions import Subscriptions
from ...topic_store import Storage

LIST_CONFIG_RESOURCES = ApiKey.LIST_CONFIG_RESOURCES

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    LIST_CONFIG_RESOURCES: (0, 1),
}
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = (
    ConfigResourceType.TOPIC, ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER,
    ConfigResourceType.CLIENT_METRICS, ConfigResourceType.GROUP)
SUPPORTED_TYPES = (GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC)


def list_config_resources(cluster: Cluster, storage: Storage, groups: GroupConfigs,
                          client_metrics: Subscriptions, ctx: RequestContext,
                          req: Any) -> Any:
    resp_t = codecs.codec(LIST_CONFIG_RESOURCES, ctx.api_version).response_type
    resource_t = nested(resp_t, "ConfigResource")
    if ctx.api_version == 0:
        wanted: tuple[int, ...] = (CLIENT_METRICS,)
    else:
        wanted = tuple(int(t) for t in req.resource_types) or SUPPORTED_TYPES
        if any(t not in SUPPORTED_TYPES for t in wanted):
            return build(resp_t, throttle_time=NO_THROTTLE,
                         error_code=ErrorCode.unsupported_version, config_resources=())
    found: list[tuple[str, int]] = []
    if GROUP in wanted:
        found.extend((g, GROUP) for g in sorted(groups.groups))
    if CLIENT_METRICS in wanted:
        found.extend((name, CLIENT_METRICS) for name in client_metrics.names())
    if BROKER_LOGGER in wanted:
        found.append((str(cluster.node_id), BROKER_LOGGER))
    if BROKER in wanted:
        found.append((str(cluster.node_id), BROKER))
    if TOPIC in wanted:
        found.extend((t.name, TOPIC) for t in storage.catalog)
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=NO_ERROR,
                 config_resources=tuple(build(resource_t, resource_name=name, resource_type=rt)
                                        for name, rt in found))
