"""Share sessions (coordinator/share/sessions.py): Kafka's epoch rules for ShareFetch and
ShareAcknowledge and its errors, the partitions a session remembers, and the cache's
limit (SHARE_SESSION_LIMIT_REACHED once full), on a fake clock."""

from __future__ import annotations

from kafkalite.coordinator.share.sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    ShareSessions,
    next_epoch,
)
from kafkalite.protocol.errors import ErrorCode

E = ErrorCode


def test_epochs_move_on_through_fetch_and_acknowledge() -> None:
    s = ShareSessions()
    opened = s.fetch("g", "m", INITIAL_EPOCH, 0, add=[("t", 0), ("t", 1)])
    assert opened.error == E.none and opened.session is not None
    assert (opened.session.epoch, opened.session.partitions) == (1, {("t", 0), ("t", 1)})
    r = s.fetch("g", "m", 1, 10, add=[("u", 0)], forget=[("t", 1)])
    assert r.error == E.none and r.session is not None
    assert (r.session.epoch, r.session.partitions) == (2, {("t", 0), ("u", 0)})
    assert s.acknowledge("g", "m", 2, 20).error == E.none
    assert s.get("g", "m").epoch == 3  # type: ignore[union-attr]
    # Out of step: refused, nothing changes.
    assert s.fetch("g", "m", 2, 30).error == E.invalid_share_session_epoch
    assert s.acknowledge("g", "m", 5, 30).error == E.invalid_share_session_epoch
    assert s.get("g", "m").epoch == 3  # type: ignore[union-attr]
    # ShareAcknowledge cannot open a session.
    assert s.acknowledge("g", "m", INITIAL_EPOCH, 30).error == E.invalid_share_session_epoch
    # Epoch 0 again replaces the session.
    again = s.fetch("g", "m", INITIAL_EPOCH, 40)
    assert again.session is not None and (again.session.epoch, again.session.partitions) == (
        1, set())


def test_unknown_sessions_and_closing() -> None:
    s = ShareSessions()
    assert s.fetch("g", "m", 1, 0).error == E.share_session_not_found
    assert s.acknowledge("g", "m", 1, 0).error == E.share_session_not_found
    assert s.fetch("g", "m", FINAL_EPOCH, 0).error == E.share_session_not_found
    s.fetch("g", "m", INITIAL_EPOCH, 0)
    # Closing with partitions to fetch is a bad request; opening with acknowledgements too.
    assert s.fetch("g", "m", FINAL_EPOCH, 0, add=[("t", 0)]).error == E.invalid_request
    assert s.fetch("g", "m2", INITIAL_EPOCH, 0,
                   has_acknowledgements=True).error == E.invalid_request
    closed = s.fetch("g", "m", FINAL_EPOCH, 0)
    assert (closed.error, closed.session, s.get("g", "m")) == (E.none, None, None)
    s.fetch("g", "m", INITIAL_EPOCH, 0)
    assert s.acknowledge("g", "m", FINAL_EPOCH, 0).error == E.none
    assert s.get("g", "m") is None
    s.fetch("g", "m", INITIAL_EPOCH, 0)
    s.remove_member("g", "m")
    assert s.fetch("g", "m", 1, 0).error == E.share_session_not_found


def test_a_full_cache_refuses_new_sessions_until_one_ends() -> None:
    s = ShareSessions(max_sessions=2)
    s.fetch("g", "a", INITIAL_EPOCH, 0)
    s.fetch("g", "b", INITIAL_EPOCH, 50)
    assert s.fetch("g", "c", INITIAL_EPOCH, 10**9).error == E.share_session_limit_reached
    # A member reopening its own session does not need room.
    assert s.fetch("g", "b", INITIAL_EPOCH, 102).error == E.none
    s.remove_member("g", "a")
    assert s.fetch("g", "c", INITIAL_EPOCH, 103).error == E.none


def test_next_epoch_wraps() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_a_session_keeps_its_partitions_in_the_order_they_joined() -> None:
    s = ShareSessions()
    opened = s.fetch("g", "m", INITIAL_EPOCH, 0, add=[("t", 2), ("t", 0), ("t", 2)])
    assert opened.session is not None and opened.session.order == [("t", 2), ("t", 0)]
    r = s.fetch("g", "m", 1, 1, add=[("t", 1), ("t", 0)], forget=[("t", 2)])
    assert r.session is not None and r.session.order == [("t", 0), ("t", 1)]
    r = s.fetch("g", "m", 2, 2, add=[("t", 2)])
    assert r.session is not None and r.session.order == [("t", 0), ("t", 1), ("t", 2)]
