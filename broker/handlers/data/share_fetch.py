"""ShareFetch and ShareAcknowledge v1-v2 (KIP-932): share sessions, acknowledgements and
acquisition through the broker's share-partition manager (``broker/share/manager.py``).

As Kafka's ``KafkaApis`` does it: Read on the group (else GROUP_AUTHORIZATION_FAILED for
the whole request), Read on each topic (else TOPIC_AUTHORIZATION_FAILED for its
partitions). The share session step comes first (its errors answer the whole request);
then a request's acknowledgements are applied, each partition on its own (a bad one gets
INVALID_REQUEST or INVALID_RECORD_STATE as its ``acknowledge_error_code``, the others
carry on); then records are acquired from every partition of the session. A ShareFetch
that acquires fewer than ``min_bytes`` waits, like Fetch, until an append or a release
brings records or ``max_wait_ms`` passes (a socket-side timer, as Fetch's). Epoch -1
closes the session and releases what the member still holds.

With several nodes (``broker/cluster/``) a node serves only the share-partitions it leads:
each other partition, of the request or of the session, answers NOT_LEADER_OR_FOLLOWER
with its current leader and the leaders' endpoints, as Kafka's ``KafkaApis`` fills them
in; nothing is acquired or acknowledged there (``Leadership``, given by the cluster).
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafkalite.coordinator.share.partition import AckBatch, AckType, AcquiredRange
from kafkalite.coordinator.share.sessions import FINAL_EPOCH, ShareSessions
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, millis, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE
from kafkalite.storage.log import PartitionLog

from ...auth import Access, Operation, ResourceType
from ...context import RequestContext
from ...share.manager import SharePartitionManager

SHARE_FETCH = ApiKey.SHARE_FETCH
SHARE_ACKNOWLEDGE = ApiKey.SHARE_ACKNOWLEDGE

#: The versions served: (lowest, highest). v2: record-limit acquisition and RENEW.
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    SHARE_FETCH: (1, 2),
    SHARE_ACKNOWLEDGE: (1, 2),
}

#: ShareFetch v2's share_acquire_mode: 0 batch-optimized, 1 record-limit.
RECORD_LIMIT = 1

_MS = datetime.timedelta(milliseconds=1)

#: A partition of a request or a session: (topic id, partition).
TP = tuple[uuid.UUID, int]


class Leadership(Protocol):
    """Which node leads a partition, for a node of a multi-node process."""

    #: The node whose handlers these are: each node keeps its own share sessions.
    node_id: int

    def elsewhere(self, topic_id: uuid.UUID, partition: int) -> tuple[int, int] | None:
        """(leader, leader epoch) of a partition this node does not lead, else None."""

    def endpoints(self, node_ids: set[int], listener: str
                  ) -> list[tuple[int, str, int, str | None]]:
        """(node id, host, port, rack) of each of ``node_ids`` on ``listener``."""


@dataclass(slots=True)
class PartitionOut:
    error: ErrorCode = NO_ERROR
    ack_error: ErrorCode | None = None
    #: (leader, epoch) of a partition led by another node.
    leader: tuple[int, int] | None = None
    #: (this node, leader epoch) of a partition led here, as ShareFetch answers it.
    here: tuple[int, int] | None = None
    records: list[bytes] = field(default_factory=list)
    ranges: list[AcquiredRange] = field(default_factory=list)


class ShareRequests:
    """What the two handlers share: the manager, the share sessions, authorization."""

    def __init__(self, manager: SharePartitionManager, new_sessions: Callable[[], ShareSessions],
                 access: Access, node_id: int = -1) -> None:
        self.manager = manager
        #: This broker's node id (a node of a multi-node process has its own).
        self.node_id = node_id
        self.new_sessions = new_sessions
        #: The share sessions of each node (one key, None, with one node): a member
        #: fetching from several brokers holds a session on each, as in Kafka, where
        #: every broker keeps its own share session cache.
        self.caches: dict[int | None, ShareSessions] = {}
        self.access = access
        self.now = manager.now
        #: The share sessions each connection opened, by node: a session ends with its
        #: connection, as Kafka's share session cache ends it, and the member's records
        #: on that node are released.
        self.by_connection: dict[int, set[tuple[int | None, str, str]]] = {}
        self.leaderships: dict[int | None, Leadership] = {}

    def sessions(self, leadership: Leadership | None) -> ShareSessions:
        node = None if leadership is None else leadership.node_id
        cache = self.caches.get(node)
        if cache is None:
            cache = self.caches[node] = self.new_sessions()
        return cache

    def opened(self, ctx: RequestContext, group: str, member: str,
               leadership: Leadership | None) -> None:
        node = None if leadership is None else leadership.node_id
        if leadership is not None:
            self.leaderships[node] = leadership
        self.by_connection.setdefault(ctx.connection_id, set()).add((node, group, member))

    def end_member(self, group: str, member: str) -> None:
        """The member left its group (or expired): its share sessions on every node end
        and the records it holds go back."""
        for cache in self.caches.values():
            cache.remove_member(group, member)
        self.manager.release_member(group, member)

    def end_session(self, group: str, member: str, leadership: Leadership | None) -> None:
        """The member's share session on one node ends (closed, or its connection
        closed): the records it holds on the share-partitions that node leads go back."""
        self.sessions(leadership).remove_member(group, member)
        if leadership is None:
            self.manager.release_member(group, member)
        else:
            self.manager.release_member(
                group, member, lambda key: leadership.elsewhere(key[1], key[2]) is None)

    def disconnected(self, connection_id: int) -> None:
        for node, group, member in self.by_connection.pop(connection_id, ()):
            cache = self.caches.get(node)
            if cache is not None and cache.get(group, member) is not None:
                self.end_session(group, member, self.leaderships.get(node))

    def topic_error(self, ctx: RequestContext, topic_id: uuid.UUID | None) -> ErrorCode:
        info = None if topic_id is None else self.manager.storage.catalog.by_id(topic_id)
        if info is None:
            return ErrorCode.unknown_topic_id
        if not self.access.permits(ctx, Operation.READ, ResourceType.TOPIC, info.name):
            return ErrorCode.topic_authorization_failed
        return NO_ERROR

    def group_denied(self, ctx: RequestContext, group: str) -> bool:
        return not self.access.permits(ctx, Operation.READ, ResourceType.GROUP, group)

    def acknowledge(self, ctx: RequestContext, group: str, member: str, topics: Any,
                    out: dict[TP, PartitionOut], leadership: Leadership | None = None,
                    every: bool = True) -> None:
        """Apply each partition's acknowledgement batches; its error in ``out``. Without
        ``every``, a partition with neither acknowledgements nor an error is left out
        (a ShareFetch lists the partitions its fetch read)."""
        version = ctx.api_version
        for t in topics:
            terr = self.topic_error(ctx, t.topic_id)
            for p in t.partitions:
                tp = (t.topic_id, p.partition_index)
                res = out.get(tp) or PartitionOut()
                if terr is not NO_ERROR:
                    res.error = terr
                    out[tp] = res
                    continue
                if not_led(res, leadership, tp):
                    out[tp] = res
                    continue
                if every:
                    out[tp] = res
                if not p.acknowledgement_batches:
                    continue
                out[tp] = res
                batches = [AckBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
                           for b in p.acknowledgement_batches]
                if version < 2 and any(AckType.RENEW in b.types for b in batches):
                    res.ack_error = ErrorCode.invalid_request
                    continue
                res.ack_error = self.manager.acknowledge(
                    (group, tp[0], tp[1]), member, self.now(), batches)

    def name_leaders(self, out: dict[TP, PartitionOut], leadership: Leadership | None
                     ) -> None:
        """As Kafka, each partition of an answer led here names this node and its
        leader epoch."""
        node = self.node_id if leadership is None else leadership.node_id
        for (tid, p), r in out.items():
            plog = self.manager.plog(tid, p)
            if r.leader is None and plog is not None:
                r.here = (node, plog.leader_epoch)

    def lock_timeout(self, group: str) -> datetime.timedelta:
        return self.manager.group_configs.share_partition_config(group).lock_duration_ms * _MS


def not_led(res: PartitionOut, leadership: Leadership | None, tp: TP) -> bool:
    """Whether ``tp`` is led by another node; if so ``res`` says so."""
    where = None if leadership is None else leadership.elsewhere(*tp)
    if where is None:
        return False
    res.error, res.leader = ErrorCode.not_leader_or_follower, where
    return True


def _leader(resp_t: type[Any], r: PartitionOut | None = None) -> Any:
    leader, epoch = (-1, -1)
    if r is not None:
        leader, epoch = r.leader or r.here or (-1, -1)
    return nested(resp_t, "LeaderIdAndEpoch")(leader_id=leader, leader_epoch=epoch)


def _endpoints(resp_t: type[Any], out: dict[TP, PartitionOut],
               leadership: Leadership | None, listener: str) -> tuple[Any, ...]:
    leaders = {r.leader[0] for r in out.values() if r.leader is not None and r.leader[0] >= 0}
    if leadership is None or not leaders:
        return ()
    endpoint_t = nested(resp_t, "NodeEndpoint")
    return tuple(endpoint_t(node_id=n, host=h, port=port, rack=rack)
                 for n, h, port, rack in leadership.endpoints(leaders, listener))


def _fetch_response(version: int, error: ErrorCode, lock_timeout: datetime.timedelta,
                    out: dict[TP, PartitionOut], message: str | None = None,
                    leadership: Leadership | None = None, listener: str = "") -> Any:
    resp_t = codecs.codec(SHARE_FETCH, version).response_type
    topic_t = nested(resp_t, "ShareFetchableTopicResponse")
    part_t = nested(resp_t, "PartitionData")
    acq_t = nested(resp_t, "AcquiredRecords")
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for (tid, p), r in sorted(out.items(), key=lambda kv: (kv[0][0].bytes, kv[0][1])):
        by_topic.setdefault(tid, []).append(build(
            part_t, partition_index=p, error_code=r.error, error_message=None,
            acknowledge_error_code=(r.ack_error or NO_ERROR).value,
            acknowledge_error_message=None, current_leader=_leader(resp_t, r),
            records=b"".join(r.records),
            acquired_records=tuple(acq_t(first_offset=a.first_offset,
                                         last_offset=a.last_offset,
                                         delivery_count=a.delivery_count)
                                   for a in r.ranges)))
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=error, error_message=message,
                 acquisition_lock_timeout=lock_timeout,
                 responses=tuple(topic_t(topic_id=t, partitions=tuple(ps))
                                 for t, ps in by_topic.items()),
                 node_endpoints=_endpoints(resp_t, out, leadership, listener))


def rotated(partitions: list[TP], epoch: int) -> list[TP]:
    """The session's partitions from index ``epoch % n`` on (Kafka's round-robin
    ``PartitionRotateStrategy``: each ShareFetch of a session starts one partition
    further; epoch 0 keeps the request's order)."""
    if len(partitions) <= 1 or epoch < 1:
        return partitions
    k = epoch % len(partitions)
    return partitions[k:] + partitions[:k]


