"""Metadata answers built from each topic's kept encoded entry: byte for byte what kio
encodes at every version, and never stale: a topic created, deleted, re-partitioned,
re-created or re-configured, or a log leading in a new epoch, is in the next answer."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

import pytest

from kafkalite.broker.context import RequestContext
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.headers import RequestHeader

from .harness import Handlers

METADATA, CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, ALTER_CONFIGS = 3, 19, 20, 37, 44


def n(api: int, version: int, entity: str, **fields: Any) -> Any:
    return build(nested(codecs.codec(api, version).request_type, entity), **fields)


def raw_metadata(h: Handlers, version: int, topics: Any = None) -> bytes:
    """The handler's encoded answer (what goes on the wire after the header)."""
    reg = h.broker.apis.registration(METADATA)
    assert reg is not None
    fields: dict[str, Any] = {"topics": () if version == 0 and topics is None else topics}
    for f in dataclasses.fields(codecs.codec(METADATA, version).request_type):
        if f.name.startswith("include_"):
            fields[f.name] = False
    req = h.request(METADATA, version, **fields)
    ctx = RequestContext(RequestHeader(METADATA, version, 1, "t", 0), "User:ANONYMOUS",
                         "127.0.0.1", 50000, "PLAINTEXT", 1)
    out = reg.handler(ctx, req)
    assert isinstance(out, bytes)
    return out


async def listing(h: Handlers, version: int = 12) -> dict[str, tuple[Any, ...]]:
    """name -> (topic id, partition count, leader epochs) of a Metadata for every topic."""
    resp = await h.call(METADATA, version, topics=None, allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False)
    return {t.name: (t.topic_id, len(t.partitions), [p.leader_epoch for p in t.partitions])
            for t in resp.topics}


async def create(h: Handlers, name: str, partitions: int) -> None:
    resp = await h.call(CREATE_TOPICS, 7, topics=(n(
        CREATE_TOPICS, 7, "CreatableTopic", name=name, num_partitions=partitions,
        replication_factor=-1, assignments=(), configs=()),), validate_only=False)
    assert resp.topics[0].error_code == 0


@pytest.mark.parametrize("version", range(14))
async def test_answer_is_what_kio_encodes_at_every_version(handlers: Handlers,
                                                           version: int) -> None:
    await create(handlers, "a", 3)
    await create(handlers, "b", 1)
    c = codecs.codec(METADATA, version)
    for _ in range(2):  # built, then from the kept entries
        body = raw_metadata(handlers, version)
        decoded = codecs.decode_response(METADATA, version, body, 0)
        assert sorted(t.name for t in decoded.topics) == ["a", "b"]
        assert sum(len(t.partitions) for t in decoded.topics) == 4
        assert c.encode_response(decoded) == body
    if version >= 1:  # one topic by name, and one that cannot exist
        names = (n(METADATA, version, "MetadataRequestTopic", name="b", topic_id=None),
                 n(METADATA, version, "MetadataRequestTopic", name="z z", topic_id=None))
        body = raw_metadata(handlers, version, names)
        decoded = codecs.decode_response(METADATA, version, body, 0)
        assert [(t.name, t.error_code) for t in decoded.topics] == [
            ("b", 0), ("z z", ErrorCode.invalid_topic_exception)]
        assert c.encode_response(decoded) == body


