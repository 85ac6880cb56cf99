"""Share sessions (KIP-932): Kafka's ``ShareSessionCache`` and the epoch rules of its
``SharePartitionManager``, as a pure object.

A share consumer fetches through a session per (group, member): epoch 0 opens one (a new
one replacing any old), each later ShareFetch or ShareAcknowledge carries the session's
current epoch and moves it on (wrapping to 1 after the largest int32), and epoch -1 closes
it. The answers are Kafka's: SHARE_SESSION_NOT_FOUND for a member without a session,
SHARE_SESSION_LIMIT_REACHED for a new session when the cache is full (sessions leave it
when closed, when their connection closes and when their member expires, as in Kafka
4.2, which evicts nothing else), INVALID_SHARE_SESSION_EPOCH for an
epoch out of step (and for ShareAcknowledge with epoch 0), INVALID_REQUEST for
acknowledgements in a request opening a session or partitions in one closing it. The
session remembers which partitions the member fetches, as a fetch session does.
Time is the caller's: ``now`` is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafkalite.protocol.errors import NO_ERROR, ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

#: A share-partition a session fetches: (topic id as text or name, partition).
Partition = tuple[str, int]


def next_epoch(epoch: int) -> int:
    """Kafka's ``ShareRequestMetadata.nextEpoch``."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_EPOCH else epoch + 1


@dataclass(slots=True)
class ShareSession:
    group: str
    member: str
    epoch: int
    last_used: int
    partitions: set[Partition] = field(default_factory=set)
    #: The partitions in the order they joined the session: a ShareFetch visits them in
    #: this order, rotated by its epoch (Kafka's round-robin PartitionRotateStrategy).
    order: list[Partition] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SessionResult:
    error: ErrorCode
    #: The session the request goes on in (None on error or when it was closed).
    session: ShareSession | None = None


class ShareSessions:
    """The broker's share sessions, at most ``max_sessions`` of them
    (``group.share.max.share.sessions``)."""

    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def get(self, group: str, member: str) -> ShareSession | None:
        return self.sessions.get((group, member))

    def fetch(self, group: str, member: str, epoch: int, now: int,
              add: Iterable[Partition] = (), forget: Iterable[Partition] = (),
              has_acknowledgements: bool = False) -> SessionResult:
        """A ShareFetch's session step: open, continue or close the member's session."""
        key = (group, member)
        added = list(dict.fromkeys(add))
        adding = set(added)
        if epoch == FINAL_EPOCH:
            if adding:
                return SessionResult(ErrorCode.invalid_request)
            if key not in self.sessions:
                return SessionResult(ErrorCode.share_session_not_found)
            del self.sessions[key]
            return SessionResult(NO_ERROR)
        if epoch == INITIAL_EPOCH:
            if has_acknowledgements:
                return SessionResult(ErrorCode.invalid_request)
            self.sessions.pop(key, None)
            if len(self.sessions) >= self.max_sessions:
                return SessionResult(ErrorCode.share_session_limit_reached)
            session = ShareSession(group, member, next_epoch(INITIAL_EPOCH), now, adding,
                                   added)
            self.sessions[key] = session
            return SessionResult(NO_ERROR, session)
        found = self.sessions.get(key)
        if found is None:
            return SessionResult(ErrorCode.share_session_not_found)
        if found.epoch != epoch:
            return SessionResult(ErrorCode.invalid_share_session_epoch)
        gone = set(forget)
        found.order = [tp for tp in found.order if tp not in gone] + [
            tp for tp in added if tp not in found.partitions and tp not in gone]
        found.partitions |= adding
        found.partitions -= gone
        found.last_used = now
        found.epoch = next_epoch(found.epoch)
        return SessionResult(NO_ERROR, found)

    def acknowledge(self, group: str, member: str, epoch: int, now: int) -> SessionResult:
        """A ShareAcknowledge's session step (epoch -1 closes the session)."""
        if epoch == INITIAL_EPOCH:
            return SessionResult(ErrorCode.invalid_share_session_epoch)
        key = (group, member)
        found = self.sessions.get(key)
        if found is None:
            return SessionResult(ErrorCode.share_session_not_found)
        if epoch == FINAL_EPOCH:
            del self.sessions[key]
            return SessionResult(NO_ERROR)
        if found.epoch != epoch:
            return SessionResult(ErrorCode.invalid_share_session_epoch)
        found.last_used = now
        found.epoch = next_epoch(found.epoch)
        return SessionResult(NO_ERROR, found)

    def remove_member(self, group: str, member: str) -> None:
        """The member left its group (or was fenced): its session goes."""
        self.sessions.pop((group, member), None)
