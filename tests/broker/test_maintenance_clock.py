"""Maintenance runs on the broker's one clock: with a manual clock, advancing it applies
log retention, cleans compacted logs and expires offsets, and nothing happens before."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kafkalite.coordinator.offsets.store import CommitRequest, PartitionCommit
from kafkalite.protocol.records import NewRecord, build_batch, iter_records
from kafkalite.timekeeping.clock import ManualClock

from .harness import Handlers

START = 1_700_000_000_000
HOUR = 3_600_000
CHECK = 60_000


async def test_retention_cleaning_and_offset_expiry_follow_the_manual_clock(
        tmp_path: Path) -> None:
    clock = ManualClock(START)
    h = Handlers(tmp_path, {
        "log.retention.check.interval.ms": str(CHECK),
        "log.cleaner.backoff.ms": str(CHECK),
        "offsets.retention.check.interval.ms": str(CHECK),
        "offsets.retention.minutes": "120",
    }, clock)
    await h.open()
    broker = h.broker
    scheduler = broker.scheduler
    try:
        broker.create_topic("events", 1, {"retention.ms": str(HOUR), "segment.ms": "1000"})
        broker.create_topic("table", 1, {"cleanup.policy": "compact", "segment.bytes": "1024",
                                          "delete.retention.ms": "0"})
        events = broker.logs.get_or_create("events", 0)
        table = broker.logs.get_or_create("table", 0)
        for i in range(3):
            events.append(build_batch([NewRecord(b"k", b"v%d" % i, START)], timestamp=START))
            clock.advance(2000)  # each append after segment.ms rolls a segment
        for i in range(60):  # ten keys, six versions each, over several segments
            table.append(build_batch([NewRecord(b"key-%d" % (i % 10), b"x" * 40, START)],
                                     timestamp=START))
        assert len(table.segments) > 2
        runtime = broker.coordinator
        runtime.ensure_topic()
        req = CommitRequest("simple", topics=[("events", [PartitionCommit(0, 3)])])
        assert runtime.groups.write(lambda c, now: c.commit_offsets(now, req)) == {
            ("events", 0): 0}

        scheduler.advance(CHECK)
        await _cleaner_done(broker)
        # Retention: nothing is an hour old yet. Cleaning: older versions of each key go.
        assert events.log_start_offset == 0
        kept = [r.key for b in table.iter_batches(0) for _h, r in iter_records(b)]
        assert sorted(set(kept)) == sorted(b"key-%d" % k for k in range(10))
        assert len(kept) < 60

        scheduler.advance(HOUR)
        await _cleaner_done(broker)
        assert events.log_start_offset == 3  # every closed segment past retention.ms
        assert broker.groups.core.describe_group("simple").state == "Empty"

        scheduler.advance(HOUR)  # past offsets.retention.minutes since the commit
        assert broker.groups.core.describe_group("simple").state == "Dead"
    finally:
        await h.close()


async def _cleaner_done(broker: object) -> None:
    """The cleaner reads in a worker thread: wait for the pass the clock started."""
    task = broker.log_cleaner._task  # type: ignore[attr-defined]
    if task is not None:
        await asyncio.wait_for(task, 30)


async def test_expired_delegation_tokens_removed_on_the_broker_clock(tmp_path: Path) -> None:
    """``delegation.token.expiry.check.interval.ms`` drops a token once the broker's
    clock passes its expiry timestamp, and not before."""
    clock = ManualClock(START)
    h = Handlers(tmp_path, {"delegation.token.secret.key": "key",
                            "delegation.token.expiry.time.ms": str(HOUR),
                            "delegation.token.expiry.check.interval.ms": str(CHECK)}, clock)
    await h.open()
    broker = h.broker
    try:
        tokens = broker.security.tokens
        assert tokens is not None
        token = tokens.create("User:alice", "User:alice", (), -1)
        assert token.expiry_ms == START + HOUR
        broker.scheduler.advance(HOUR)
        assert tokens.get(token.token_id) is not None
        broker.scheduler.advance(CHECK)
        assert tokens.get(token.token_id) is None
    finally:
        await h.close()