async def test_every_change_is_in_the_next_answer(handlers: Handlers) -> None:
    h = handlers
    await create(h, "a", 2)
    before = await listing(h)
    assert before["a"][1:] == (2, [0, 0])
    await create(h, "b", 1)
    assert set(await listing(h)) == {"a", "b"}

    resp = await h.call(CREATE_PARTITIONS, 3, topics=(n(
        CREATE_PARTITIONS, 3, "CreatePartitionsTopic", name="a", count=5, assignments=None),),
        timeout=10_000, validate_only=False)
    assert resp.results[0].error_code == 0
    assert (await listing(h))["a"][1] == 5

    resp = await h.call(ALTER_CONFIGS, 1, resources=(n(
        ALTER_CONFIGS, 1, "AlterConfigsResource", resource_type=2, resource_name="a",
        configs=(n(ALTER_CONFIGS, 1, "AlterableConfig", name="retention.ms",
                   config_operation=0, value="1000"),)),), validate_only=False)
    assert resp.responses[0].error_code == 0
    assert h.broker.storage.catalog.get("a").configs == {"retention.ms": "1000"}  # type: ignore[union-attr]
    assert (await listing(h))["a"][1] == 5

    resp = await h.call(DELETE_TOPICS, 6, topics=(n(
        DELETE_TOPICS, 6, "DeleteTopicState", name="a", topic_id=uuid.UUID(int=0)),),
        timeout=10_000)
    assert resp.responses[0].error_code == 0
    assert set(await listing(h)) == {"b"}
    named = await h.call(METADATA, 12, topics=(n(
        METADATA, 12, "MetadataRequestTopic", name="a", topic_id=None),),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    assert named.topics[0].error_code == ErrorCode.unknown_topic_or_partition

    # Re-created under the same name: a new id and the new partition count.
    await create(h, "a", 1)
    after = await listing(h)
    assert after["a"][1] == 1 and after["a"][0] != before["a"][0]

    # A log leading in a new epoch.
    plog = h.broker.storage.logs.get("b", 0)
    assert plog is not None
    plog.become_leader(4)
    assert (await listing(h))["b"][2] == [4]


async def test_topic_id_and_authorized_operations_variants(handlers: Handlers) -> None:
    h = handlers
    await create(h, "a", 2)
    await listing(h)  # entries kept
    tid = h.broker.storage.catalog.get("a").topic_id  # type: ignore[union-attr]
    resp = await h.call(METADATA, 12, topics=(
        n(METADATA, 12, "MetadataRequestTopic", name=None, topic_id=tid),
        n(METADATA, 12, "MetadataRequestTopic", name=None, topic_id=uuid.uuid4())),
        allow_auto_topic_creation=False, include_topic_authorized_operations=True)
    (a,) = [t for t in resp.topics if t.error_code == 0]
    (unknown,) = [t for t in resp.topics if t.error_code != 0]
    assert (a.name, a.topic_id, a.error_code, len(a.partitions)) == ("a", tid, 0, 2)
    assert a.topic_authorized_operations not in (0, -2147483648)  # every operation allowed
    assert unknown.error_code == ErrorCode.unknown_topic_id
    # Without operations asked for, the kept entry says they were left out.
    resp = await h.call(METADATA, 12, topics=None, allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False)
    assert resp.topics[0].topic_authorized_operations == -2147483648


async def test_logs_opened_after_a_restart_keep_the_announced_epoch(tmp_path: Any) -> None:
    first = Handlers(tmp_path / "data")
    await first.open()
    await create(first, "a", 3)
    await first.close()
    second = Handlers(tmp_path / "data")
    await second.open()
    try:
        logs = second.broker.storage.logs
        assert logs.unopened == 3
        announced = await listing(second)
        assert announced["a"][2] == [1, 1, 1]  # the epoch after the one before the restart
        forgotten: list[str] = []  # what the log manager tells the kept entries to forget
        logs.epoch_set.append(forgotten.append)
        plog = logs.get("a", 1)  # opened by use
        assert plog is not None and plog.leader_epoch == 1
        logs.open_some(10)  # the background pass's step
        assert logs.unopened == 0
        assert forgotten == []  # opened in the announced epoch: the kept entry stands
        assert await listing(second) == announced
        plog.become_leader(2)  # a new epoch is a change clients must see
        assert forgotten == ["a"] and (await listing(second))["a"][2] == [1, 2, 1]
    finally:
        await second.close()


async def test_describe_topic_partitions_from_kept_entries(handlers: Handlers) -> None:
    h = handlers
    await create(h, "a", 3)
    await create(h, "b", 2)
    reg = h.broker.apis.registration(75)
    assert reg is not None
    ctx = RequestContext(RequestHeader(75, 0, 1, "t", 0), "User:ANONYMOUS", "127.0.0.1",
                         50000, "PLAINTEXT", 1)

    def pages(limit: int) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        cursor = None
        for _ in range(20):
            req = h.request(75, 0, topics=(), response_partition_limit=limit, cursor=cursor)
            body = reg.handler(ctx, req)
            decoded = codecs.decode_response(75, 0, body, 0)
            assert codecs.codec(75, 0).encode_response(decoded) == body
            out += [(t.name, p.partition_index) for t in decoded.topics for p in t.partitions]
            if decoded.next_cursor is None:
                return out
            cursor = n(75, 0, "Cursor", topic_name=decoded.next_cursor.topic_name,
                       partition_index=decoded.next_cursor.partition_index)
        raise AssertionError("no last page")

    whole = [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1)]
    for limit in (100, 100, 2, 1):  # whole topics (built, then kept), then split ones
        assert pages(limit) == whole
    resp = await h.call(CREATE_PARTITIONS, 3, topics=(n(
        CREATE_PARTITIONS, 3, "CreatePartitionsTopic", name="b", count=3, assignments=None),),
        timeout=10_000, validate_only=False)
    assert resp.results[0].error_code == 0
    assert pages(100) == [*whole, ("b", 2)]
    h.broker.storage.catalog.delete("a")
    assert pages(100) == [("b", 0), ("b", 1), ("b", 2)]


