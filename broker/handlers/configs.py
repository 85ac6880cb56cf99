"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs.

Topic configs are applied live through the catalogue (storage listens to its events).
Broker properties are static here: they are described with Kafka's names and sources,
and attempts to change them dynamically are refused as Kafka refuses a property that is
not dynamically updatable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import structlog

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.names import NO_THROTTLE
from kafkalite.storage.topic_config import (
    DEFAULT_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    STATIC_BROKER_CONFIG,
    TOPIC_CONFIGS,
    InvalidConfig,
    ResolvedConfig,
    resolve_all,
    validate,
)

from ..auth import CLUSTER_NAME, Access, Operation, ResourceType
from ..cluster import Cluster
from ..config import DEFAULTS, Config
from ..context import RequestContext
from ..storage import Storage, TopicConfigs

log = structlog.get_logger("kafkalite.configs")

ALTER_CONFIGS = 33
DESCRIBE_CONFIGS = 32
INCREMENTAL_ALTER_CONFIGS = 44
DESCRIBE_CLUSTER = 60

#: Kafka's ConfigResource.Type codes.
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8

#: Kafka's ConfigEntry.ConfigType codes (DescribeConfigs v3+).
CONFIG_TYPES = {
    "BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7,
    "CLASS": 8, "PASSWORD": 9,
}
_PY_TYPES = {int: "LONG", bool: "BOOLEAN", float: "DOUBLE", str: "STRING"}

#: IncrementalAlterConfigs operations.
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3



class ConfigRequestError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def topic_configs(configs: TopicConfigs, overrides: dict[str, str]) -> list[ResolvedConfig]:
    """Every topic config's effective value for a topic with ``overrides``."""
    return list(resolve_all(overrides, configs.broker_value).values())


def _topic_synonyms(configs: TopicConfigs, overrides: dict[str, str], r: ResolvedConfig) -> list[
    tuple[str, str, int]
]:
    """(name, value, source) from most to least specific, as Kafka lists synonyms."""
    out: list[tuple[str, str, int]] = []
    if r.name in overrides:
        out.append((r.name, overrides[r.name], DYNAMIC_TOPIC_CONFIG))
    syn = r.definition.broker_synonym
    if syn:
        v = configs.broker_value(syn)
        if v is not None:
            out.append((syn, v, STATIC_BROKER_CONFIG))
        default = DEFAULTS.get(syn, (r.definition.default, str))[0]
        out.append((syn, default, DEFAULT_CONFIG))
    else:
        out.append((r.name, r.definition.default, DEFAULT_CONFIG))
    return out


def _broker_type(name: str) -> str:
    if name in ("listeners", "advertised.listeners", "log.dirs", "log.cleanup.policy"):
        return "LIST"
    if name == "authorizer.class.name":
        return "STRING"
    typ = DEFAULTS[name][1] if name in DEFAULTS else str
    if typ is int and name in ("node.id", "num.partitions", "message.max.bytes",
                               "socket.request.max.bytes", "min.insync.replicas",
                               "log.segment.bytes", "log.index.interval.bytes",
                               "log.index.size.max.bytes", "group.min.session.timeout.ms",
                               "group.max.session.timeout.ms", "group.max.size",
                               "group.initial.rebalance.delay.ms", "offsets.topic.num.partitions",
                               "offsets.topic.segment.bytes", "offsets.retention.minutes",
                               "offsets.commit.timeout.ms", "offset.metadata.max.bytes",
                               "transactional.id.expiration.ms", "producer.id.expiration.ms"):
        return "INT"
    if name == "offsets.topic.replication.factor" or name == "default.replication.factor":
        return "SHORT" if name.startswith("offsets") else "INT"
    return _PY_TYPES.get(typ, "STRING")


def _is_sensitive(name: str) -> bool:
    return ("password" in name or "secret" in name or name.endswith(".jaas.config")
            or name.endswith("ssl.keystore.key"))


