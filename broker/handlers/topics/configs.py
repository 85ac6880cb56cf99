"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs.

Topic configs are applied live through the catalogue (storage listens to its events).
Broker configs follow KIP-226: this broker's dynamic values (resource name = node id) and
the cluster-wide defaults (empty name) change through ``DynamicBrokerConfig``, which
validates, persists and applies them; read-only properties are refused with Kafka's
messages. Errors on broker resources are INVALID_REQUEST, as a KRaft broker answers. Group configs
(resource type GROUP) are one group's overrides of the broker's group settings
(``broker/config/groups.py``), authorized on the group as Kafka does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE, ConfigResourceType
from kafkalite.storage.topic_config import (
    DEFAULT_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    GROUP_CONFIG,
    TOPIC_CONFIGS,
    InvalidConfig,
    ResolvedConfig,
    resolve_all,
    synonyms,
    validate,
)

from ...auth import CLUSTER_NAME, Access, Operation, ResourceType
from ...cluster import Cluster
from ...config.definitions import (
    ALL_DYNAMIC,
    DynamicConfigError,
    broker_synonyms,
    config_type,
    is_dynamic,
    is_sensitive,
)
from ...config.dynamic import DynamicBrokerConfig
from ...config.groups import GROUP_CONFIGS, GroupConfigs, default_chain, describe_keys, value_of
from ...config.per_node import node_values
from ...config.properties import DEFAULT_VALUES, DEFAULTS, Config
from ...context import RequestContext
from ...telemetry import subscriptions as client_metrics
from ...topic_store import Storage, TopicConfigs

log = structlog.get_logger("kafkalite.configs")

ALTER_CONFIGS = ApiKey.ALTER_CONFIGS
DESCRIBE_CONFIGS = ApiKey.DESCRIBE_CONFIGS
INCREMENTAL_ALTER_CONFIGS = ApiKey.INCREMENTAL_ALTER_CONFIGS

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    DESCRIBE_CONFIGS: (1, 4),
    ALTER_CONFIGS: (0, 2),
    INCREMENTAL_ALTER_CONFIGS: (0, 1),
}
DESCRIBE_CLUSTER = ApiKey.DESCRIBE_CLUSTER

#: Kafka's ConfigResource.Type codes.
RESOURCE_TOPIC = ConfigResourceType.TOPIC
RESOURCE_BROKER = ConfigResourceType.BROKER
RESOURCE_BROKER_LOGGER = ConfigResourceType.BROKER_LOGGER
RESOURCE_CLIENT_METRICS = ConfigResourceType.CLIENT_METRICS
RESOURCE_GROUP = ConfigResourceType.GROUP
#: Kafka's ConfigSource.CLIENT_METRICS_CONFIG.
CLIENT_METRICS_CONFIG = 7

#: Kafka's ConfigEntry.ConfigType codes (DescribeConfigs v3+).
CONFIG_TYPES = {
    "BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7,
    "CLASS": 8, "PASSWORD": 9,
}

#: IncrementalAlterConfigs operations.
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3


class ConfigRequestError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def topic_configs(configs: TopicConfigs, overrides: dict[str, str]) -> list[ResolvedConfig]:
    """Every topic config's effective value for a topic with ``overrides``."""
    return list(resolve_all(overrides, configs.levels()).values())


def _describe_topic(
    storage: Storage, resp_t: type[Any], name: str, keys: Iterable[str] | None,
    include_synonyms: bool,
) -> tuple[Any, ...]:
    info = storage.catalog.get(name)
    if info is None:
        raise ConfigRequestError(ErrorCode.unknown_topic_or_partition,
                                 "The topic does not exist.")
    entry_t = nested(resp_t, "DescribeConfigsResourceResult")
    syn_t = nested(resp_t, "DescribeConfigsSynonym")
    wanted = set(keys) if keys else None
    levels = storage.topic_configs.levels()
    out = []
    for r in topic_configs(storage.topic_configs, info.configs):
        if wanted is not None and r.name not in wanted:
            continue
        sensitive = r.definition.sensitive
        syns = tuple(
            build(syn_t, name=n, value=None if sensitive else v, source=s)
            for n, v, s in synonyms(info.configs, levels, r.name)
        ) if include_synonyms else ()
        out.append(build(
            entry_t, name=r.name, value=None if sensitive else r.value,
            read_only=False, config_source=r.source, is_default=r.source == DEFAULT_CONFIG,
            is_sensitive=sensitive, synonyms=syns,
            config_type=CONFIG_TYPES.get(r.definition.type, 0), documentation=None,
        ))
    return tuple(out)


