"""A topic created or extended is answered once the catalogue has it, its logs created
by a background task a slice at a time (``Storage.commit_*``); a topic deleted leaves at
once, its files a partition at a time (``Storage.delete_topic_steps``, what DeleteTopics
runs in slices). A request for a partition not created yet creates it, and a deleted
partition's files are gone before a new log of it opens."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kafkalite.broker import topic_store
from kafkalite.broker.handlers.topics import create_delete
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.records import NewRecord, build_batch

from .harness import Handlers

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
SECOND = timedelta(seconds=1)


def record() -> bytes:
    return build_batch([NewRecord(b"k", b"v", 1_700_000_000_000)])


def open_count(h: Handlers, topic: str) -> int:
    return len(h.broker.storage.logs.partitions(topic))


@pytest.fixture(autouse=True)
def one_log_a_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """No pause between background logs, so that the tests count turns of the loop."""
    monkeypatch.setattr(topic_store, "BACKGROUND_PAUSE_S", 0.0)


async def until_open(h: Handlers, topic: str, count: int, limit: int = 20_000) -> int:
    """Turns of the loop until ``count`` of the topic's logs are open."""
    turns = 0
    while open_count(h, topic) < count and turns < limit:
        await asyncio.sleep(0)
        turns += 1
    return turns


