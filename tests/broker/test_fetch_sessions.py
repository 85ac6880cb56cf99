"""Incremental fetch sessions (KIP-227) through the Fetch handler: a full fetch opens a
session, incremental ones name only what changed and get only what changed, epochs and
ids are checked, forgotten partitions leave, and the cache makes room as Kafka's does."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from kio.schema.fetch.v12 import request as f12
from kio.schema.fetch.v13 import request as f13

from kafkalite.broker.handlers.data.fetch_session import CachedPartition, FetchSessionCache
from kafkalite.protocol.errors import ErrorCode

from .harness import Handlers
from .test_handlers import CREATE_TOPICS, PRODUCE, create_topics, produce

FETCH = 1


def fetch12(session_id: int, epoch: int, parts: dict[int, int] | None = None,
            forgotten: tuple[int, ...] = (), topic: str = "t",
            leader_epoch: int = -1) -> f12.FetchRequest:
    """A Fetch v12 request for ``parts`` (partition -> fetch offset) of ``topic``."""
    return f12.FetchRequest(  # type: ignore[call-arg]
        cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0,  # type: ignore[arg-type]
        max_bytes=1 << 20, isolation_level=0, session_id=session_id, session_epoch=epoch,  # type: ignore[arg-type]
        topics=(f12.FetchTopic(topic=topic, partitions=tuple(  # type: ignore[arg-type]
            f12.FetchPartition(partition=p, current_leader_epoch=leader_epoch, fetch_offset=o,  # type: ignore[arg-type]
                               last_fetched_epoch=-1, log_start_offset=-1,
                               partition_max_bytes=1 << 16)
            for p, o in (parts or {}).items())),) if parts else (),
        forgotten_topics_data=(f12.ForgottenTopic(topic=topic, partitions=forgotten),)  # type: ignore[arg-type]
        if forgotten else (),
        rack_id="")


def shape(resp: Any) -> dict[int, tuple[int, int]]:
    """partition -> (error, bytes of records) over the whole response."""
    return {p.partition_index: (p.error_code, len(p.records or b""))
            for t in resp.responses for p in t.partitions}


async def _setup(h: Handlers, partitions: int = 4) -> None:
    await h.call(CREATE_TOPICS, 7, create_topics("t", partitions=partitions))


async def test_full_then_incremental(handlers: Handlers) -> None:
    await _setup(handlers)
    await handlers.call(PRODUCE, 9, produce("t", 1, b"a"))
    full = await handlers.call(FETCH, 12, fetch12(0, 0, {0: 0, 1: 0, 2: 0, 3: 0}))
    sid = full.session_id
    assert sid != 0 and full.error_code == ErrorCode.none
    assert shape(full) == {0: (0, 0), 1: (0, 69), 2: (0, 0), 3: (0, 0)}

    # Nothing changed: the response carries no partition at all.
    resp = await handlers.call(FETCH, 12, fetch12(sid, 1, {1: 1}))
    assert (resp.session_id, shape(resp)) == (sid, {})
    # New records in partition 3: only it comes back (its offset comes from the session).
    await handlers.call(PRODUCE, 9, produce("t", 3, b"b"))
    resp = await handlers.call(FETCH, 12, fetch12(sid, 2))
    assert shape(resp) == {3: (0, 69)}
    assert resp.responses[0].partitions[0].high_watermark == 1
    # The client moves on past the record: nothing is new again.
    assert shape(await handlers.call(FETCH, 12, fetch12(sid, 3, {3: 1}))) == {}
    # A partition that returns records goes to the end of the session, for fairness.
    await handlers.call(PRODUCE, 9, produce("t", 1, b"c"))
    assert shape(await handlers.call(FETCH, 12, fetch12(sid, 4))) == {1: (0, 69)}
    session = handlers.broker.fetch_sessions.get(sid)
    assert session is not None and session.epoch == 5
    assert [p for (_t, p) in session.partitions] == [0, 2, 3, 1]
    stats = handlers.broker.fetch_sessions.stats
    assert (stats.full, stats.created, stats.incremental) == (1, 1, 4)


async def test_forgotten_partitions_and_closing(handlers: Handlers) -> None:
    await _setup(handlers, 2)
    sid = (await handlers.call(FETCH, 12, fetch12(0, 0, {0: 0, 1: 0}))).session_id
    await handlers.call(FETCH, 12, fetch12(sid, 1, forgotten=(1,)))
    session = handlers.broker.fetch_sessions.get(sid)
    assert session is not None and list(session.partitions) == [("t", 0)]
    await handlers.call(PRODUCE, 9, produce("t", 1, b"x"))
    assert shape(await handlers.call(FETCH, 12, fetch12(sid, 2))) == {}
    # Forgetting the last partition ends the session; epoch -1 closes one explicitly.
    resp = await handlers.call(FETCH, 12, fetch12(sid, 3, forgotten=(0,)))
    assert resp.session_id == 0 and handlers.broker.fetch_sessions.get(sid) is None
    sid = (await handlers.call(FETCH, 12, fetch12(0, 0, {0: 0}))).session_id
    resp = await handlers.call(FETCH, 12, fetch12(sid, -1, {0: 0}))
    assert resp.session_id == 0 and shape(resp) == {0: (0, 0)}
    assert len(handlers.broker.fetch_sessions) == 0


async def test_session_errors(handlers: Handlers) -> None:
    await _setup(handlers, 1)
    resp = await handlers.call(FETCH, 12, fetch12(12345, 1, {0: 0}))
    assert resp.error_code == ErrorCode.fetch_session_id_not_found and shape(resp) == {}
    sid = (await handlers.call(FETCH, 12, fetch12(0, 0, {0: 0}))).session_id
    resp = await handlers.call(FETCH, 12, fetch12(sid, 5))
    assert resp.error_code == ErrorCode.invalid_fetch_session_epoch
    # A v13 request (topic ids) cannot continue a session opened by names.
    topic_id = handlers.broker.topics.get("t").topic_id  # type: ignore[union-attr]
    v13 = f13.FetchRequest(  # type: ignore[call-arg]
        cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0,  # type: ignore[arg-type]
        max_bytes=1 << 20, isolation_level=0, session_id=sid, session_epoch=1,  # type: ignore[arg-type]
        topics=(f13.FetchTopic(topic_id=topic_id, partitions=()),),  # type: ignore[arg-type]
        forgotten_topics_data=(), rack_id="")
    resp = await handlers.call(FETCH, 13, v13)
    assert resp.error_code == ErrorCode.fetch_session_topic_id_error
    # The right epoch still works after the errors.
    assert (await handlers.call(FETCH, 12, fetch12(sid, 1))).error_code == ErrorCode.none


async def test_sessions_keep_the_clients_leader_epoch(handlers: Handlers) -> None:
    await _setup(handlers, 1)
    plog = handlers.broker.logs.get("t", 0)
    assert plog is not None
    ahead = plog.leader_epoch + 1
    full = await handlers.call(FETCH, 12, fetch12(0, 0, {0: 0}, leader_epoch=ahead))
    assert shape(full) == {0: (ErrorCode.unknown_leader_epoch, 0)}
    # Not named again, the partition is read with the epoch the session remembers.
    resp = await handlers.call(FETCH, 12, fetch12(full.session_id, 1))
    assert shape(resp) == {0: (ErrorCode.unknown_leader_epoch, 0)}
    resp = await handlers.call(FETCH, 12, fetch12(full.session_id, 2, {0: 0},
                                                  leader_epoch=plog.leader_epoch))
    assert shape(resp) == {0: (0, 0)}


async def test_topic_id_sessions(handlers: Handlers) -> None:
    await _setup(handlers, 2)
    topic_id = handlers.broker.topics.get("t").topic_id  # type: ignore[union-attr]

    def req(sid: int, epoch: int, parts: dict[int, int]) -> f13.FetchRequest:
        return f13.FetchRequest(  # type: ignore[call-arg]
            cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0,  # type: ignore[arg-type]
            max_bytes=1 << 20, isolation_level=0, session_id=sid, session_epoch=epoch,  # type: ignore[arg-type]
            topics=(f13.FetchTopic(topic_id=topic_id, partitions=tuple(  # type: ignore[arg-type]
                f13.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=o,  # type: ignore[arg-type]
                                   last_fetched_epoch=-1, log_start_offset=-1,
                                   partition_max_bytes=1 << 16)
                for p, o in parts.items())),) if parts else (),
            forgotten_topics_data=(), rack_id="")

    sid = (await handlers.call(FETCH, 13, req(0, 0, {0: 0, 1: 0}))).session_id
    await handlers.call(PRODUCE, 9, produce("t", 0, b"z"))
    resp = await handlers.call(FETCH, 13, req(sid, 1, {}))
    assert [(t.topic_id, [p.partition_index for p in t.partitions]) for t in resp.responses] == [
        (topic_id, [0])]


async def test_no_sessions_with_zero_slots(tmp_path: Path) -> None:
    h = Handlers(tmp_path / "d", {"max.incremental.fetch.session.cache.slots": "0"})
    await h.open()
    try:
        await _setup(h, 1)
        resp = await h.call(FETCH, 12, fetch12(0, 0, {0: 0}))
        assert resp.session_id == 0 and shape(resp) == {0: (0, 0)}
    finally:
        await h.close()


def test_cache_eviction_rules() -> None:
    now = [0]
    cache = FetchSessionCache(2, clock=lambda: now[0])

    def parts(n: int) -> dict[tuple[str | Any, int], CachedPartition]:
        return {("t", i): CachedPartition("t", i, 0, 1) for i in range(n)}

    a = cache.maybe_create(False, False, parts(5))
    b = cache.maybe_create(False, False, parts(3))
    assert a and b
    # Full, every session young: a consumer's new session gets none.
    assert cache.maybe_create(False, False, parts(10)) == 0
    # A follower's (privileged) session takes the smallest consumer session's place.
    c = cache.maybe_create(True, False, parts(1))
    assert c and cache.get(b) is None and cache.get(a) is not None
    # Once old enough, the smaller session yields to a larger newcomer...
    now[0] = 130_000
    cache.touch(cache.get(a), now[0])  # type: ignore[arg-type]
    cache.touch(cache.get(c), now[0])  # type: ignore[arg-type]
    assert cache.maybe_create(False, False, parts(2)) == 0  # ...not to a smaller one
    d = cache.maybe_create(False, False, parts(6))
    assert d and cache.get(a) is None and cache.get(c) is not None
    # A session unused for two minutes is stale and goes first.
    now[0] = 260_001
    cache.touch(cache.get(d), now[0])  # type: ignore[arg-type]
    e = cache.maybe_create(False, False, parts(1))
    assert e and cache.get(c) is None
    assert cache.stats.evicted == 3 and cache.stats.refused == 2