def _broker_id(node_id: int, name: str, describe: bool) -> None:
    """Check a non-empty broker resource name names this broker (Kafka's messages)."""
    try:
        n = int(name)
    except ValueError:
        who = "Broker" if describe else "Node"
        raise ConfigRequestError(ErrorCode.invalid_request,
                                 f"{who} id must be an integer, but it is: {name}") from None
    if n != node_id:
        expected = f"{node_id} or empty string" if describe else str(node_id)
        raise ConfigRequestError(ErrorCode.invalid_request,
                                 f"Unexpected broker id, expected {expected}, but received {name}")


def broker_synonym_chain(cfg: Config, name: str) -> list[tuple[str, str, int]]:
    """(name, value, source) of a broker property and its synonyms over every level, as
    Kafka's ``ConfigHelper.configSynonyms``: level by level, synonyms in precedence order,
    then everything before the first entry for ``name`` itself dropped."""
    names = broker_synonyms(name)
    out = [(n, values[n], source) for source, values in cfg.levels() for n in names
           if values.get(n) is not None]
    while out and out[0][0] != name:
        out.pop(0)
    return out


def _describe_broker(
    cfg: Config, resp_t: type[Any], per_broker: bool, keys: Iterable[str] | None,
    include_synonyms: bool,
) -> tuple[Any, ...]:
    """``cfg``: the properties as the node described holds them (``node_config``)."""
    entry_t = nested(resp_t, "DescribeConfigsResourceResult")
    syn_t = nested(resp_t, "DescribeConfigsSynonym")
    wanted = set(keys) if keys else None
    # This broker: every property; the cluster level: only the defaults set dynamically.
    items: Mapping[str, str | None] = (cfg.all_items() if per_broker
                                       else dict(cfg.dynamic_default))
    out = []
    for key, value in sorted(items.items()):
        if wanted is not None and key not in wanted:
            continue
        sensitive = is_sensitive(key)
        chain = [(n, None if sensitive else v, s)
                 for n, v, s in broker_synonym_chain(cfg, key)
                 if per_broker or s == DYNAMIC_DEFAULT_BROKER_CONFIG]
        source = chain[0][2] if chain else DEFAULT_CONFIG
        syns = tuple(build(syn_t, name=n, value=v, source=s) for n, v, s in chain
                     ) if include_synonyms else ()
        typ = config_type(key)
        out.append(build(
            entry_t, name=key, value=None if sensitive else value, read_only=not is_dynamic(key),
            config_source=source, is_default=source == DEFAULT_CONFIG, is_sensitive=sensitive,
            synonyms=syns, config_type=CONFIG_TYPES.get(typ, 0) if typ else 0,
            documentation=None,
        ))
    return tuple(out)


def _apply_topic(
    storage: Storage, name: str, new: dict[str, str], validate_only: bool
) -> None:
    for k, v in new.items():
        try:
            validate(k, v)
        except InvalidConfig as e:
            raise ConfigRequestError(ErrorCode.invalid_config, str(e)) from e
    if not validate_only:
        storage.catalog.set_configs(name, new)
        log.info("topic.configs_altered", topic=name, configs=new)


