"""CreateTopics, DeleteTopics and CreatePartitions: the catalogue's topics, with each
partition's replicas placed on the nodes of the process (``cluster/placement.py``).

Only the catalogue changes here; storage creates and removes logs on its events.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Generator
from typing import Any

import structlog

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import INTERNAL_TOPICS, NO_THROTTLE, ZERO_UUID
from kafkalite.storage.catalog import InvalidTopicName, validate_topic_name
from kafkalite.storage.topic_config import InvalidConfig, validate

from ...auth import CLUSTER_NAME, Access, Operation, ResourceType
from ...cluster import Cluster
from ...config.properties import Config
from ...context import RequestContext
from ...quotas.managers import (
    ControllerMutationQuota,
    MutationQuotaManager,
    ThrottlingQuotaExceeded,
    user_of,
)
from ...topic_store import Storage
from .configs import CONFIG_TYPES, topic_configs

log = structlog.get_logger("kafkalite.topics")

CREATE_TOPICS = ApiKey.CREATE_TOPICS
DELETE_TOPICS = ApiKey.DELETE_TOPICS
CREATE_PARTITIONS = ApiKey.CREATE_PARTITIONS

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    CREATE_TOPICS: (2, 7),
    DELETE_TOPICS: (1, 6),
    CREATE_PARTITIONS: (0, 3),
}

#: The first versions answering THROTTLING_QUOTA_EXCEEDED (KIP-599); older ones are
#: throttled without refusing.
STRICT_MUTATION_SINCE: dict[int, int] = {CREATE_TOPICS: 6, DELETE_TOPICS: 5, CREATE_PARTITIONS: 3}

#: The longest a CreateTopics holds the event loop before letting other work in (group
#: heartbeats above all): a request of thousands of topics is created in slices.
CREATE_SLICE_S = 0.05


def _mutation_quota(mutations: MutationQuotaManager, ctx: RequestContext
                    ) -> ControllerMutationQuota:
    strict = ctx.api_version >= STRICT_MUTATION_SINCE[ctx.header.api_key]
    return mutations.quota_for(user_of(ctx.principal), ctx.client_id, strict, mutations.now())


def _charge(quota: ControllerMutationQuota, partitions: int) -> None:
    """Take ``partitions`` from the controller mutation quota, or refuse the topic."""
    try:
        quota.record(partitions)
    except ThrottlingQuotaExceeded as e:
        raise TopicError(ErrorCode.throttling_quota_exceeded, str(e)) from e

class TopicError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _check_replicas(ids: list[int], nodes: set[int], where: str) -> None:
    if not ids:
        raise TopicError(ErrorCode.invalid_replica_assignment,
                         f"The manual partition assignment of {where} includes an empty "
                         "replica list.")
    if len(set(ids)) != len(ids):
        raise TopicError(ErrorCode.invalid_replica_assignment,
                         f"Duplicate brokers not allowed in replica assignment: "
                         f"{', '.join(map(str, ids))} for {where}.")
    unknown = [b for b in ids if b not in nodes]
    if unknown:
        raise TopicError(ErrorCode.invalid_replica_assignment,
                         f"Replica assignment {ids} of {where} names brokers other than "
                         f"{sorted(nodes)}")


def _partitions_and_rf(nodes: set[int], config: Config, t: Any
                       ) -> tuple[int, int, list[list[int]] | None]:
    """(partitions, replication factor, the requested assignment if any)."""
    assignments = tuple(getattr(t, "assignments", ()) or ())
    n = int(t.num_partitions)
    rf = int(t.replication_factor)
    if assignments:
        if n != -1 or rf != -1:
            raise TopicError(ErrorCode.invalid_request,
                             "Both numPartitions or replicationFactor and replicasAssignments "
                             "were set. Both cannot be used at the same time.")
        indexes = sorted(int(a.partition_index) for a in assignments)
        if indexes != list(range(len(indexes))):
            raise TopicError(ErrorCode.invalid_replica_assignment,
                             "Partitions should be a consecutive 0-based integer sequence")
        chosen: list[list[int]] = [[] for _ in indexes]
        for a in assignments:
            ids = [int(b) for b in a.broker_ids]
            _check_replicas(ids, nodes, f"partition {a.partition_index}")
            chosen[int(a.partition_index)] = ids
        if len({len(c) for c in chosen}) != 1:
            raise TopicError(ErrorCode.invalid_replica_assignment,
                             "All partitions should have the same number of replicas")
        return len(indexes), len(chosen[0]), chosen
    if n == -1:
        n = config.int("num.partitions")
    if n <= 0:
        raise TopicError(ErrorCode.invalid_partitions,
                         "Number of partitions was set to an invalid non-positive value.")
    if rf == -1:
        rf = config.int("default.replication.factor")
    if rf <= 0:
        raise TopicError(ErrorCode.invalid_replication_factor,
                         "Replication factor must be larger than 0, or -1 to use the default "
                         "value.")
    if rf > len(nodes):
        raise TopicError(ErrorCode.invalid_replication_factor,
                         f"Unable to replicate the partition {rf} time(s): The target "
                         f"replication factor of {rf} cannot be reached because only "
                         f"{len(nodes)} broker(s) are registered.")
    return n, rf, None


async def create_topics(cluster: Cluster, storage: Storage, access: Access,
                        mutations: MutationQuotaManager, ctx: RequestContext, req: Any) -> Any:
    return await _sliced(storage, _create_topics(cluster, storage, access, mutations, ctx, req))


async def _sliced(storage: Storage, steps: Generator[None, None, Any]) -> Any:
    """Runs a topic mutation's steps in slices of CREATE_SLICE_S, giving the loop back
    between slices; returns the steps' response."""
    while True:
        # The catalogue is written once a slice, not once a topic, and is saved before the
        # loop is let go: a change another request makes meanwhile is saved by itself
        # before its own answer, not deferred into this request's batch.
        with storage.catalog.batch():
            until = time.monotonic() + CREATE_SLICE_S
            try:
                next(steps)  # at least one step a slice
                while time.monotonic() < until:
                    next(steps)
            except StopIteration as done:
                return done.value
        await asyncio.sleep(0)


