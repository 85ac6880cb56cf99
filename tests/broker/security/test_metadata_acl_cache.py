"""Metadata built from kept topic entries still answers each principal with what it may
describe: a listing warmed by one principal leaves out, for another, what that one may
not see, and the authorized operations are the asker's own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kafkalite.broker.cluster import BoundListener
from kafkalite.broker.compose import build_broker
from kafkalite.broker.config.properties import Config
from kafkalite.broker.security.acl import AclBinding, AclPermission, PatternType

from .authz_harness import ALICE, NO_OPS, TOPIC_DENIED, Api, O, T

BOB = "User:bob"


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[Api]:
    config = Config.build(environ={}, overrides={
        "log.dirs": str(tmp_path / "data"),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    })
    broker = build_broker(config)
    broker.cluster.listeners.append(
        BoundListener("PLAINTEXT", "127.0.0.1", 9092, "127.0.0.1", 9092))
    await broker.open()
    for name in ("a", "b", "c"):
        broker.create_topic(name, 2)
    try:
        yield Api(broker)
    finally:
        await broker.stop()


async def listing(a: Api, principal: str, ops: bool = False) -> list[tuple[str, int]]:
    a.peer.principal = principal
    resp = await a.call(3, 12, topics=None, allow_auto_topic_creation=False,
                        include_topic_authorized_operations=ops)
    return sorted((t.name, t.topic_authorized_operations) for t in resp.topics)


async def test_kept_entries_answer_each_principal_with_its_own_view(api: Api) -> None:
    api.store.add([AclBinding(T, "", PatternType.PREFIXED, BOB, "*", O.ALL,
                              AclPermission.ALLOW)])
    api.allow(T, "a", O.DESCRIBE)
    api.allow(T, "b", O.WRITE)  # Write implies Describe
    for _ in range(2):  # the second round is answered from kept entries
        assert await listing(api, BOB) == [("a", NO_OPS), ("b", NO_OPS), ("c", NO_OPS)]
        assert await listing(api, ALICE) == [("a", NO_OPS), ("b", NO_OPS)]
    assert await listing(api, ALICE, ops=True) == [("a", 1 << 8), ("b", 1 << 4 | 1 << 8)]
    bob = await listing(api, BOB, ops=True)
    assert [n for n, _ in bob] == ["a", "b", "c"] and all(o > 1 << 8 for _, o in bob)
    # A topic named by alice but not hers: denied, not described.
    api.peer.principal = ALICE
    resp = await api.call(3, 12, topics=(api.n(3, 12, "MetadataRequestTopic", topic_id=None,
                                               name="c"),),
                          allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)
    assert [(t.name, t.error_code, len(t.partitions)) for t in resp.topics] == [
        ("c", TOPIC_DENIED, 0)]
    # ACLs changing need no forgetting: each answer checks them.
    api.allow(T, "c", O.DESCRIBE)
    assert await listing(api, ALICE) == [("a", NO_OPS), ("b", NO_OPS), ("c", NO_OPS)]
