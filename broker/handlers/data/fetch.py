"""Fetch v4 and up: whole batches straight from the segment files, with long polling.

A fetch that finds fewer than ``min_bytes`` parks in the fetch purgatory: it registers a
watcher on each partition it reads, and the append that brings enough bytes (or the
``max_wait_ms`` timer) completes it. There is no polling loop.

With ``isolation_level=1`` (read_committed) a partition's data stops before its last stable
offset and comes with the aborted transactions overlapping it, collected from the
segments' aborted-transaction indexes as Kafka does; every response reports the LSO.

The response is encoded here by hand: its bulk is record bytes that go out as read, and
kio's general writer costs more than the whole read for large responses. Incremental fetch
sessions (KIP-227) live in ``fetch_session.py`` beside this module: a session's request
names only what changed, the plan reads every partition of the session, and the response
leaves out the partitions with nothing new.
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import ZERO_UUID
from kafkalite.protocol.records import LAST_OFFSET_DELTA_POS, LOG_OVERHEAD
from kafkalite.protocol.varint import write_uvarint
from kafkalite.storage.errors import OffsetOutOfRangeError
from kafkalite.storage.log import PartitionLog
from kafkalite.storage.txn_index import AbortedTxn

from ...auth import CLUSTER_NAME, Access, Operation, ResourceType
from ...context import RequestContext
from ...metrics import BrokerMetrics
from ...topic_store import Storage
from .fetch_session import (
    CachedPartition,
    FetchContext,
    FetchSession,
    FetchSessionCache,
    FullFetch,
    IncrementalFetch,
    SessionError,
    new_context,
    replica_id,
)
from .leader_epochs import epoch_error

log = structlog.get_logger("kafkalite.fetch")

FETCH = ApiKey.FETCH

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    FETCH: (4, None),
}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PART_HEAD = struct.Struct(">ihq")  # partition, error, high watermark
_I64 = struct.Struct(">q")
_I64x2 = struct.Struct(">qq")
_BATCH_LEN = struct.Struct(">qi")  # base offset, batch length

E_NONE: int = NO_ERROR.value
E_UNKNOWN_TOPIC: int = ErrorCode.unknown_topic_or_partition.value
E_UNKNOWN_TOPIC_ID: int = ErrorCode.unknown_topic_id.value
E_OUT_OF_RANGE: int = ErrorCode.offset_out_of_range.value
E_INVALID_EPOCH: int = ErrorCode.invalid_fetch_session_epoch.value
E_STORAGE: int = ErrorCode.kafka_storage_error.value
E_TOPIC_AUTHORIZATION: int = ErrorCode.topic_authorization_failed.value
_REFUSED = frozenset({E_UNKNOWN_TOPIC, E_UNKNOWN_TOPIC_ID, E_TOPIC_AUTHORIZATION})


class Replicas(Protocol):
    """Where one node of a multi-node process reads each partition a fetch names
    (``cluster/follower_fetch.py``); a process of one node has none: it leads everything."""

    node_id: int

    def resolve(self, topic: str, partition: int, offset: int, leader_epoch: int,
                consumer: bool, rack: str) -> tuple[PartitionLog | None, int, int]:
        """(log to read or None, error code, preferred read replica or -1) for a fetch at
        ``offset``; ``consumer``: a consumer's fetch carrying client metadata (v11+)."""
        ...


class PartitionResult:
    __slots__ = ("aborted", "error", "high_watermark", "log_start", "lso", "partition",
                 "preferred", "records")

    def __init__(self, partition: int, error: int, hw: int = -1, start: int = -1,
                 records: bytes = b"", lso: int | None = None,
                 aborted: list[AbortedTxn] | None = None, preferred: int = -1) -> None:
        self.partition = partition
        self.error = error
        self.high_watermark = hw
        self.log_start = start
        self.records = records
        self.lso = hw if lso is None else lso
        #: read_committed: the aborted transactions overlapping ``records`` (None: none).
        self.aborted = aborted
        #: KIP-392: the replica the consumer should read from instead (-1: this one).
        self.preferred = preferred