def _create_topics(cluster: Cluster, storage: Storage, access: Access,
                   mutations: MutationQuotaManager, ctx: RequestContext, req: Any
                   ) -> Generator[None, None, Any]:
    """Creates the request's topics one at a time, pausing (a ``yield``) after each;
    returns the response."""
    resp_t = codecs.codec(CREATE_TOPICS, ctx.api_version).response_type
    result_t = nested(resp_t, "CreatableTopicResult")
    v5 = ctx.api_version >= 5
    cfg_t = nested(resp_t, "CreatableTopicConfigs") if v5 else None
    dupes = {n for n, c in Counter(t.name for t in req.topics).items() if c > 1}
    # Kafka allows creation by CREATE on the cluster or, failing that, on the topic.
    cluster_create = access.permits(ctx, Operation.CREATE, ResourceType.CLUSTER,
                                    CLUSTER_NAME)
    results = []
    quota = _mutation_quota(mutations, ctx)
    for t in req.topics:
        name = t.name
        try:
            # Duplicates first, then authorization, as Kafka.
            if name in dupes:
                raise TopicError(ErrorCode.invalid_request,
                                 f"Create topics request from client `{ctx.client_id}` "
                                 f"contains multiple entries for the following topics: "
                                 f"{name}")
            if not cluster_create and not access.permits(ctx, Operation.CREATE,
                                                         ResourceType.TOPIC, name):
                raise TopicError(ErrorCode.topic_authorization_failed,
                                 "Authorization failed.")
            try:
                validate_topic_name(name)
            except InvalidTopicName as e:
                raise TopicError(ErrorCode.invalid_topic_exception, str(e)) from e
            if name in storage.catalog:
                raise TopicError(ErrorCode.topic_already_exists,
                                 f"Topic '{name}' already exists.")
            clash = storage.name_collision(name)
            if clash is not None:
                # '.' and '_' map to the same metric names, so Kafka refuses the pair.
                raise TopicError(ErrorCode.invalid_topic_exception,
                                 f"Topic '{name}' collides with existing topic: {clash}")
            nodes = {m.node_id for m in cluster.members()}
            n, rf, chosen = _partitions_and_rf(nodes, storage.config, t)
            placer = storage.catalog.placer
            if placer is None:
                chosen = None  # one node holds every partition
            elif chosen is None:
                chosen = placer(name, 0, n, rf)
            configs: dict[str, str] = {}
            for c in t.configs:
                try:
                    validate(c.name, c.value)
                except InvalidConfig as e:
                    raise TopicError(ErrorCode.invalid_config, str(e)) from e
                if c.value is not None:
                    configs[c.name] = c.value
            _charge(quota, n)
            # Kafka's controller draws the topic id before it validates, so a
            # validate-only answer carries one too (never used).
            topic_id = uuid.uuid4()
            if not req.validate_only:
                # Answered once committed: the logs follow in the background.
                info = storage.commit_topic(
                    name, n, configs, internal=name in INTERNAL_TOPICS, replicas=chosen)
                topic_id = info.topic_id
            entries: tuple[Any, ...] | None = None
            # v5+ return the topic's configs only to a principal that may describe them
            # (Kafka's ReplicationControlManager), else TOPIC_AUTHORIZATION_FAILED in
            # topic_config_error_code and no partition count.
            describable = cfg_t is None or access.permits(
                ctx, Operation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name)
            if cfg_t is not None and describable:
                entries = tuple(
                    build(cfg_t, name=r.name,
                          value=None if r.definition.sensitive else r.value,
                          read_only=False, config_source=r.source,
                          is_sensitive=r.definition.sensitive,
                          config_type=CONFIG_TYPES.get(r.definition.type, 0))
                    for r in topic_configs(storage.topic_configs, configs)
                )
            results.append(build(
                result_t, name=name, topic_id=topic_id, error_code=NO_ERROR,
                error_message=None, num_partitions=n if describable else -1,
                replication_factor=rf if describable else -1, configs=entries or (),
                topic_config_error_code=NO_ERROR if describable
                else ErrorCode.topic_authorization_failed,
            ))
        except TopicError as e:
            results.append(build(
                result_t, name=name, topic_id=ZERO_UUID, error_code=e.code,
                error_message=e.message, num_partitions=-1, replication_factor=-1,
                configs=(),
            ))
        yield
    ctx.throttle_ms = quota.throttle_time(mutations.now())
    return build(resp_t, throttle_time=NO_THROTTLE, topics=tuple(results))


