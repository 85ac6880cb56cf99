"""FindCoordinator with key type share (2): ``group:topic id:partition`` keys, answered by
this broker at v6, INVALID_REQUEST for a malformed key or an older version, and
ClusterAction on the cluster required as Kafka's KafkaApis does."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kafkalite.broker.security.acl import (
    AclBinding,
    AclOperation,
    AclPermission,
    AclResourceType,
    PatternType,
)
from kafkalite.protocol.errors import ErrorCode as E
from kafkalite.protocol.names import SHARE_STATE_TOPIC

from .harness import Handlers

FIND = 10


def share_key(group: str = "g", partition: int = 0) -> str:
    tid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    return f"{group}:{tid}:{partition}"


async def test_share_keys_are_answered_by_this_broker_at_v6(handlers: Handlers) -> None:
    good, bad = share_key(), "g:not-a-topic-id:0"
    resp = await handlers.call(FIND, 6, key_type=2, coordinator_keys=(good, bad, "g:x"))
    got = {c.key: (c.error_code, c.node_id) for c in resp.coordinators}
    assert got == {good: (E.none, 1), bad: (E.invalid_request, -1),
                   "g:x": (E.invalid_request, -1)}
    assert handlers.broker.storage.catalog.get(SHARE_STATE_TOPIC) is not None
    resp = await handlers.call(FIND, 5, key_type=2, coordinator_keys=(good,))
    assert [c.error_code for c in resp.coordinators] == [E.invalid_request]


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[Handlers]:
    h = Handlers(tmp_path / "data", {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    await h.open()
    yield h
    await h.close()


async def test_share_keys_need_cluster_action(secured: Handlers) -> None:
    key = share_key()
    resp = await secured.call(FIND, 6, key_type=2, coordinator_keys=(key,))
    assert [c.error_code for c in resp.coordinators] == [E.cluster_authorization_failed]
    acls = secured.broker.acls
    assert acls is not None
    acls.add([AclBinding(AclResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL,
                         "User:ANONYMOUS", "*", AclOperation.CLUSTER_ACTION,
                         AclPermission.ALLOW)])
    resp = await secured.call(FIND, 6, key_type=2, coordinator_keys=(key,))
    assert [c.error_code for c in resp.coordinators] == [E.none]