class ShareFetchWork:
    """One ShareFetch's acquisitions, repeated while it waits for ``min_bytes``.

    As Kafka's ``DelayedShareFetch`` sizes an answer: the partitions are visited in the
    session's order rotated by the epoch; ``MaxBytes`` is shared evenly between them
    (``PartitionMaxBytesStrategy`` UNIFORM), the first partition whose read returns data
    getting at least one whole batch (KIP-74) and the request's bytes never exceeded
    after that; records are acquired partition after partition until ``MaxRecords``
    (whole batches: the last may go past it). A share-partition made by this very
    request becomes ready on its own, as Kafka initializes each asynchronously and
    completes the fetch as soon as what is ready meets ``MinBytes``: once that is met,
    the share-partitions still to be made are made but not read by this request."""

    def __init__(self, shared: ShareRequests, ctx: RequestContext, req: Any, group: str,
                 member: str, partitions: list[TP], out: dict[TP, PartitionOut],
                 leadership: Leadership | None = None, min_bytes: int = 1,
                 full: bool = False) -> None:
        self.shared = shared
        self.group = group
        self.member = member
        self.out = out
        self.partitions = partitions
        self.bytes = 0
        self.min_bytes = min_bytes
        #: A full response (epoch 0) lists every partition read, not only those with
        #: records.
        self.full = full
        self.records_left = req.max_records
        self.max_bytes = req.max_bytes
        self.bytes_left = req.max_bytes
        self.batch_size = getattr(req, "batch_size", 0)
        self.record_limit = getattr(req, "share_acquire_mode", 0) == RECORD_LIMIT
        #: KIP-74: on until a read returns data.
        self.min_one = True
        self.ok: list[TP] = []
        for tp in partitions:
            err = shared.topic_error(ctx, tp[0])
            if err is not NO_ERROR:
                out.setdefault(tp, PartitionOut()).error = err
            elif leadership is None or leadership.elsewhere(*tp) is None:
                self.ok.append(tp)
            else:
                not_led(out.setdefault(tp, PartitionOut()), leadership, tp)

    def run(self) -> None:
        manager = self.shared.manager
        known = manager.partitions
        ready = [tp for tp in self.ok if (self.group, *tp) in known]
        fresh = [tp for tp in self.ok if (self.group, *tp) not in known]
        share = self.max_bytes // max(len(self.ok), 1)
        # Each try reads afresh (Kafka acquires nothing from a try that fell short).
        self.min_one = self.bytes == 0
        for tp in ready:
            self._read(tp, share)
        for i, tp in enumerate(fresh):
            if self.bytes >= self.min_bytes:
                # Made (its state initialized) but not read by this request.
                for rest in fresh[i:]:
                    manager.share_partition((self.group, *rest), self.shared.now())
                break
            self._read(tp, share)

    def _read(self, tp: TP, share: int) -> None:
        tid, p = tp
        if self.full:
            self.out.setdefault(tp, PartitionOut())
        if self.records_left <= 0:
            return
        limit = min(share, self.bytes_left) if not self.min_one else share
        got = self.shared.manager.acquire(
            (self.group, tid, p), self.member, self.shared.now(), self.records_left, limit,
            self.record_limit, self.batch_size, self.min_one)
        if got.read_bytes > 0:
            self.min_one = False
        self.bytes_left = max(0, self.bytes_left - got.read_bytes)
        if got.error is NO_ERROR and not got.ranges:
            return
        res = self.out.setdefault(tp, PartitionOut())
        if got.error is not NO_ERROR:
            res.error = got.error
            return
        res.records.append(got.records)
        res.ranges.extend(got.ranges)
        n = sum(r.last_offset - r.first_offset + 1 for r in got.ranges)
        self.records_left -= n
        self.bytes += len(got.records)

    def logs(self) -> list[PartitionLog]:
        found = (self.shared.manager.plog(tid, p) for tid, p in self.ok)
        return [plog for plog in found if plog is not None]