def _next_offset(data: bytes) -> int:
    """One past the last offset of the last batch in ``data`` (whole batches)."""
    pos = 0
    n = len(data)
    last = -1
    while n - pos >= LAST_OFFSET_DELTA_POS + 4:
        base, length = _BATCH_LEN.unpack_from(data, pos)
        last = base + _I32.unpack_from(data, pos + LAST_OFFSET_DELTA_POS)[0]
        pos += length + LOG_OVERHEAD
    return last + 1


def _aborted_list(aborted: list[AbortedTxn], flexible: bool) -> bytes:
    tag = b"\x00" if flexible else b""
    head = write_uvarint(len(aborted) + 1) if flexible else _I32.pack(len(aborted))
    return head + b"".join(_I64x2.pack(t.producer_id, t.first_offset) + tag for t in aborted)


# --- encoding -------------------------------------------------------------------------


def encode_response(
    version: int,
    topics: list[tuple[str | uuid.UUID, list[PartitionResult]]],
    error: int = E_NONE,
    read_committed: bool = False,
    session_id: int = 0,
) -> bytes:
    flexible = version >= 12
    out: list[bytes] = [_I32.pack(0)]  # throttle_time_ms
    if version >= 7:
        out.append(_I16.pack(error) + _I32.pack(session_id))
    out.append(write_uvarint(len(topics) + 1) if flexible else _I32.pack(len(topics)))
    # The aborted list is null under read_uncommitted, and mostly empty under read_committed.
    if read_committed:
        aborted = b"\x01" if flexible else _I32.pack(0)
    else:
        aborted = b"\x00" if flexible else _I32.pack(-1)
    tail_v11 = _I32.pack(-1)  # preferred read replica
    for topic, parts in topics:
        if isinstance(topic, uuid.UUID):
            out.append(topic.bytes)
        else:
            raw = topic.encode()
            out.append(write_uvarint(len(raw) + 1) + raw if flexible
                       else _I16.pack(len(raw)) + raw)
        out.append(write_uvarint(len(parts) + 1) if flexible else _I32.pack(len(parts)))
        for p in parts:
            head = [_PART_HEAD.pack(p.partition, p.error, p.high_watermark),
                    _I64.pack(p.lso)]
            if version >= 5:
                head.append(_I64.pack(p.log_start))
            head.append(aborted if p.aborted is None else _aborted_list(p.aborted, flexible))
            if version >= 11:
                head.append(tail_v11 if p.preferred < 0 else _I32.pack(p.preferred))
            recs = p.records
            if flexible:
                head.append(write_uvarint(len(recs) + 1))
            else:
                head.append(_I32.pack(len(recs)))
            out.append(b"".join(head))
            out.append(recs)
            if flexible:
                out.append(b"\x00")
        if flexible:
            out.append(b"\x00")
    if flexible:
        out.append(b"\x00")
    return b"".join(out)


# --- the fetch itself -----------------------------------------------------------------

#: A requested partition: (partition, fetch offset, partition max bytes).
_Want = tuple[int, int, int]