async def test_background_pass_opens_every_log_after_a_restart(tmp_path: Any) -> None:
    first = Handlers(tmp_path / "data")
    await first.open()
    await create(first, "a", 4)
    await create(first, "b", 3)
    await first.close()
    second = Handlers(tmp_path / "data")
    await second.open()
    try:
        logs = second.broker.storage.logs
        assert logs.unopened == 7
        for _ in range(300):  # it starts a second after start-up; bounded at 30 s
            if not logs.unopened:
                break
            await asyncio.sleep(0.1)
        assert logs.unopened == 0 and len(logs.logs) == 7
        assert {(lg.topic, lg.leader_epoch) for lg in logs} == {("a", 1), ("b", 1)}
    finally:
        await second.close()


@pytest.mark.parametrize("version", range(14))
def test_direct_topic_entry_is_what_kio_writes(version: int) -> None:
    """The entry written field by field equals kio's, with several replicas, offline ones,
    a partition without a leader, an internal topic and authorized operations."""
    from kafkalite.broker.metadata_cache import EncodedTopics, encode_topic_entry

    resp_t = codecs.codec(METADATA, version).response_type
    part_t = nested(resp_t, "MetadataResponsePartition")
    topic_t = nested(resp_t, "MetadataResponseTopic")
    parts = [(0, 0, 1, 7, (1, 2, 3), (1, 2), (3,)),
             (int(ErrorCode.leader_not_available), 1, -1, 0, (2,), (), (2,)),
             (0, 2, 2, 300, (2, 1), (2, 1), ())]
    for name, internal, ops in (("topic-é", False, 0x5F8), ("__consumer_offsets", True, -2**31)):
        tid = uuid.uuid4()
        expected = EncodedTopics().encode(build(
            topic_t, error_code=ErrorCode(0), name=name, topic_id=tid, is_internal=internal,
            partitions=tuple(build(part_t, error_code=ErrorCode(e), partition_index=i, leader_id=ld,
                                   leader_epoch=ep, replica_nodes=r, isr_nodes=isr,
                                   offline_replicas=off)
                             for e, i, ld, ep, r, isr, off in parts),
            topic_authorized_operations=ops))
        assert encode_topic_entry(version, name, tid, internal, parts, ops) == expected