class DelayedShareFetch:
    """A parked ShareFetch: tries again on an append to its partitions or a release of
    records, answers once it has ``min_bytes`` or its wait is over."""

    def __init__(self, work: ShareFetchWork, min_bytes: int, wait_s: float,
                 respond: Callable[[], Any]) -> None:
        self.loop = asyncio.get_running_loop()
        self.fut: asyncio.Future[Any] = self.loop.create_future()
        self.work = work
        self.min_bytes = min_bytes
        self.respond = respond
        self.scheduled = False
        self.logs = work.logs()
        for plog in self.logs:
            plog.watchers.add(self.on_append)
        work.shared.manager.waiters.add(self.poke)
        self.timer = self.loop.call_later(wait_s, self.finish)
        # Cancelled when its connection closes: let go of the logs and the manager then.
        self.fut.add_done_callback(lambda _fut: self._cleanup())

    def on_append(self, _n: int) -> None:
        self.poke()

    def poke(self) -> None:
        if not self.scheduled and not self.fut.done():
            self.scheduled = True
            self.loop.call_soon(self.again)

    def again(self) -> None:
        self.scheduled = False
        if self.fut.done():
            return
        try:
            self.work.run()
        except Exception as e:
            self._cleanup()
            self.fut.set_exception(e)
            return
        if self.work.bytes >= self.min_bytes:
            self.finish()

    def finish(self) -> None:
        if self.fut.done():
            return
        self._cleanup()
        try:
            self.fut.set_result(self.respond())
        except Exception as e:  # surfaced as UNKNOWN_SERVER_ERROR by KafkaApis
            self.fut.set_exception(e)

    def _cleanup(self) -> None:
        self.timer.cancel()
        for plog in self.logs:
            plog.watchers.discard(self.on_append)
        self.logs = []
        self.work.shared.manager.waiters.discard(self.poke)


