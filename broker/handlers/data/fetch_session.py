"""Incremental fetch sessions (KIP-227), as Kafka's ``FetchSession.scala``.

A consumer's first full Fetch (session id 0, epoch 0) creates a session that remembers
the partitions it reads, their fetch offsets and what the last response said of each
(high watermark, log start offset). Later requests name the session and its next epoch
and carry only the partitions whose fetch offset or limit changed, plus the ones to
forget; the response carries only the partitions with records, a changed high watermark
or log start offset, or an error. A consumer of 1,000 partitions then sends and receives
a few bytes per poll instead of 1,000 entries each way.

The cache holds ``max.incremental.fetch.session.cache.slots`` sessions. A full cache
makes room as Kafka's ``tryEvict`` does: a session unused for two minutes goes first,
else the smallest one, if the new one is larger and that one is not young; a follower's
(privileged) session outranks a consumer's. Epoch and id errors answer
INVALID_FETCH_SESSION_EPOCH and FETCH_SESSION_ID_NOT_FOUND, and the client starts over
with a full request.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import structlog

from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.storage.log import PartitionLog

log = structlog.get_logger("kafkalite.fetch")

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
#: Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS: younger sessions are not evicted
#: for a larger one, and older unused ones are stale.
EVICTION_MS = 120_000
_INT_MAX = 2**31 - 1

E_SESSION_NOT_FOUND: int = ErrorCode.fetch_session_id_not_found.value
E_INVALID_EPOCH: int = ErrorCode.invalid_fetch_session_epoch.value
E_SESSION_TOPIC_ID: int = ErrorCode.fetch_session_topic_id_error.value

#: A topic as the request names it: its name (Fetch < v13) or its id (v13+).
TopicKey = str | uuid.UUID
#: A partition a request names: topic, partition, fetch offset, max bytes, leader epoch.
Wanted = tuple[TopicKey, int, int, int, int]


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _INT_MAX else epoch + 1


class CachedPartition:
    """What a session remembers of one partition: the request's offset and limit, and the
    high watermark and log start offset last sent (-1: send it next time)."""

    __slots__ = ("fetch_offset", "high_watermark", "leader_epoch", "log_start", "max_bytes",
                 "partition", "plog", "topic")

    def __init__(self, topic: TopicKey, partition: int, fetch_offset: int, max_bytes: int,
                 plog: PartitionLog | None = None, leader_epoch: int = -1) -> None:
        self.topic = topic
        self.partition = partition
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes
        #: The client's current leader epoch (-1: none), checked on every read (KIP-320).
        self.leader_epoch = leader_epoch
        self.high_watermark = -1
        self.log_start = -1
        self.plog = plog

    def must_respond(self, error: int, high_watermark: int, log_start: int,
                     has_records: bool) -> bool:
        """Whether an incremental response includes the partition; records what it says
        (Kafka's CachedPartition.maybeUpdateResponseData)."""
        changed = has_records or error != NO_ERROR
        if high_watermark != self.high_watermark:
            changed = True
            self.high_watermark = high_watermark
        if log_start != self.log_start:
            changed = True
            self.log_start = log_start
        if error != NO_ERROR:
            # Sent again once the error is gone.
            self.high_watermark = -1
        return changed


@dataclass(eq=False, slots=True)
class FetchSession:
    id: int
    privileged: bool
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    #: In response order; a partition that returned records moves to the end, so every
    #: partition gets its turn under the response size limit.
    partitions: dict[tuple[TopicKey, int], CachedPartition]

    def update(self, wanted: Iterable[Wanted], forgotten: Iterable[tuple[TopicKey, int]]) -> None:
        """Add or update the partitions a request names, drop the forgotten ones."""
        parts = self.partitions
        for topic, partition, offset, max_bytes, epoch in wanted:
            cached = parts.get((topic, partition))
            if cached is None:
                parts[(topic, partition)] = CachedPartition(topic, partition, offset, max_bytes,
                                                            leader_epoch=epoch)
            else:
                cached.fetch_offset, cached.max_bytes = offset, max_bytes
                cached.leader_epoch = epoch
        for key in forgotten:
            parts.pop(key, None)


class SessionStats:
    """What the cache has done, for tests, benchmarks and logs."""

    __slots__ = ("created", "evicted", "full", "incremental", "refused", "sessionless")

    def __init__(self) -> None:
        self.created = 0
        self.evicted = 0
        self.full = 0
        self.incremental = 0
        self.sessionless = 0
        self.refused = 0


class FetchSessionCache:
    def __init__(self, max_entries: int, clock: Callable[[], int] | None = None,
                 eviction_ms: int = EVICTION_MS) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.clock = clock or (lambda: time.monotonic_ns() // 1_000_000)
        self.sessions: dict[int, FetchSession] = {}
        self.stats = SessionStats()

    def __len__(self) -> int:
        return len(self.sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        return self.sessions.pop(session_id, None)

    def touch(self, session: FetchSession, now: int) -> None:
        session.last_used_ms = now

    def maybe_create(self, privileged: bool, uses_topic_ids: bool,
                     partitions: dict[tuple[TopicKey, int], CachedPartition]) -> int:
        """A new session over ``partitions``, or INVALID_SESSION_ID when there is no room."""
        now = self.clock()
        if len(self.sessions) >= self.max_entries and not self._try_evict(
                privileged, len(partitions), now):
            self.stats.refused += 1
            return INVALID_SESSION_ID
        sid = INVALID_SESSION_ID
        while sid == INVALID_SESSION_ID or sid in self.sessions:
            sid = random.randint(1, _INT_MAX)
        self.sessions[sid] = FetchSession(sid, privileged, uses_topic_ids, now, now,
                                          next_epoch(INITIAL_EPOCH), partitions)
        self.stats.created += 1
        log.info("fetch.session_created", session_id=sid, partitions=len(partitions),
                 sessions=len(self.sessions))
        return sid

    def _try_evict(self, privileged: bool, size: int, now: int) -> bool:
        if not self.sessions:
            return False
        oldest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        victim: FetchSession | None = None
        if now - oldest.last_used_ms > self.eviction_ms:
            victim = oldest
        else:
            # Sessions a newcomer may evict: a consumer's only when not young; a follower's
            # session may also take a young consumer's place.
            candidates = [s for s in self.sessions.values()
                          if now - s.creation_ms > self.eviction_ms
                          or (privileged and not s.privileged)]
            if candidates:
                cheapest = min(candidates, key=lambda s: (s.privileged, len(s.partitions), s.id))
                if (privileged, size) > (cheapest.privileged, len(cheapest.partitions)):
                    victim = cheapest
        if victim is None:
            return False
        del self.sessions[victim.id]
        self.stats.evicted += 1
        log.info("fetch.session_evicted", session_id=victim.id,
                 partitions=len(victim.partitions))
        return True


# --- contexts: what one Fetch request does with the cache --------------------------------


@dataclass(slots=True)
class SessionError:
    """The request's session cannot serve it: answered with ``error`` and no partitions."""

    error: int
    session_id: int = INVALID_SESSION_ID


@dataclass(slots=True)
class Sessionless:
    """A full fetch that keeps no session (Fetch < v7, epoch -1, or a closed session)."""


@dataclass(slots=True)
class FullFetch:
    """A full fetch that opens a session with the partitions it reads."""

    cache: FetchSessionCache
    privileged: bool
    uses_topic_ids: bool
    #: The request's current leader epochs, kept in the session (Fetch v9+).
    leader_epochs: dict[tuple[TopicKey, int], int]


@dataclass(slots=True)
class IncrementalFetch:
    """A fetch within ``session``; the session epoch was advanced to ``expected_epoch``."""

    cache: FetchSessionCache
    session: FetchSession
    expected_epoch: int


FetchContext = SessionError | Sessionless | FullFetch | IncrementalFetch


def _wanted(req: Any, by_id: bool) -> list[Wanted]:
    out = []
    for t in req.topics:
        key: TopicKey = t.topic_id if by_id else t.topic
        for p in t.partitions:
            out.append((key, p.partition, p.fetch_offset, p.partition_max_bytes,
                        getattr(p, "current_leader_epoch", -1)))
    return out


def _forgotten(req: Any, by_id: bool) -> list[tuple[TopicKey, int]]:
    out: list[tuple[TopicKey, int]] = []
    for t in getattr(req, "forgotten_topics_data", None) or ():
        key: TopicKey = t.topic_id if by_id else t.topic
        out.extend((key, p) for p in t.partitions)
    return out


def replica_id(req: Any) -> int:
    state = getattr(req, "replica_state", None)
    rid = state.replica_id if state is not None else getattr(req, "replica_id", -1)
    return int(rid)


def new_context(cache: FetchSessionCache, version: int, req: Any) -> FetchContext:
    """Kafka's FetchManager.newContext."""
    if version < 7:
        cache.stats.sessionless += 1
        return Sessionless()
    sid, epoch = int(req.session_id), int(req.session_epoch)
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if sid != INVALID_SESSION_ID and cache.remove(sid) is not None:
            log.debug("fetch.session_closed", session_id=sid)
        if epoch == FINAL_EPOCH or cache.max_entries <= 0:
            cache.stats.sessionless += 1
            return Sessionless()
        cache.stats.full += 1
        epochs = {(w[0], w[1]): w[4] for w in _wanted(req, version >= 13) if w[4] >= 0}
        return FullFetch(cache, replica_id(req) >= 0, version >= 13, epochs)
    session = cache.get(sid)
    if session is None:
        return SessionError(E_SESSION_NOT_FOUND)
    if session.epoch != epoch:
        return SessionError(E_INVALID_EPOCH)
    if session.uses_topic_ids != (version >= 13):
        return SessionError(E_SESSION_TOPIC_ID)
    by_id = version >= 13
    session.update(_wanted(req, by_id), _forgotten(req, by_id))
    if not session.partitions:
        cache.remove(session.id)
        cache.stats.sessionless += 1
        return Sessionless()
    cache.touch(session, cache.clock())
    session.epoch = next_epoch(session.epoch)
    cache.stats.incremental += 1
    return IncrementalFetch(cache, session, session.epoch)