def _describe_topic(
    storage: Storage, resp_t: type[Any], name: str, keys: Iterable[str] | None, synonyms: bool
) -> tuple[Any, ...]:
    info = storage.catalog.get(name)
    if info is None:
        raise ConfigRequestError(ErrorCode.unknown_topic_or_partition,
                                 "The topic does not exist.")
    entry_t = nested(resp_t, "DescribeConfigsResourceResult")
    syn_t = nested(resp_t, "DescribeConfigsSynonym")
    wanted = set(keys) if keys is not None else None
    out = []
    for r in topic_configs(storage.topic_configs, info.configs):
        if wanted is not None and r.name not in wanted:
            continue
        syns = tuple(
            build(syn_t, name=n, value=v, source=s)
            for n, v, s in _topic_synonyms(storage.topic_configs, info.configs, r)
        ) if synonyms else ()
        out.append(build(
            entry_t, name=r.name, value=None if r.definition.sensitive else r.value,
            read_only=False, config_source=r.source, is_default=r.source == DEFAULT_CONFIG,
            is_sensitive=r.definition.sensitive, synonyms=syns,
            config_type=CONFIG_TYPES.get(r.definition.type, 0), documentation=None,
        ))
    return tuple(out)


def _check_broker_name(node_id: int, name: str) -> None:
    if name and name != str(node_id):
        raise ConfigRequestError(
            ErrorCode.invalid_request,
            f"Unexpected broker id, expected {node_id} or empty string, but received "
            f"{name}",
        )


