"""What a node of a multi-node process answers for what it does not lead: requests for a
partition led elsewhere get NOT_LEADER_OR_FOLLOWER, and group and transaction requests
for a key whose state partition is led elsewhere get NOT_COORDINATOR, as Kafka's brokers
answer them. Each guarded handler runs only when every partition (or key) of the request
is this node's; otherwise the whole request is answered with the error, shaped after the
request (``protocol.error_responses``), and nothing is written. Clients send each
partition to its leader and each key to its coordinator, so a request that mixes leaders
comes only from metadata older than the placement, and the client retries it.

Fetch is answered per partition too once the node may read any partition of it: a
consumer's fetch (v11+) may read what this node follows (KIP-392), so one request names
partitions led here, partitions followed here and, from a client whose metadata is
stale, others (``follower_fetch.FetchReplicas``). A fetch this node can read nothing of
is refused whole, as the other partition-addressed requests are.

ShareFetch and ShareAcknowledge are answered per partition instead, as Kafka's are: the
handler is given the node's ``ShareLeadership`` and answers NOT_LEADER_OR_FOLLOWER, with
the current leader, for each share-partition led elsewhere (``handlers/data/share_fetch``).

Only a process with more than one node wraps its handlers: one node leads everything.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.error_responses import shaped_error_response
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.names import ZERO_UUID, CoordinatorType
from kafkalite.storage.catalog import TopicCatalog

from ..apis import Route
from ..context import RequestContext
from ..handlers.data import fetch, leader_epochs, list_offsets, produce, share_fetch
from ..handlers.data.fetch_session import replica_id
from ..handlers.groups import (
    consumer_groups,
    group_admin,
    groups,
    offsets,
    share_groups,
    share_offsets,
    streams_groups,
)
from ..handlers.transactions import producer_ids, transactions, txn_offsets
from .follower_fetch import FetchReplicas
from .identity import Cluster

GROUP, TRANSACTION = CoordinatorType.GROUP, CoordinatorType.TRANSACTION

Partitions = Callable[[Any, TopicCatalog], Iterator[tuple[str, int]]]
Keys = Callable[[Any], list[str]]


def _topic_name(t: Any, catalog: TopicCatalog) -> str:
    name = getattr(t, "name", None) or getattr(t, "topic", None)
    if name:
        return str(name)
    tid = getattr(t, "topic_id", None)
    info = catalog.by_id(tid) if tid not in (None, ZERO_UUID) else None
    # An unknown id: the handler answers UNKNOWN_TOPIC_ID.
    return info.name if info is not None else ""


def _walk(topics: str, parts: str, index: str) -> Partitions:
    def walk(req: Any, catalog: TopicCatalog) -> Iterator[tuple[str, int]]:
        for t in getattr(req, topics, None) or ():
            name = _topic_name(t, catalog)
            for p in getattr(t, parts):
                yield name, int(getattr(p, index))
    return walk


#: Where each partition-addressed API keeps its topics and partitions.
PARTITIONED: dict[int, Partitions] = {
    produce.PRODUCE: _walk("topic_data", "partition_data", "index"),
    fetch.FETCH: _walk("topics", "partitions", "partition"),
    list_offsets.LIST_OFFSETS: _walk("topics", "partitions", "partition_index"),
    list_offsets.DELETE_RECORDS: _walk("topics", "partitions", "partition_index"),
    leader_epochs.OFFSET_FOR_LEADER_EPOCH: _walk("topics", "partitions", "partition"),
}


def _one(field: str) -> Keys:
    def keys(req: Any) -> list[str]:
        v = getattr(req, field, None)
        return [v] if v else []
    return keys


def _many(field: str) -> Keys:
    def keys(req: Any) -> list[str]:
        return [k for k in getattr(req, field, None) or () if k]
    return keys


def _offset_fetch_groups(req: Any) -> list[str]:
    many = getattr(req, "groups", None)
    if many:
        return [g.group_id for g in many]
    return _one("group_id")(req)


def _txn_ids(req: Any) -> list[str]:
    many = getattr(req, "transactions", None)
    if many:
        return [t.transactional_id for t in many]
    return _one("transactional_id")(req)


#: Group- and transaction-addressed APIs: the coordinator type and the request's keys.
COORDINATED: dict[int, tuple[int, Keys]] = {
    groups.JOIN_GROUP: (GROUP, _one("group_id")),
    groups.SYNC_GROUP: (GROUP, _one("group_id")),
    groups.HEARTBEAT: (GROUP, _one("group_id")),
    groups.LEAVE_GROUP: (GROUP, _one("group_id")),
    consumer_groups.CONSUMER_GROUP_HEARTBEAT: (GROUP, _one("group_id")),
    consumer_groups.CONSUMER_GROUP_DESCRIBE: (GROUP, _many("group_ids")),
    offsets.OFFSET_COMMIT: (GROUP, _one("group_id")),
    offsets.OFFSET_FETCH: (GROUP, _offset_fetch_groups),
    offsets.OFFSET_DELETE: (GROUP, _one("group_id")),
    group_admin.DESCRIBE_GROUPS: (GROUP, _many("groups")),
    group_admin.DELETE_GROUPS: (GROUP, _many("groups_names")),
    # Share groups live in the group coordinator too (FindCoordinator key type group).
    share_groups.SHARE_GROUP_HEARTBEAT: (GROUP, _one("group_id")),
    share_groups.SHARE_GROUP_DESCRIBE: (GROUP, _many("group_ids")),
    share_offsets.DESCRIBE_SHARE_GROUP_OFFSETS: (GROUP, _offset_fetch_groups),
    share_offsets.ALTER_SHARE_GROUP_OFFSETS: (GROUP, _one("group_id")),
    share_offsets.DELETE_SHARE_GROUP_OFFSETS: (GROUP, _one("group_id")),
    streams_groups.STREAMS_GROUP_HEARTBEAT: (GROUP, _one("group_id")),
    streams_groups.STREAMS_GROUP_DESCRIBE: (GROUP, _many("group_ids")),
    txn_offsets.TXN_OFFSET_COMMIT: (GROUP, _one("group_id")),
    transactions.ADD_PARTITIONS_TO_TXN: (TRANSACTION, _txn_ids),
    transactions.ADD_OFFSETS_TO_TXN: (TRANSACTION, _one("transactional_id")),
    transactions.END_TXN: (TRANSACTION, _one("transactional_id")),
    transactions.DESCRIBE_TRANSACTIONS: (TRANSACTION, _many("transactional_ids")),
    # InitProducerId with a transactional id; without one any node answers.
    producer_ids.INIT_PRODUCER_ID: (TRANSACTION, _one("transactional_id")),
}

Handler = Callable[[RequestContext, Any], Any]


def _refuse(api_key: int, ctx: RequestContext, req: Any, error: ErrorCode) -> Any:
    return shaped_error_response(codecs.codec(api_key, ctx.api_version).response_type, req, error)


def guard_partitions(cluster: Cluster, catalog: TopicCatalog, api_key: int,
                     handler: Handler, walk: Partitions,
                     epoch: Callable[[str, int], int]) -> Handler:
    me = cluster.node_id

    def guarded(ctx: RequestContext, req: Any) -> Any:
        for name, p in walk(req, catalog):
            if name and catalog.get(name) is not None and cluster.leader(name, p) != me:
                resp = _refuse(api_key, ctx, req, ErrorCode.not_leader_or_follower)
                if api_key in (produce.PRODUCE, fetch.FETCH):
                    resp = with_current_leaders(resp, req, cluster, catalog, epoch,
                                                ctx.listener)
                return resp
        return handler(ctx, req)
    return guarded


def guard_fetch(cluster: Cluster, catalog: TopicCatalog, handler: Handler,
                epoch: Callable[[str, int], int], replicas: FetchReplicas) -> Handler:
    """Fetch on a node of several: refused whole (with the current leaders) when the
    node may read none of its partitions, else served per partition by ``replicas``."""
    walk = PARTITIONED[fetch.FETCH]
    # The fetch handler takes the node's replicas as a keyword.
    serve: Callable[..., Any] = handler

    def guarded(ctx: RequestContext, req: Any) -> Any:
        consumer = ctx.api_version >= 11 and replica_id(req) < 0
        named = False
        for name, p in walk(req, catalog):
            if name and catalog.get(name) is not None:
                named = True
                if replicas.hosts(name, p, consumer):
                    return serve(ctx, req, replicas=replicas)
        if not named:
            # Unknown topics, or an incremental fetch naming nothing new.
            return serve(ctx, req, replicas=replicas)
        resp = _refuse(fetch.FETCH, ctx, req, ErrorCode.not_leader_or_follower)
        return with_current_leaders(resp, req, cluster, catalog, epoch, ctx.listener)
    return guarded


def with_current_leaders(resp: Any, req: Any, cluster: Cluster, catalog: TopicCatalog,
                         epoch: Callable[[str, int], int], listener: str) -> Any:
    """KIP-951: where the version has them (Produce v10+, Fetch v12+; the endpoints from
    Fetch v16+), each partition's current leader and epoch, and the leaders' endpoints,
    so a client can go straight to the leader. ``resp`` mirrors ``req``'s topics in order;
    a topic named by id gets its id back."""
    leaders: set[int] = set()
    topics = []
    asked = getattr(req, "topic_data", None) or getattr(req, "topics", None) or ()
    for t, r in zip(resp.responses, asked, strict=False):
        name = _topic_name(r, catalog)
        tid = getattr(r, "topic_id", None)
        if tid is not None and hasattr(t, "topic_id") and t.topic_id is None:
            t = replace(t, topic_id=tid)
        field = "partition_responses" if hasattr(t, "partition_responses") else "partitions"
        parts = []
        for p in getattr(t, field):
            current = getattr(p, "current_leader", None)
            index = int(getattr(p, "index", getattr(p, "partition_index", -1)))
            if current is not None and name and catalog.get(name) is not None:
                leader = cluster.leader(name, index)
                leaders.add(leader)
                p = replace(p, current_leader=replace(current, leader_id=leader,
                                                      leader_epoch=epoch(name, index)))
            parts.append(p)
        topics.append(replace(t, **{field: tuple(parts)}))
    resp = replace(resp, responses=tuple(topics))
    if hasattr(resp, "node_endpoints") and leaders:
        endpoint_t = nested(type(resp), "NodeEndpoint")
        endpoints = []
        for node_id in sorted(leaders):
            member = cluster.member(node_id)
            if member is not None and member.listeners:
                b = member.endpoint(listener)
                endpoints.append(build(endpoint_t, node_id=node_id, host=b.advertised_host,
                                       port=b.advertised_port, rack=member.rack))
        resp = replace(resp, node_endpoints=tuple(endpoints))
    return resp


def guard_coordinator(cluster: Cluster, api_key: int, handler: Handler, key_type: int,
                      keys: Keys) -> Handler:
    me = cluster.node_id

    def guarded(ctx: RequestContext, req: Any) -> Any:
        for key in keys(req):
            if cluster.coordinator(key_type, key) != me:
                return _refuse(api_key, ctx, req, ErrorCode.not_coordinator)
        return handler(ctx, req)
    return guarded


def guard_list_groups(cluster: Cluster, handler: Handler) -> Handler:
    """ListGroups: each node lists the groups it coordinates (the admin client asks every
    node and joins the lists)."""
    me = cluster.node_id

    def listed(ctx: RequestContext, req: Any) -> Any:
        resp = handler(ctx, req)
        return replace(resp, groups=tuple(
            g for g in resp.groups if cluster.coordinator(GROUP, g.group_id) == me))
    return listed


class ShareLeadership:
    """``share_fetch.Leadership`` for one node of ``cluster``."""

    def __init__(self, cluster: Cluster, catalog: TopicCatalog,
                 epoch: Callable[[str, int], int]) -> None:
        self.cluster = cluster
        self.catalog = catalog
        self.epoch = epoch
        self.node_id = cluster.node_id

    def elsewhere(self, topic_id: uuid.UUID, partition: int) -> tuple[int, int] | None:
        info = self.catalog.by_id(topic_id)
        if info is None or not 0 <= partition < info.partitions:
            return None
        leader = self.cluster.leader(info.name, partition)
        if leader == self.cluster.node_id:
            return None
        return leader, self.epoch(info.name, partition)

    def endpoints(self, node_ids: set[int], listener: str
                  ) -> list[tuple[int, str, int, str | None]]:
        out = []
        for node_id in sorted(node_ids):
            member = self.cluster.member(node_id)
            if member is not None and member.listeners:
                b = member.endpoint(listener)
                out.append((node_id, b.advertised_host, b.advertised_port, member.rack))
        return out


SHARE_PARTITIONED = (share_fetch.SHARE_FETCH, share_fetch.SHARE_ACKNOWLEDGE)


def guarded_routes(cluster: Cluster, catalog: TopicCatalog, routes: list[Route],
                   epoch: Callable[[str, int], int],
                   fetch_replicas: FetchReplicas | None = None) -> list[Route]:
    """``routes`` with the handlers that depend on leadership wrapped for ``cluster``'s node
    (``epoch``: a partition's leader epoch, for KIP-951's current leader;
    ``fetch_replicas``: where the node's fetches read, KIP-392)."""
    out = []
    for r in routes:
        handler = r.handler
        if r.api_key == fetch.FETCH and fetch_replicas is not None:
            handler = guard_fetch(cluster, catalog, handler, epoch, fetch_replicas)
        elif r.api_key in PARTITIONED:
            handler = guard_partitions(cluster, catalog, r.api_key, handler,
                                       PARTITIONED[r.api_key], epoch)
        elif r.api_key in COORDINATED:
            key_type, keys = COORDINATED[r.api_key]
            handler = guard_coordinator(cluster, r.api_key, handler, key_type, keys)
        elif r.api_key == group_admin.LIST_GROUPS:
            handler = guard_list_groups(cluster, handler)
        elif r.api_key in SHARE_PARTITIONED:
            # The share handlers take the node's leadership as a keyword.
            share_handler: Callable[..., Any] = handler
            handler = partial(share_handler, leadership=ShareLeadership(cluster, catalog, epoch))
        out.append(replace(r, handler=handler))
    return out