def share_fetch(shared: ShareRequests, ctx: RequestContext, req: Any,
                leadership: Leadership | None = None) -> Any:
    version = ctx.api_version
    group, member = req.group_id or "", req.member_id or ""
    lock_timeout = shared.lock_timeout(group) if group else datetime.timedelta(0)
    out: dict[TP, PartitionOut] = {}

    def respond(error: ErrorCode, message: str | None = None) -> Any:
        shared.name_leaders(out, leadership)
        return _fetch_response(version, error, lock_timeout, out, message, leadership,
                               ctx.listener)

    if not group or not member.strip():
        return respond(ErrorCode.invalid_request, "The group id and member id must be set.")
    if shared.group_denied(ctx, group):
        return respond(ErrorCode.group_authorization_failed)
    epoch = req.share_session_epoch
    adding = [(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions]
    forgetting = [(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions]
    has_acks = any(p.acknowledgement_batches for t in req.topics for p in t.partitions)
    step = shared.sessions(leadership).fetch(
        group, member, epoch, shared.now(), add=[(str(t), p) for t, p in adding],
        forget=[(str(t), p) for t, p in forgetting], has_acknowledgements=has_acks)
    if step.error is not NO_ERROR:
        return respond(step.error)
    shared.acknowledge(ctx, group, member, req.topics, out, leadership, every=False)
    if epoch == FINAL_EPOCH or step.session is None:
        shared.end_session(group, member, leadership)
        return respond(NO_ERROR)
    if epoch == 0:
        shared.opened(ctx, group, member, leadership)
    if getattr(req, "is_renew_ack", False):
        # A renewal of locks only (v2): nothing is acquired.
        return respond(NO_ERROR)
    if req.max_bytes <= 0 or req.max_records <= 0 or not step.session.order:
        # Kafka's SharePartitionManager answers such a fetch at once, reading nothing.
        return respond(NO_ERROR)
    session_tps = rotated([(uuid.UUID(t), p) for t, p in step.session.order], epoch)
    wait_ms = millis(req.max_wait, 0)
    # As Kafka: MinBytes is at most MaxBytes, and 0 counts as 1 (a fetch that acquired
    # nothing waits).
    min_bytes = max(min(req.min_bytes, req.max_bytes), 1)
    work = ShareFetchWork(shared, ctx, req, group, member, session_tps, out, leadership,
                          min_bytes, full=epoch == 0)
    work.run()
    if work.bytes >= min_bytes or wait_ms <= 0 or not work.ok:
        return respond(NO_ERROR)
    parked = DelayedShareFetch(work, min_bytes, wait_ms / 1000, lambda: respond(NO_ERROR))
    return parked.fut


def share_acknowledge(shared: ShareRequests, ctx: RequestContext, req: Any,
                      leadership: Leadership | None = None) -> Any:
    version = ctx.api_version
    resp_t = codecs.codec(SHARE_ACKNOWLEDGE, version).response_type
    topic_t = nested(resp_t, "ShareAcknowledgeTopicResponse")
    part_t = nested(resp_t, "PartitionData")
    group, member = req.group_id or "", req.member_id or ""
    lock_timeout = shared.lock_timeout(group) if group else datetime.timedelta(0)
    out: dict[TP, PartitionOut] = {}

    def respond(error: ErrorCode, message: str | None = None) -> Any:
        shared.name_leaders(out, leadership)
        by_topic: dict[uuid.UUID, list[Any]] = {}
        for (tid, p), r in sorted(out.items(), key=lambda kv: (kv[0][0].bytes, kv[0][1])):
            err = r.error if r.error is not NO_ERROR else (r.ack_error or NO_ERROR)
            by_topic.setdefault(tid, []).append(build(
                part_t, partition_index=p, error_code=err, error_message=None,
                current_leader=_leader(resp_t, r)))
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=error,
                     error_message=message, acquisition_lock_timeout=lock_timeout,
                     responses=tuple(topic_t(topic_id=t, partitions=tuple(ps))
                                     for t, ps in by_topic.items()),
                     node_endpoints=_endpoints(resp_t, out, leadership, ctx.listener))

    if not group or not member.strip():
        return respond(ErrorCode.invalid_request, "The group id and member id must be set.")
    if shared.group_denied(ctx, group):
        return respond(ErrorCode.group_authorization_failed)
    epoch = req.share_session_epoch
    step = shared.sessions(leadership).acknowledge(group, member, epoch, shared.now())
    if step.error is not NO_ERROR:
        return respond(step.error)
    shared.acknowledge(ctx, group, member, req.topics, out, leadership)
    if epoch == FINAL_EPOCH:
        shared.end_session(group, member, leadership)
    return respond(NO_ERROR)