class FetchPlan:
    """What a request asks for, resolved to logs once; ``read()`` may run again on wake."""

    def __init__(self, storage: Storage, req: Any, version: int,
                 may_read: Callable[[str], bool] | None = None,
                 session: FetchSession | None = None,
                 replicas: Replicas | None = None) -> None:
        self.version = version
        self.max_bytes = req.max_bytes if version >= 3 else 0x7FFFFFFF
        self.read_committed = getattr(req, "isolation_level", 0) == 1
        self.topics: list[tuple[str | uuid.UUID, list[tuple[_Want, PartitionLog | None, int]]]] = []
        #: KIP-392: (topic key, partition) -> the replica to send the consumer to.
        self.preferred: dict[tuple[str | uuid.UUID, int], int] | None = None
        resolve: Resolve | None = None
        if replicas is not None:
            resolve = self._resolver(replicas, req, version)
        if session is not None:
            self.topics = session_entries(storage, session, version, may_read, resolve)
            return
        catalog = storage.catalog
        logs = storage.logs
        for t in req.topics:
            tid = getattr(t, "topic_id", None)
            if version >= 13:
                info = catalog.by_id(tid) if tid is not None else None
                key: str | uuid.UUID = tid if tid is not None else ZERO_UUID
                missing = E_UNKNOWN_TOPIC_ID
                if info is not None and may_read is not None and not may_read(info.name):
                    info, missing = None, E_TOPIC_AUTHORIZATION
            else:
                key = t.topic
                missing = E_UNKNOWN_TOPIC
                if may_read is not None and not may_read(t.topic):
                    info, missing = None, E_TOPIC_AUTHORIZATION
                else:
                    info = catalog.get(t.topic)
            entries: list[tuple[_Want, PartitionLog | None, int]] = []
            if resolve is not None:
                for p in t.partitions:
                    want = (p.partition, p.fetch_offset, p.partition_max_bytes)
                    epoch = p.current_leader_epoch if version >= 9 else -1
                    plog, err = (None, missing) if info is None else resolve(
                        key, info.name, p.partition, p.fetch_offset, epoch)
                    entries.append((want, plog, err))
                self.topics.append((key, entries))
                continue
            for p in t.partitions:
                want = (p.partition, p.fetch_offset, p.partition_max_bytes)
                plog = logs.get(info.name, p.partition) if info is not None else None
                # A known topic without that partition: UNKNOWN_TOPIC_OR_PARTITION, also
                # when it was named by id (Kafka's UNKNOWN_TOPIC_ID is for the topic).
                err = E_NONE if plog is not None else (
                    missing if info is None else E_UNKNOWN_TOPIC)
                if plog is not None and version >= 9:
                    err = epoch_error(plog, p.current_leader_epoch).value
                    if err != E_NONE:
                        plog = None
                entries.append((want, plog, err))
            self.topics.append((key, entries))

    def _resolver(self, replicas: Replicas, req: Any, version: int) -> Resolve:
        # Kafka: a fetch carries client metadata from v11, and followers serve consumers'.
        consumer = version >= 11 and replica_id(req) < 0
        rack = (getattr(req, "rack_id", None) or "") if consumer else ""

        def resolve(key: str | uuid.UUID, topic: str, partition: int, offset: int,
                    epoch: int) -> tuple[PartitionLog | None, int]:
            plog, err, preferred = replicas.resolve(topic, partition, offset, epoch,
                                                    consumer, rack)
            if preferred >= 0:
                if self.preferred is None:
                    self.preferred = {}
                self.preferred[(key, partition)] = preferred
            return plog, err
        return resolve

    def logs(self) -> list[PartitionLog]:
        return [plog for _k, es in self.topics for _w, plog, _e in es if plog is not None]

    def read(self) -> tuple[list[tuple[str | uuid.UUID, list[PartitionResult]]], int, bool]:
        """(topics, bytes read, whether any partition has an error)."""
        remaining = self.max_bytes
        read_committed = self.read_committed
        min_one = True
        total = 0
        errored = False
        preferred = self.preferred
        out: list[tuple[str | uuid.UUID, list[PartitionResult]]] = []
        for key, entries in self.topics:
            parts = []
            for (partition, offset, pmax), plog, err in entries:
                if plog is None or plog.closed:
                    err = err or E_UNKNOWN_TOPIC
                    # As Kafka: a partition refused before any read (unknown, not
                    # authorized) carries an empty aborted list, one whose read failed
                    # a null one.
                    parts.append(PartitionResult(
                        partition, err, aborted=[] if err in _REFUSED else None))
                    errored = True
                    continue
                hw = plog.high_watermark
                lso = plog.last_stable_offset
                start = plog.log_start_offset
                if preferred is not None and (key, partition) in preferred:
                    # As Kafka's leader: the replica to read from, no records, and an
                    # answer at once.
                    parts.append(PartitionResult(partition, E_NONE, hw, start, lso=lso,
                                                 preferred=preferred[(key, partition)]))
                    errored = True
                    continue
                limit = min(pmax, remaining)
                data = b""
                try:
                    if limit > 0 or min_one:
                        # Consumers read below the high watermark (the log end with
                        # one replica).
                        data = plog.read(offset, limit, lso if read_committed else hw)
                        if len(data) > limit and not min_one:
                            data = b""
                except OffsetOutOfRangeError:
                    # Kafka answers a failed read with -1 for the high watermark, last
                    # stable offset and log start offset.
                    parts.append(PartitionResult(partition, E_OUT_OF_RANGE))
                    errored = True
                    continue
                except OSError as e:
                    log.error("fetch.read_failed", topic=plog.topic, partition=partition,
                              error=str(e))
                    parts.append(PartitionResult(partition, E_STORAGE))
                    errored = True
                    continue
                aborted = None
                if data:
                    min_one = False
                    remaining -= len(data)
                    total += len(data)
                    if read_committed and plog.txn.aborted_txns:
                        aborted = plog.aborted_transactions(offset, _next_offset(data))
                parts.append(PartitionResult(partition, E_NONE, hw, start, data, lso, aborted))
            out.append((key, parts))
        return out, total, errored