def _describe_broker(
    node_id: int, cfg: Config, resp_t: type[Any], name: str, keys: Iterable[str] | None,
    synonyms: bool,
) -> tuple[Any, ...]:
    _check_broker_name(node_id, name)
    if not name:
        # The cluster-wide dynamic defaults: none are set on this broker.
        return ()
    entry_t = nested(resp_t, "DescribeConfigsResourceResult")
    syn_t = nested(resp_t, "DescribeConfigsSynonym")
    wanted = set(keys) if keys is not None else None
    out = []
    for key, value in sorted(cfg.all_items().items()):
        if wanted is not None and key not in wanted:
            continue
        source = DEFAULT_CONFIG if cfg.is_default(key) else STATIC_BROKER_CONFIG
        sensitive = _is_sensitive(key)
        syns: tuple[Any, ...] = ()
        if synonyms:
            chain = [(key, value, source)]
            if source != DEFAULT_CONFIG and key in DEFAULTS:
                chain.append((key, DEFAULTS[key][0], DEFAULT_CONFIG))
            syns = tuple(build(syn_t, name=n, value=None if sensitive else v, source=s)
                         for n, v, s in chain)
        out.append(build(
            entry_t, name=key, value=None if sensitive else value, read_only=True,
            config_source=source, is_default=source == DEFAULT_CONFIG, is_sensitive=sensitive,
            synonyms=syns, config_type=CONFIG_TYPES[_broker_type(key)], documentation=None,
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


def _broker_alter(node_id: int, name: str, keys: list[str]) -> None:
    _check_broker_name(node_id, name)
    if keys:
        # No broker property is dynamically updatable here, as for Kafka's read-only ones.
        raise ConfigRequestError(
            ErrorCode.invalid_config,
            f"Invalid config value for resource ConfigResource(type=BROKER, name='{name}'): "
            f"Cannot update these configs dynamically: {sorted(keys)}",
        )


def _incremental(current: dict[str, str], configs: Iterable[Any]) -> dict[str, str]:
    new = dict(current)
    seen: set[str] = set()
    for c in configs:
        if c.name in seen:
            raise ConfigRequestError(ErrorCode.invalid_request,
                                     f"Error due to duplicate config keys: {c.name}")
        seen.add(c.name)
        op = int(c.config_operation)
        if op not in (OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT):
            raise ConfigRequestError(ErrorCode.invalid_request,
                                     f"Unknown config operation {op}")
        d = TOPIC_CONFIGS.get(c.name)
        if op == OP_DELETE:
            new.pop(c.name, None)
            continue
        if d is None:
            raise ConfigRequestError(ErrorCode.invalid_config,
                                     f"Unknown topic config name: {c.name}")
        if op == OP_SET:
            if c.value is None:
                raise ConfigRequestError(ErrorCode.invalid_request,
                                         f"Null value not supported for : {c.name}")
            new[c.name] = c.value
            continue
        if d.type != "LIST":
            verb = "append" if op == OP_APPEND else "subtract"
            raise ConfigRequestError(
                ErrorCode.invalid_config,
                f"Config value {verb} is not allowed for config key: {c.name}",
            )
        base = new.get(c.name, d.default)
        items = [s.strip() for s in base.split(",") if s.strip()]
        values = [s.strip() for s in (c.value or "").split(",") if s.strip()]
        if op == OP_APPEND:
            items += [v for v in values if v not in items]
        else:
            items = [i for i in items if i not in values]
        new[c.name] = ",".join(items)
    return new


def _authorize(access: Access, ctx: RequestContext, op: Operation, rtype: int,
               name: str) -> None:
    """Per resource, as Kafka answers: the other resources are still served."""
    if rtype == RESOURCE_TOPIC:
        if not access.permits(ctx, op, ResourceType.TOPIC, name):
            raise ConfigRequestError(ErrorCode.topic_authorization_failed,
                                     "Authorization failed.")
    elif not access.permits(ctx, op, ResourceType.CLUSTER, CLUSTER_NAME):
        raise ConfigRequestError(ErrorCode.cluster_authorization_failed,
                                 "Authorization failed.")


def describe_configs(cluster: Cluster, storage: Storage, access: Access,
                     ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(DESCRIBE_CONFIGS, ctx.api_version).response_type
    result_t = nested(resp_t, "DescribeConfigsResult")
    synonyms = bool(getattr(req, "include_synonyms", False))
    results = []
    for res in req.resources:
        rtype, rname = int(res.resource_type), res.resource_name
        keys = res.configuration_keys
        try:
            _authorize(access, ctx, Operation.DESCRIBE_CONFIGS, rtype, rname)
            if rtype == RESOURCE_TOPIC:
                configs = _describe_topic(storage, resp_t, rname, keys, synonyms)
            elif rtype == RESOURCE_BROKER:
                configs = _describe_broker(cluster.node_id, storage.config, resp_t, rname, keys,
                                       synonyms)
            else:
                raise ConfigRequestError(ErrorCode.invalid_request,
                                         f"Unsupported resource type {rtype}")
            err, msg = ErrorCode.none, None
        except ConfigRequestError as e:
            configs, err, msg = (), e.code, e.message
        results.append(build(result_t, error_code=err, error_message=msg,
                             resource_type=rtype, resource_name=rname, configs=configs))
    return build(resp_t, throttle_time=NO_THROTTLE, results=tuple(results))


def _alter_response(cluster: Cluster, storage: Storage, access: Access, api_key: int,
                    ctx: RequestContext, req: Any, incremental: bool) -> Any:
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
                                         "Error due to duplicate resources")
            _authorize(access, ctx, Operation.ALTER_CONFIGS, rtype, rname)
            if rtype == RESOURCE_TOPIC:
                info = storage.catalog.get(rname)
                if info is None:
                    raise ConfigRequestError(ErrorCode.unknown_topic_or_partition,
                                             "The topic does not exist.")
                if incremental:
                    new = _incremental(info.configs, res.configs)
                else:
                    new = {}
                    for c in res.configs:
                        if c.value is None:
                            raise ConfigRequestError(
                                ErrorCode.invalid_request,
                                f"Null value not supported for : {c.name}")
                        new[c.name] = c.value
                _apply_topic(storage, rname, new, bool(req.validate_only))
            elif rtype == RESOURCE_BROKER:
                _broker_alter(cluster.node_id, rname, [c.name for c in res.configs])
            elif rtype == RESOURCE_BROKER_LOGGER and incremental:
                raise ConfigRequestError(ErrorCode.invalid_request,
                                         "Broker logger levels cannot be altered here")
            else:
                raise ConfigRequestError(ErrorCode.invalid_request,
                                         f"Unsupported resource type {rtype}")
            err, msg = ErrorCode.none, None
        except ConfigRequestError as e:
            err, msg = e.code, e.message
        out.append(build(item_t, error_code=err, error_message=msg,
                         resource_type=rtype, resource_name=rname))
    return build(resp_t, throttle_time=NO_THROTTLE, responses=tuple(out))


def alter_configs(cluster: Cluster, storage: Storage, access: Access, ctx: RequestContext,
                  req: Any) -> Any:
    return _alter_response(cluster, storage, access, ALTER_CONFIGS, ctx, req,
                           incremental=False)


def incremental_alter_configs(cluster: Cluster, storage: Storage, access: Access,
                              ctx: RequestContext, req: Any) -> Any:
    return _alter_response(cluster, storage, access, INCREMENTAL_ALTER_CONFIGS, ctx, req,
                           incremental=True)
