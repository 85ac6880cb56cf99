"""Broker properties as Kafka defines them: types, synonyms, and which ones may change at
run time (KIP-226 dynamic broker configs) at which level.

The dynamic sets are Kafka's (``DynamicBrokerConfig.AllDynamicConfigs``): the log configs
that stand for topic configs, the log cleaner's, listener security, connection limits,
thread pools and a few more. A property outside them that Kafka (or kafkalite) defines
is read-only; a name neither knows is a custom property, which Kafka accepts dynamically
and keeps (and so does kafkalite).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

from kafkalite.storage.topic_config import (
    BROKER_SYNONYM_GROUPS,
    TOPIC_CONFIGS,
    InvalidConfig,
    check_metadata_version,
    check_value,
)

from .properties import DEFAULTS

#: ``listener.name.<listener>.<property>``.
LISTENER_CONFIG = re.compile(r"^listener\.name\.[^.]*\.(.*)$")

#: SSL stores; dynamically only with a listener prefix (Kafka's DynamicSecurityConfigs).
DYNAMIC_SECURITY: dict[str, str] = {
    "ssl.keystore.type": "STRING", "ssl.keystore.location": "STRING",
    "ssl.keystore.password": "PASSWORD", "ssl.key.password": "PASSWORD",
    "ssl.truststore.type": "STRING", "ssl.truststore.location": "STRING",
    "ssl.truststore.password": "PASSWORD", "ssl.keystore.certificate.chain": "PASSWORD",
    "ssl.keystore.key": "PASSWORD", "ssl.truststore.certificates": "PASSWORD",
}

#: Kafka's DynamicListenerConfig.ReconfigurableConfigs.
DYNAMIC_LISTENER: dict[str, str] = {
    "listeners": "STRING",
    "listener.security.protocol.map": "STRING", "principal.builder.class": "CLASS",
    "ssl.protocol": "STRING", "ssl.provider": "STRING", "ssl.cipher.suites": "LIST",
    "ssl.enabled.protocols": "LIST", **DYNAMIC_SECURITY,
    "ssl.keymanager.algorithm": "STRING", "ssl.trustmanager.algorithm": "STRING",
    "ssl.endpoint.identification.algorithm": "STRING",
    "ssl.secure.random.implementation": "STRING", "ssl.client.auth": "STRING",
    "ssl.engine.factory.class": "CLASS", "sasl.mechanism.inter.broker.protocol": "STRING",
    "sasl.jaas.config": "PASSWORD", "sasl.enabled.mechanisms": "LIST",
    "sasl.kerberos.service.name": "STRING", "sasl.kerberos.kinit.cmd": "STRING",
    "sasl.kerberos.ticket.renew.window.factor": "DOUBLE",
    "sasl.kerberos.ticket.renew.jitter": "DOUBLE",
    "sasl.kerberos.min.time.before.relogin": "LONG",
    "sasl.kerberos.principal.to.local.rules": "LIST",
    "sasl.login.refresh.window.factor": "DOUBLE", "sasl.login.refresh.window.jitter": "DOUBLE",
    "sasl.login.refresh.min.period.seconds": "SHORT",
    "sasl.login.refresh.buffer.seconds": "SHORT",
    "max.connections": "INT", "max.connection.creation.rate": "INT",
    "num.network.threads": "INT",
}

#: Listener configs that may also be set cluster-wide.
CLUSTER_LEVEL_LISTENER = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"})
#: Dynamic configs that exist per broker only (no cluster-wide default).
PER_BROKER = frozenset(DYNAMIC_LISTENER) - CLUSTER_LEVEL_LISTENER

#: The broker properties standing for topic configs (Kafka's
#: DynamicLogConfig.ReconfigurableConfigs): changing one reconfigures every log at once.
DYNAMIC_LOG: dict[str, str] = {
    d.broker_synonym: ("INT" if d.broker_synonym in ("compression.gzip.level",
                                                      "compression.lz4.level",
                                                      "compression.zstd.level") else d.type)
    for d in TOPIC_CONFIGS.values()
    if d.broker_synonym
}

ALL_DYNAMIC: dict[str, str] = {
    **DYNAMIC_LISTENER,
    # LogCleaner.ReconfigurableConfigs
    "log.cleaner.threads": "INT", "log.cleaner.dedupe.buffer.size": "LONG",
    "log.cleaner.io.buffer.load.factor": "DOUBLE", "log.cleaner.io.buffer.size": "INT",
    "log.cleaner.io.max.bytes.per.second": "DOUBLE", "log.cleaner.backoff.ms": "LONG",
    **DYNAMIC_LOG,
    # DynamicThreadPool, metrics reporters, SocketServer, producer state, remote log
    "num.io.threads": "INT", "num.replica.fetchers": "INT",
    "num.recovery.threads.per.data.dir": "INT", "background.threads": "INT",
    "metric.reporters": "LIST",
    "max.connections.per.ip": "INT", "max.connections.per.ip.overrides": "STRING",
    "producer.id.expiration.ms": "INT", "transaction.partition.verification.enable": "BOOLEAN",
    "remote.log.index.file.cache.total.size.bytes": "LONG", "remote.fetch.max.wait.ms": "INT",
    "remote.log.manager.copy.max.bytes.per.second": "LONG",
    "remote.log.manager.fetch.max.bytes.per.second": "LONG",
}

#: Kafka's ConfigDef types of the properties kafkalite knows that are not dynamic.
STATIC_TYPES: dict[str, str] = {
    "node.id": "INT", "broker.id": "INT", "log.dirs": "STRING", "log.dir": "STRING",
    "advertised.listeners": "LIST",
    "socket.request.max.bytes": "INT", "socket.send.buffer.bytes": "INT",
    "socket.receive.buffer.bytes": "INT", "connections.max.idle.ms": "LONG",
    "queued.max.requests": "INT", "max.request.partition.size.limit": "INT",
    "telemetry.max.bytes": "INT",
    "num.partitions": "INT", "default.replication.factor": "INT",
    "auto.create.topics.enable": "BOOLEAN", "delete.topic.enable": "BOOLEAN",
    "auto.leader.rebalance.enable": "BOOLEAN", "log.roll.hours": "INT",
    "log.roll.jitter.hours": "INT", "log.retention.minutes": "INT", "log.retention.hours": "INT",
    "log.retention.check.interval.ms": "LONG", "log.flush.scheduler.interval.ms": "LONG",
    "log.flush.offset.checkpoint.interval.ms": "INT", "log.cleaner.enable": "BOOLEAN",
    "log.message.format.version": "STRING", "max.incremental.fetch.session.cache.slots": "INT",
    "group.min.session.timeout.ms": "INT", "group.max.session.timeout.ms": "INT",
    "group.max.size": "INT", "group.initial.rebalance.delay.ms": "INT",
    "offsets.topic.num.partitions": "INT", "offsets.topic.replication.factor": "SHORT",
    "offsets.topic.segment.bytes": "INT", "offsets.retention.minutes": "INT",
    "offsets.retention.check.interval.ms": "LONG", "offsets.commit.timeout.ms": "INT",
    "offsets.load.buffer.size": "INT", "offset.metadata.max.bytes": "INT",
    "transactional.id.expiration.ms": "INT", "transaction.state.log.num.partitions": "INT",
    "transaction.state.log.replication.factor": "SHORT", "transaction.max.timeout.ms": "INT",
    "transaction.state.log.segment.bytes": "INT",
    "share.coordinator.state.topic.num.partitions": "INT",
    "share.coordinator.state.topic.segment.bytes": "INT",
    "share.coordinator.snapshot.update.records.per.snapshot": "INT",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "INT",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "INT",
    "authorizer.class.name": "STRING", "connections.max.reauth.ms": "LONG",
    "sasl.server.max.receive.size": "INT", "ssl.principal.mapping.rules": "STRING",
    "process.roles": "LIST", "controller.listener.names": "STRING",
    "controller.quorum.voters": "LIST", "controller.quorum.bootstrap.servers": "LIST",
    "inter.broker.listener.name": "STRING", "inter.broker.protocol.version": "STRING",
    "security.inter.broker.protocol": "STRING", "zookeeper.connect": "STRING",
    "request.timeout.ms": "INT", "replica.lag.time.max.ms": "LONG",
    "broker.session.timeout.ms": "INT", "leader.imbalance.check.interval.seconds": "LONG",
    "replica.fetch.max.bytes": "INT", "replica.fetch.wait.max.ms": "INT",
    "fetch.max.bytes": "INT", "broker.rack": "STRING", "replica.selector.class": "CLASS",
    "num.replica.alter.log.dirs.threads": "INT",
    "delegation.token.secret.key": "PASSWORD", "password.encoder.secret": "PASSWORD",
    # Read by the authorizer and kafkalite's own properties: not Kafka's ConfigDef, but known.
    "super.users": "STRING", "allow.everyone.if.no.acl.found": "BOOLEAN",
    "log.durable": "BOOLEAN", "connections.max.partial.request.ms": "INT",
    "connections.max.buffered.response.bytes": "INT", "socket.busy.poll.us": "INT",
    # Kafka's group coordinator settings are INTs.
    **{k: "INT" for k, (_, t) in DEFAULTS.items()
       if k.startswith(("group.consumer.", "group.share.")) and t is int},
}

_PY_TYPES = {int: "LONG", bool: "BOOLEAN", float: "DOUBLE", str: "STRING"}


class DynamicConfigError(ValueError):
    """A dynamic config change Kafka refuses (its ConfigException message)."""


def broker_synonyms(name: str) -> list[str]:
    """Every name that sets the same property, in precedence order (Kafka's
    ``brokerConfigSynonyms(name, matchListenerOverride = true)``)."""
    group = BROKER_SYNONYM_GROUPS.get(name)
    if group:
        return list(group)
    m = LISTENER_CONFIG.match(name)
    if m:
        base = m.group(1)
        # listener.name.<l>.<mechanism>.sasl.jaas.config stands for sasl.jaas.config.
        for mech_prop in ("sasl.jaas.config", "sasl.login.callback.handler.class",
                          "sasl.login.class", "sasl.server.callback.handler.class",
                          "connections.max.reauth.ms"):
            if base.endswith(mech_prop):
                return [name, mech_prop]
        return [name, base]
    return [name]


def _base(name: str) -> str:
    m = LISTENER_CONFIG.match(name)
    return m.group(1) if m else name


@cache
def kafka_types() -> dict[str, str]:
    """Every broker property Kafka defines with its ConfigDef type, as read from the
    pinned Kafka's jars (scripts/kafka-broker-configs.sh): the types of the properties
    kafkalite accepts and keeps without acting on them."""
    raw: dict[str, str] = json.loads(
        Path(__file__).with_name("kafka_broker_configs.json").read_text())
    return raw


def config_type(name: str) -> str | None:
    """Kafka's ConfigDef type of a broker property (of its base name for a listener
    override), or None for a property Kafka does not define."""
    for n in (name, *broker_synonyms(name)[1:]):
        for table in (ALL_DYNAMIC, STATIC_TYPES):
            if n in table:
                return table[n]
        if n in DEFAULTS:
            return _PY_TYPES.get(DEFAULTS[n][1], "STRING")
    for n in (name, *broker_synonyms(name)[1:]):
        if n in kafka_types():
            return kafka_types()[n]
    return None


def is_sensitive(name: str) -> bool:
    """As Kafka: a PASSWORD, or a property of unknown type (to be safe)."""
    typ = config_type(name)
    return typ is None or typ == "PASSWORD"


def is_dynamic(name: str) -> bool:
    return name in ALL_DYNAMIC


def _known(name: str) -> bool:
    return name in DEFAULTS or name in STATIC_TYPES or name in ALL_DYNAMIC


def _scala_set(names: Iterable[str]) -> str:
    return f"Set({', '.join(names)})"


#: Dynamic in Kafka, but kafkalite binds its listeners once (docs/compatibility.md).
NOT_LIVE = ("listeners", "listener.security.protocol.map")


def validate_dynamic(props: Mapping[str, str], per_broker: bool) -> None:
    """Raise ``DynamicConfigError`` for what Kafka's ``DynamicBrokerConfig.validateConfigs``
    refuses: read-only properties, SSL stores without a listener prefix, malformed values,
    and per-broker properties at the cluster-default level."""
    non_dynamic = [k for k in props if _known(k) and not is_dynamic(k)]
    if non_dynamic:
        raise DynamicConfigError(
            f"Cannot update these configs dynamically: {_scala_set(non_dynamic)}")
    fixed = [k for k in props if k in NOT_LIVE]
    if fixed:
        raise DynamicConfigError(
            "kafkalite binds its listeners at start-up; set these in server.properties: "
            f"{_scala_set(fixed)}")
    no_prefix = [k for k in props if k in DYNAMIC_SECURITY]
    if no_prefix:
        raise DynamicConfigError(
            "These security configs can be dynamically updated only per-listener using the "
            f"listener prefix: {_scala_set(no_prefix)}")
    for k, v in props.items():
        base = _base(k)
        typ = ALL_DYNAMIC.get(base)
        if typ is None or typ in ("STRING", "LIST", "PASSWORD", "CLASS"):
            _check_choices(base, v)
            continue
        try:
            check_value(base, v, typ)
        except InvalidConfig as e:
            raise DynamicConfigError(str(e)) from e
    if not per_broker:
        per_broker_only = [k for k in props if k in PER_BROKER or (
            LISTENER_CONFIG.match(k) and _base(k) not in CLUSTER_LEVEL_LISTENER)]
        if per_broker_only:
            raise DynamicConfigError(
                "Cannot update these configs at default cluster level, broker id must be "
                f"specified: {_scala_set(per_broker_only)}")


_TOPIC_BY_BROKER = {d.broker_synonym: d for d in TOPIC_CONFIGS.values() if d.broker_synonym}


def _check_choices(name: str, value: str) -> None:
    d = _TOPIC_BY_BROKER.get(name)
    try:
        if d is not None and d.choices:
            check_value(name, value, d.type, d.choices)
        if name == "log.message.format.version":
            check_metadata_version(name, value)
    except InvalidConfig as e:
        raise DynamicConfigError(str(e)) from e