#: A partition's log and error code on a node of several (``FetchPlan._resolver``).
Resolve = Callable[[str | uuid.UUID, str, int, int, int], tuple[PartitionLog | None, int]]


# --- sessions (KIP-227) -----------------------------------------------------------------


def session_entries(
    storage: Storage, session: FetchSession, version: int,
    may_read: Callable[[str], bool] | None, resolve: Resolve | None = None,
) -> list[tuple[str | uuid.UUID, list[tuple[_Want, PartitionLog | None, int]]]]:
    """Every partition of ``session`` to read, in session order; partitions of one topic
    that follow each other form one topic entry (Kafka groups only neighbours too)."""
    catalog, logs = storage.catalog, storage.logs
    topics: list[tuple[str | uuid.UUID, list[tuple[_Want, PartitionLog | None, int]]]] = []
    resolved: dict[str | uuid.UUID, tuple[str | None, int]] = {}
    last: str | uuid.UUID | None = None
    entries: list[tuple[_Want, PartitionLog | None, int]] = []
    for cp in session.partitions.values():
        key = cp.topic
        found = resolved.get(key)
        if found is None:
            info = catalog.by_id(key) if isinstance(key, uuid.UUID) else catalog.get(key)
            missing = E_UNKNOWN_TOPIC_ID if version >= 13 else E_UNKNOWN_TOPIC
            if info is not None and may_read is not None and not may_read(info.name):
                info, missing = None, E_TOPIC_AUTHORIZATION
            found = resolved[key] = (info.name if info is not None else None, missing)
        name, missing = found
        plog = cp.plog
        if key != last or not entries:
            entries = []
            topics.append((key, entries))
            last = key
        if resolve is not None:
            # Leadership moves under a session: resolved on every read.
            plog, err = (None, missing) if name is None else resolve(
                key, name, cp.partition, cp.fetch_offset, cp.leader_epoch)
            entries.append(((cp.partition, cp.fetch_offset, cp.max_bytes), plog, err))
            continue
        if name is None:
            plog = None
        elif plog is None or plog.closed or plog.topic != name:
            plog = cp.plog = logs.get(name, cp.partition)
        err = E_NONE if plog is not None else (missing if name is None else E_UNKNOWN_TOPIC)
        if plog is not None and version >= 9:
            err = epoch_error(plog, cp.leader_epoch).value
            if err != E_NONE:
                plog = None
        entries.append(((cp.partition, cp.fetch_offset, cp.max_bytes), plog, err))
    return topics


def respond(context: FetchContext, plan: FetchPlan,
            topics: list[tuple[str | uuid.UUID, list[PartitionResult]]]) -> bytes:
    """The response to a fetch read by ``plan``, as its session context shapes it."""
    version, committed = plan.version, plan.read_committed
    if isinstance(context, FullFetch):
        cached: dict[tuple[str | uuid.UUID, int], CachedPartition] = {}
        for (key, entries), (_k, results) in zip(plan.topics, topics, strict=True):
            for ((partition, offset, max_bytes), plog, _err), r in zip(entries, results,
                                                                        strict=True):
                cp = CachedPartition(key, partition, offset, max_bytes, plog,
                                     context.leader_epochs.get((key, partition), -1))
                cp.high_watermark, cp.log_start = r.high_watermark, r.log_start
                cached[(key, partition)] = cp
        sid = context.cache.maybe_create(context.privileged, context.uses_topic_ids, cached)
        return encode_response(version, topics, read_committed=committed, session_id=sid)
    if isinstance(context, IncrementalFetch):
        session = context.session
        if session.epoch != context.expected_epoch:
            # Another request of this session came meanwhile (a retry): as Kafka.
            return encode_response(version, [], E_INVALID_EPOCH, session_id=session.id)
        parts = session.partitions
        out: list[tuple[str | uuid.UUID, list[PartitionResult]]] = []
        moved: list[tuple[str | uuid.UUID, int]] = []
        for key, results in topics:
            kept = []
            for r in results:
                known = parts.get((key, r.partition))
                if known is not None and (known.must_respond(r.error, r.high_watermark,
                                                             r.log_start, bool(r.records))
                                          or r.preferred >= 0):
                    kept.append(r)
                    if r.records:
                        moved.append((key, r.partition))
            if kept:
                if out and out[-1][0] == key:
                    out[-1][1].extend(kept)
                else:
                    out.append((key, kept))
        for k in moved:
            parts[k] = parts.pop(k)
        return encode_response(version, out, read_committed=committed, session_id=session.id)
    return encode_response(version, topics, read_committed=committed)