def _incremental(current: Mapping[str, str], configs: Iterable[Any],
                 known: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """``current`` after the operations of an IncrementalAlterConfigs resource. ``known``:
    name -> (type, default) of the names APPEND/SUBTRACT may apply to; None: any name."""
    new = dict(current)
    for c in configs:
        op = int(c.config_operation)
        if op not in (OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT):
            raise ConfigRequestError(ErrorCode.invalid_request,
                                     f"Unknown config operation {op}")
        if op == OP_DELETE:
            new.pop(c.name, None)
            continue
        if op == OP_SET:
            new[c.name] = c.value
            continue
        if c.name not in known:
            raise ConfigRequestError(ErrorCode.invalid_config, f"Unknown config name: {c.name}")
        typ, default = known[c.name]
        if typ != "LIST":
            verb = "append" if op == OP_APPEND else "subtract"
            raise ConfigRequestError(
                ErrorCode.invalid_config,
                f"Config value {verb} is not allowed for config key: {c.name}",
            )
        base = new.get(c.name, default)
        items = [s.strip() for s in base.split(",") if s.strip()]
        values = [s.strip() for s in (c.value or "").split(",") if s.strip()]
        if op == OP_APPEND:
            items += [v for v in values if v not in items]
        else:
            items = [i for i in items if i not in values]
        new[c.name] = ",".join(items)
    return new


_TOPIC_KNOWN = {d.name: (d.type, d.default) for d in TOPIC_CONFIGS.values()}
_BROKER_KNOWN = {k: (config_type(k) or "STRING", DEFAULT_VALUES.get(k, ""))
                 for k in DEFAULTS.keys() | ALL_DYNAMIC.keys()}


def _check_request_configs(configs: Iterable[Any], incremental: bool) -> None:
    """Duplicate names and null values, refused before anything else (Kafka's
    ``ConfigAdminManager.preprocess``)."""
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise ConfigRequestError(ErrorCode.invalid_request, "Error due to duplicate config keys")
    nulls = [c.name for c in configs if c.value is None
             and not (incremental and int(c.config_operation) == OP_DELETE)]
    if nulls:
        raise ConfigRequestError(ErrorCode.invalid_request,
                                 f"Null value not supported for : {', '.join(nulls)}")


def _alter_topic(storage: Storage, name: str, res: Any, incremental: bool,
                 validate_only: bool) -> None:
    info = storage.catalog.get(name)
    if info is None:
        raise ConfigRequestError(ErrorCode.unknown_topic_or_partition,
                                 "The topic does not exist.")
    if incremental:
        for c in res.configs:
            if int(c.config_operation) != OP_DELETE and c.name not in TOPIC_CONFIGS:
                raise ConfigRequestError(ErrorCode.invalid_config,
                                         f"Unknown topic config name: {c.name}")
        new = _incremental(info.configs, res.configs, _TOPIC_KNOWN)
    else:
        new = {c.name: c.value for c in res.configs}
    _apply_topic(storage, name, new, validate_only)


def _alter_broker(node_id: int, dynamic: DynamicBrokerConfig, name: str, res: Any,
                  incremental: bool, validate_only: bool) -> None:
    per_broker = name != ""
    if per_broker:
        _broker_id(node_id, name, describe=False)
    if incremental:
        new = _incremental(dynamic.current(per_broker, node_id), res.configs, _BROKER_KNOWN)
    else:
        new = {c.name: c.value for c in res.configs}
    try:
        dynamic.alter(per_broker, new, validate_only, node_id)
    except DynamicConfigError as e:
        raise ConfigRequestError(ErrorCode.invalid_request, str(e)) from e


def _describe_group(cfg: Config, groups: GroupConfigs, resp_t: type[Any], name: str,
                    keys: Iterable[str] | None, include_synonyms: bool) -> tuple[Any, ...]:
    """Kafka's ConfigHelper for a GROUP resource: the configs standing for a broker
    setting and those the group sets, the group's value first in the synonyms."""
    if not name:
        raise ConfigRequestError(ErrorCode.invalid_request, "Group name must not be empty")
    entry_t = nested(resp_t, "DescribeConfigsResourceResult")
    syn_t = nested(resp_t, "DescribeConfigsSynonym")
    wanted = set(keys) if keys else None
    overrides = groups.get(name)
    out = []
    for key in describe_keys(overrides):
        if wanted is not None and key not in wanted:
            continue
        value = value_of(cfg, overrides, key)
        chain = default_chain(cfg, key, lambda n: broker_synonym_chain(cfg, n))
        if key in overrides:
            chain = [(key, value, GROUP_CONFIG), *chain]
        # As Kafka's createGroupConfigEntry: a group config the group does not set is
        # DEFAULT_CONFIG, whatever level the broker's value comes from.
        source = GROUP_CONFIG if key in overrides else DEFAULT_CONFIG
        syns = tuple(build(syn_t, name=n, value=v, source=s) for n, v, s in chain
                     ) if include_synonyms else ()
        out.append(build(
            entry_t, name=key, value=value, read_only=False, config_source=source,
            is_default=source == DEFAULT_CONFIG, is_sensitive=False, synonyms=syns,
            config_type=CONFIG_TYPES.get(GROUP_CONFIGS[key].type, 0), documentation=None,
        ))
    return tuple(out)


def _alter_group(groups: GroupConfigs, name: str, res: Any, incremental: bool,
                 validate_only: bool) -> None:
    """A GROUP resource's change, as Kafka's controller makes it."""
    if not name:
        raise ConfigRequestError(ErrorCode.invalid_request,
                                 "Default group resources are not allowed.")
    if incremental:
        new = groups.get(name)
        for c in res.configs:
            op = int(c.config_operation)
            if op == OP_SET:
                new[c.name] = c.value
            elif op == OP_DELETE:
                new.pop(c.name, None)
            elif op in (OP_APPEND, OP_SUBTRACT):
                d = GROUP_CONFIGS.get(c.name)
                verb = "APPEND" if op == OP_APPEND else "SUBTRACT"
                if d is None or d.type != "LIST":
                    raise ConfigRequestError(
                        ErrorCode.invalid_config,
                        f"Can't {verb} to key {c.name} because its type is not LIST.")
                items = [i.strip() for i in new.get(c.name, "").split(",") if i.strip()]
                values = [v.strip() for v in (c.value or "").split(",") if v.strip()]
                if op == OP_APPEND:
                    items += [v for v in values if v not in items]
                else:
                    items = [i for i in items if i not in values]
                new[c.name] = ",".join(items)
            else:
                raise ConfigRequestError(ErrorCode.invalid_request,
                                         f"Unknown config operation {op}")
    else:
        new = {c.name: c.value for c in res.configs}
    try:
        groups.alter(name, new, validate_only)
    except InvalidConfig as e:
        raise ConfigRequestError(ErrorCode.invalid_config, str(e)) from e


def _describe_client_metrics(subs: client_metrics.Subscriptions, resp_t: type[Any],
                             name: str, keys: Iterable[str] | None,
                             include_synonyms: bool) -> tuple[Any, ...]:
    """A client-metrics subscription: every key, its own value (its one synonym) or the
    default (none)."""
    if not name:
        raise ConfigRequestError(ErrorCode.invalid_request,
                                 "Client metrics subscription name must not be empty")
    entry_t = nested(resp_t, "DescribeConfigsResourceResult")
    syn_t = nested(resp_t, "DescribeConfigsSynonym")
    wanted = set(keys) if keys else None
    return tuple(
        build(entry_t, name=key, value=value, read_only=False,
              config_source=DEFAULT_CONFIG if default else CLIENT_METRICS_CONFIG,
              is_default=default, is_sensitive=False,
              synonyms=() if default or not include_synonyms else (
                  build(syn_t, name=key, value=value, source=CLIENT_METRICS_CONFIG),),
              config_type=CONFIG_TYPES[client_metrics.CONFIGS[key][0]], documentation=None)
        for key, value, default in subs.describe(name)
        if wanted is None or key in wanted)


def _alter_client_metrics(subs: client_metrics.Subscriptions, name: str, res: Any,
                          incremental: bool, validate_only: bool) -> None:
    if incremental:
        for c in res.configs:
            op = int(c.config_operation)
            if op in (OP_APPEND, OP_SUBTRACT):
                # Kafka's controller knows no config schema for this resource type.
                verb = "APPEND" if op == OP_APPEND else "SUBTRACT"
                raise ConfigRequestError(
                    ErrorCode.invalid_config,
                    f"Can't {verb} to key {c.name} because its type is not LIST.")
        new = _incremental(subs.get(name), res.configs, client_metrics.CONFIGS)
    else:
        new = {c.name: c.value for c in res.configs}
    try:
        subs.alter(name, new, validate_only)
    except client_metrics.SubscriptionError as e:
        raise ConfigRequestError(ErrorCode.invalid_config if e.invalid_config
                                 else ErrorCode.invalid_request, e.message) from e


def _authorize(access: Access, ctx: RequestContext, op: Operation, rtype: int,
               name: str) -> None:
    """Per resource, as Kafka answers: the other resources are still served."""
    if rtype == RESOURCE_TOPIC:
        if not access.permits(ctx, op, ResourceType.TOPIC, name):
            raise ConfigRequestError(ErrorCode.topic_authorization_failed,
                                     "Authorization failed.")
    elif rtype == RESOURCE_GROUP:
        if not access.permits(ctx, op, ResourceType.GROUP, name):
            raise ConfigRequestError(ErrorCode.group_authorization_failed,
                                     "Group authorization failed.")
    elif not access.permits(ctx, op, ResourceType.CLUSTER, CLUSTER_NAME):
        raise ConfigRequestError(ErrorCode.cluster_authorization_failed,
                                 "Authorization failed.")


def describe_configs(cluster: Cluster, storage: Storage, dynamic: DynamicBrokerConfig,
                     access: Access, ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(DESCRIBE_CONFIGS, ctx.api_version).response_type
    result_t = nested(resp_t, "DescribeConfigsResult")
    include_synonyms = bool(getattr(req, "include_synonyms", False))
    results = []
    for res in req.resources:
        rtype, rname = int(res.resource_type), res.resource_name
        keys = res.configuration_keys
        try:
            _authorize(access, ctx, Operation.DESCRIBE_CONFIGS, rtype, rname)
            if rtype == RESOURCE_TOPIC:
                configs = _describe_topic(storage, resp_t, rname, keys, include_synonyms)
            elif rtype == RESOURCE_BROKER:
                if rname:
                    _broker_id(cluster.node_id, rname, describe=True)
                node_cfg = dynamic.node_config(cluster.node_id,
                                               node_values(storage.config, cluster))
                configs = _describe_broker(node_cfg, resp_t, rname != "", keys,
                                           include_synonyms)
            elif rtype == RESOURCE_GROUP:
                configs = _describe_group(storage.config, dynamic.groups, resp_t, rname, keys,
                                          include_synonyms)
            elif rtype == RESOURCE_CLIENT_METRICS:
                configs = _describe_client_metrics(dynamic.client_metrics, resp_t, rname, keys,
                                                   include_synonyms)
            else:
                raise ConfigRequestError(ErrorCode.invalid_request,
                                         f"Unsupported resource type {rtype}")
            err, msg = NO_ERROR, None
        except ConfigRequestError as e:
            configs, err, msg = (), e.code, e.message
        results.append(build(result_t, error_code=err, error_message=msg,
                             resource_type=rtype, resource_name=rname, configs=configs))
    return build(resp_t, throttle_time=NO_THROTTLE, results=tuple(results))


def _alter_response(cluster: Cluster, storage: Storage, dynamic: DynamicBrokerConfig,
                    access: Access, api_key: int, ctx: RequestContext, req: Any,
                    incremental: bool) -> Any:
    resp_t = codecs.codec(api_key, ctx.api_version).response_type
    item_t = nested(resp_t, "AlterConfigsResourceResponse")
    counts: dict[tuple[int, str], int] = {}
    for res in req.resources:
        k = (int(res.resource_type), res.resource_name)
        counts[k] = counts.get(k, 0) + 1
    out = []
    for res in req.resources:
        rtype, rname = int(res.resource_type), res.resource_name
        try:
            if counts[(rtype, rname)] > 1:
                raise ConfigRequestError(ErrorCode.invalid_request,
                                         "Each resource must appear at most once.")
            _authorize(access, ctx, Operation.ALTER_CONFIGS, rtype, rname)
            _check_request_configs(res.configs, incremental)
            if rtype == RESOURCE_TOPIC:
                _alter_topic(storage, rname, res, incremental, bool(req.validate_only))
            elif rtype == RESOURCE_BROKER:
                _alter_broker(cluster.node_id, dynamic, rname, res, incremental,
                              bool(req.validate_only))
            elif rtype == RESOURCE_GROUP:
                _alter_group(dynamic.groups, rname, res, incremental, bool(req.validate_only))
            elif rtype == RESOURCE_CLIENT_METRICS:
                _alter_client_metrics(dynamic.client_metrics, rname, res, incremental,
                                      bool(req.validate_only))
            elif rtype == RESOURCE_BROKER_LOGGER and incremental:
                raise ConfigRequestError(ErrorCode.invalid_request,
                                         "Broker logger levels cannot be altered here")
            else:
                raise ConfigRequestError(ErrorCode.invalid_request,
                                         f"Unknown resource type {rtype}")
            err, msg = NO_ERROR, None
        except ConfigRequestError as e:
            err, msg = e.code, e.message
        out.append(build(item_t, error_code=err, error_message=msg,
                         resource_type=rtype, resource_name=rname))
    return build(resp_t, throttle_time=NO_THROTTLE, responses=tuple(out))


def alter_configs(cluster: Cluster, storage: Storage, dynamic: DynamicBrokerConfig,
                  access: Access, ctx: RequestContext, req: Any) -> Any:
    return _alter_response(cluster, storage, dynamic, access, ALTER_CONFIGS, ctx, req,
                           incremental=False)


def incremental_alter_configs(cluster: Cluster, storage: Storage, dynamic: DynamicBrokerConfig,
                              access: Access, ctx: RequestContext, req: Any) -> Any:
    return _alter_response(cluster, storage, dynamic, access, INCREMENTAL_ALTER_CONFIGS, ctx,
                           req, incremental=True)