def _check_delete(storage: Storage, access: Access, quota: ControllerMutationQuota,
                  ctx: RequestContext, name: str | None, tid: uuid.UUID | None
                  ) -> tuple[str | None, uuid.UUID, ErrorCode, str | None]:
    """The topic a DeleteTopics entry names, and whether it may go (NO_ERROR: charged)."""
    if name is not None and tid not in (None, ZERO_UUID):
        return name, tid or ZERO_UUID, ErrorCode.invalid_request, \
            "Topic name and topic id cannot both be specified."
    if name is None:
        info = storage.catalog.by_id(tid) if tid not in (None, ZERO_UUID) else None
        if info is None:
            return None, tid or ZERO_UUID, ErrorCode.unknown_topic_id, \
                "This server does not host this topic ID."
    else:
        # A name is authorized before it is looked up, so a denied principal cannot
        # learn which topics exist (Kafka's ControllerApis.deleteTopics).
        if not access.permits(ctx, Operation.DELETE, ResourceType.TOPIC, name):
            return name, ZERO_UUID, ErrorCode.topic_authorization_failed, \
                "Authorization failed."
        info = storage.catalog.get(name)
        if info is None:
            return name, ZERO_UUID, ErrorCode.unknown_topic_or_partition, \
                "This server does not host this topic-partition."
    if not access.permits(ctx, Operation.DELETE, ResourceType.TOPIC, info.name):
        return info.name, info.topic_id, ErrorCode.topic_authorization_failed, \
            "Authorization failed."
    if info.internal or info.name in INTERNAL_TOPICS:
        return info.name, info.topic_id, ErrorCode.invalid_topic_exception, \
            f"Topic {info.name} is a Kafka internal topic and is not allowed to be deleted."
    if not storage.config.bool("delete.topic.enable"):
        return info.name, info.topic_id, ErrorCode.topic_deletion_disabled, \
            "Topic deletion is disabled."
    try:
        _charge(quota, info.partitions)
    except TopicError as e:
        return info.name, info.topic_id, e.code, e.message
    return info.name, info.topic_id, NO_ERROR, None


async def delete_topics(storage: Storage, access: Access, mutations: MutationQuotaManager,
                        ctx: RequestContext, req: Any) -> Any:
    return await _sliced(storage, _delete_topics(storage, access, mutations, ctx, req))