async def test_committed_then_created_and_a_partition_asked_for_first(
        handlers: Handlers, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = handlers.broker.storage
    info = storage.commit_topic("big", 50)
    assert storage.catalog.get("big") is info and info.partitions == 50
    assert open_count(handlers, "big") == 0
    # A request for partition 30 creates it before the background does.
    plog = storage.logs.get("big", 30)
    assert plog is not None and plog.append(record()) == (0, 0)
    for _ in range(10):
        await asyncio.sleep(0)
    assert 1 < open_count(handlers, "big") < 50
    assert await until_open(handlers, "big", 50) > 0
    assert open_count(handlers, "big") == 50
    assert storage.logs.get("big", 30) is plog and plog.log_end_offset == 1
    assert all((storage.logs.data_dir / f"big-{p}").is_dir() for p in range(50))
    # Partitions added the same way, each topic's creation in turn.
    storage.commit_partitions("big", 80)
    storage.commit_topic("next", 5)
    assert open_count(handlers, "big") == 50
    await until_open(handlers, "next", 5)
    assert open_count(handlers, "big") == 80


async def test_logs_created_after_a_config_change_take_it(handlers: Handlers) -> None:
    storage = handlers.broker.storage
    storage.commit_topic("conf", 30)
    for _ in range(10):
        await asyncio.sleep(0)
    assert 0 < open_count(handlers, "conf") < 30
    storage.catalog.set_configs("conf", {"segment.bytes": "1048576"})
    await until_open(handlers, "conf", 30)
    assert {plog.config.segment_bytes for plog in storage.logs.partitions("conf")} == {1048576}


async def test_deleted_in_steps_and_created_again_meanwhile(handlers: Handlers) -> None:
    storage = handlers.broker.storage
    storage.create_topic("d", 20)
    for p in range(20):
        storage.logs.get_or_create("d", p).append(record())
    steps = storage.delete_topic_steps("d")
    next(steps)
    assert storage.catalog.get("d") is None and storage.logs.get("d", 5) is None
    assert (storage.logs.data_dir / "d-5").is_dir()  # not removed yet
    # Created again before the old files are gone: each new log starts empty.
    storage.create_topic("d", 20)
    assert all(storage.logs.get_or_create("d", p).log_end_offset == 0 for p in range(20))
    for _ in steps:
        pass
    # The remaining steps leave the new topic's logs alone.
    assert open_count(handlers, "d") == 20
    assert all((storage.logs.data_dir / f"d-{p}").is_dir() for p in range(20))
    assert all(not plog.closed for plog in storage.logs.partitions("d"))


async def test_deleted_while_still_being_created(handlers: Handlers,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    storage = handlers.broker.storage
    storage.commit_topic("x", 30)
    for _ in range(10):
        await asyncio.sleep(0)
    assert 0 < open_count(handlers, "x") < 30
    for _ in storage.delete_topic_steps("x"):
        pass
    for _ in range(100):
        await asyncio.sleep(0)
    assert open_count(handlers, "x") == 0 and storage.logs.get("x", 25) is None
    assert not list(storage.logs.data_dir.glob("x-*"))


def _topic(name: str, partitions: int) -> Any:
    return build(nested(codecs.codec(CREATE_TOPICS, 7).request_type, "CreatableTopic"),
                 name=name, num_partitions=partitions, replication_factor=-1,
                 assignments=(), configs=())


async def test_one_topic_requests_let_the_loop_go(handlers: Handlers,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """CreateTopics and CreatePartitions of one topic answer before its logs are all
    created, which follow while the loop serves others; DeleteTopics gives the loop back
    between its partitions (a slice of no time: one step each)."""
    monkeypatch.setattr(create_delete, "CREATE_SLICE_S", 0.0)
    stop = asyncio.Event()

    def ok(resp: Any) -> None:
        for r in getattr(resp, "topics", None) or getattr(resp, "results", ()):
            assert r.error_code == 0, r

    ok(await handlers.call(CREATE_TOPICS, 7, topics=(_topic("one", 40),),
                           validate_only=False))
    assert open_count(handlers, "one") < 40
    assert await until_open(handlers, "one", 40) > 5
    add = build(nested(codecs.codec(CREATE_PARTITIONS, 3).request_type,
                       "CreatePartitionsTopic"), name="one", count=80, assignments=None)
    ok(await handlers.call(CREATE_PARTITIONS, 3, topics=(add,), timeout=SECOND,
                           validate_only=False))
    assert open_count(handlers, "one") < 80
    assert await until_open(handlers, "one", 80) > 5
    assert open_count(handlers, "one") == 80

    gone = build(nested(codecs.codec(DELETE_TOPICS, 6).request_type, "DeleteTopicState"),
                 name="one", topic_id=None)
    # The topic's logs leave at once; their files go a step at a time.
    data = handlers.broker.storage.logs.data_dir
    files: list[int] = []

    async def watch_files() -> None:
        while not stop.is_set():
            files.append(len(list(data.glob("one-*"))))
            await asyncio.sleep(0)

    stop.clear()
    watcher = asyncio.create_task(watch_files())
    resp = await handlers.call(DELETE_TOPICS, 6, topics=(gone,), timeout=SECOND)
    stop.set()
    await watcher
    assert resp.responses[0].error_code == 0
    assert len({c for c in files if 0 < c < 80}) > 5
    assert open_count(handlers, "one") == 0 and not list(data.glob("one-*"))


async def test_auto_created_topic_logs_follow_in_the_background(tmp_path: Path) -> None:
    """An auto-created topic of ``num.partitions`` partitions is answered at once (from
    inside a Metadata or Produce answer) the same way, and a stop before its logs are
    all created leaves the rest to the next start."""
    h = Handlers(tmp_path / "data", {"num.partitions": "400"})
    await h.open()
    storage = h.broker.storage
    try:
        info = storage.auto_create("auto")
        assert info.partitions == 400 and open_count(h, "auto") < 400
        assert storage.logs.get("auto", 399) is not None  # asked for first: created now
        turns = 0
        while open_count(h, "auto") < 400 and turns < 5000:
            await asyncio.sleep(0)
            turns += 1
        assert open_count(h, "auto") == 400 and turns > 10
        # Stopped part way through another: the next start has every partition.
        storage.auto_create("cut")
        for _ in range(20):
            await asyncio.sleep(0)
        assert 0 < open_count(h, "cut") < 400
    finally:
        await h.close()
    again = Handlers(tmp_path / "data")
    await again.open()
    try:
        logs = again.broker.storage.logs
        assert all(logs.get("cut", p) is not None for p in range(400))
        assert all((logs.data_dir / f"cut-{p}").is_dir() for p in range(400))
    finally:
        await again.close()