class DelayedFetch:
    """A parked fetch: completes when appends bring ``min_bytes`` or the timer fires."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, logs: list[PartitionLog], min_bytes: int,
        have: int, wait_s: float, complete: Callable[[], bytes],
    ) -> None:
        self.loop = loop
        self.fut: asyncio.Future[bytes] = loop.create_future()
        self.logs = logs
        self.needed = min_bytes - have
        self.complete = complete
        self.scheduled = False
        for plog in logs:
            plog.watchers.add(self.on_append)
        self.timer = loop.call_later(wait_s, self.fire)
        self.fut.add_done_callback(self._cleanup)

    def on_append(self, n: int) -> None:
        self.needed -= n
        if self.needed <= 0 and not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self.fire)

    def fire(self) -> None:
        if self.fut.done():
            return
        self._cleanup(None)
        try:
            self.fut.set_result(self.complete())
        except Exception as e:  # surfaced as UNKNOWN_SERVER_ERROR by KafkaApis
            self.fut.set_exception(e)

    def _cleanup(self, _fut: object) -> None:
        self.timer.cancel()
        for plog in self.logs:
            plog.watchers.discard(self.on_append)
        self.logs = []


def _count_out(metrics: BrokerMetrics, plan: FetchPlan,
               topics: list[tuple[str | uuid.UUID, list[PartitionResult]]],
               node: int | None) -> None:
    """Record bytes sent per topic (BytesOut), by the logs the plan read them from, and
    per node when the process runs several."""
    for (_key, entries), (_k, parts) in zip(plan.topics, topics, strict=True):
        for (_want, plog, _err), part in zip(entries, parts, strict=True):
            if part.records and plog is not None:
                metrics.fetched(plog.topic, len(part.records))
                if node is not None:
                    metrics.node_fetched(node, plog.topic, len(part.records))


def fetch(storage: Storage, access: Access, sessions: FetchSessionCache,
          metrics: BrokerMetrics, ctx: RequestContext,
          req: Any, replicas: Replicas | None = None) -> Any:
    version = ctx.api_version
    context = new_context(sessions, version, req)
    if isinstance(context, SessionError):
        return encode_response(version, [], context.error, session_id=context.session_id)
    may_read: Callable[[str], bool] | None = None
    if not access.open:
        if replica_id(req) >= 0:
            # A follower's fetch needs ClusterAction on the cluster instead (KafkaApis).
            follower = access.permits(ctx, Operation.CLUSTER_ACTION, ResourceType.CLUSTER,
                                      CLUSTER_NAME)
            may_read = lambda _topic: follower  # noqa: E731
        else:
            may_read = lambda topic: access.permits(  # noqa: E731
                ctx, Operation.READ, ResourceType.TOPIC, topic)
    plan = FetchPlan(storage, req, version, may_read,
                     context.session if isinstance(context, IncrementalFetch) else None,
                     replicas)
    topics, total, errored = plan.read()
    wait_ms = int(req.max_wait.total_seconds() * 1000)
    node = replicas.node_id if replicas is not None else None
    if total >= req.min_bytes or wait_ms <= 0 or errored or not plan.topics:
        if total:
            _count_out(metrics, plan, topics, node)
        return respond(context, plan, topics)

    def complete() -> bytes:
        again, n, _e = plan.read()
        if n:
            _count_out(metrics, plan, again, node)
        return respond(context, plan, again)

    parked = DelayedFetch(asyncio.get_running_loop(), plan.logs(), req.min_bytes, total,
                          wait_ms / 1000, complete)
    return parked.fut