def _delete_topics(storage: Storage, access: Access, mutations: MutationQuotaManager,
                   ctx: RequestContext, req: Any) -> Generator[None, None, Any]:
    resp_t = codecs.codec(DELETE_TOPICS, ctx.api_version).response_type
    result_t = nested(resp_t, "DeletableTopicResult")
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(name, None) for name in req.topic_names]
    results = []
    quota = _mutation_quota(mutations, ctx)
    for name, tid in wanted:
        rname, rid, err, msg = _check_delete(storage, access, quota, ctx, name, tid)
        if err is NO_ERROR and rname is not None:
            # A step per partition: a topic of thousands of partitions is sliced too.
            yield from storage.delete_topic_steps(rname)
            log.info("topic.deleted", topic=rname, topic_id=str(rid))
        results.append(build(result_t, name=rname, topic_id=rid, error_code=err,
                             error_message=msg))
        yield
    ctx.throttle_ms = quota.throttle_time(mutations.now())
    return build(resp_t, throttle_time=NO_THROTTLE, responses=tuple(results))


async def create_partitions(cluster: Cluster, storage: Storage, access: Access,
                            mutations: MutationQuotaManager, ctx: RequestContext,
                            req: Any) -> Any:
    return await _sliced(storage, _create_partitions(cluster, storage, access, mutations,
                                                     ctx, req))


def _create_partitions(cluster: Cluster, storage: Storage, access: Access,
                       mutations: MutationQuotaManager, ctx: RequestContext, req: Any
                       ) -> Generator[None, None, Any]:
    resp_t = codecs.codec(CREATE_PARTITIONS, ctx.api_version).response_type
    result_t = nested(resp_t, "CreatePartitionsTopicResult")
    dupes = {n for n, c in Counter(t.name for t in req.topics).items() if c > 1}
    results = []
    quota = _mutation_quota(mutations, ctx)
    for t in req.topics:
        err, msg = NO_ERROR, None
        info = storage.catalog.get(t.name)
        count = int(t.count)
        if t.name in dupes:
            err, msg = ErrorCode.invalid_request, "Duplicate topic in request."
        elif not access.permits(ctx, Operation.ALTER, ResourceType.TOPIC, t.name):
            err, msg = ErrorCode.topic_authorization_failed, "Authorization failed."
        elif info is None:
            err, msg = ErrorCode.unknown_topic_or_partition, \
                "This server does not host this topic-partition."
        elif count < info.partitions:
            err, msg = ErrorCode.invalid_partitions, \
                f"The topic {t.name} currently has {info.partitions} partition(s); " \
                f"{count} would not be an increase."
        elif count == info.partitions:
            err, msg = ErrorCode.invalid_partitions, \
                f"Topic already has {info.partitions} partition(s)."
        elif t.assignments is not None and not _valid_new(cluster, info, t, count):
            err, msg = ErrorCode.invalid_replica_assignment, \
                f"Invalid replica assignment for topic {t.name}."
        else:
            try:
                _charge(quota, count - info.partitions)
            except TopicError as e:
                err, msg = e.code, e.message
        if err is NO_ERROR and not req.validate_only:
            assert info is not None
            chosen = None if t.assignments is None else [
                [int(b) for b in a.broker_ids] for a in t.assignments]
            storage.commit_partitions(t.name, count, chosen)
            log.info("topic.partitions_added", topic=t.name, partitions=count)
        results.append(build(result_t, name=t.name, error_code=err, error_message=msg))
        yield
    ctx.throttle_ms = quota.throttle_time(mutations.now())
    return build(resp_t, throttle_time=NO_THROTTLE, results=tuple(results))


def _valid_new(cluster: Cluster, info: Any, t: Any, count: int) -> bool:
    """CreatePartitions' assignments: one per new partition, each on known brokers,
    without duplicates, with the topic's replication factor."""
    nodes = {m.node_id for m in cluster.members()}
    rf = len(info.replicas[0]) if info.replicas else 1
    if len(t.assignments) != count - info.partitions:
        return False
    for a in t.assignments:
        ids = [int(b) for b in a.broker_ids]
        if len(ids) != rf or len(set(ids)) != len(ids) or not set(ids) <= nodes:
            return False
    return True
