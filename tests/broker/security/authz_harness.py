"""What every authorization case shares: the broker as dispatch sees it, called as
``User:alice``, her ACLs, and the registry of cases (one per API) that
``test_api_authorization`` runs."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kafkalite.broker.security.acl import (
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermission,
    AclResourceType,
    PatternType,
)
from kafkalite.broker.server import Broker
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.headers import encode_request_header, parse_response_header

ALICE, HOST = "User:alice", "10.0.0.1"
TOPIC_DENIED, GROUP_DENIED, CLUSTER_DENIED, TXN_DENIED = 29, 30, 31, 53
NO_OPS = -2147483648
SECOND = datetime.timedelta(seconds=1)
T, G, C = AclResourceType.TOPIC, AclResourceType.GROUP, AclResourceType.CLUSTER
X = AclResourceType.TRANSACTIONAL_ID
O = AclOperation  # noqa: E741
#: Served before (or without) authorization, as in Kafka.
UNAUTHORIZED_APIS = {18: "ApiVersions", 17: "SaslHandshake", 36: "SaslAuthenticate"}


@dataclass
class Peer:
    principal: str = ALICE
    peer_host: str = HOST
    peer_port: int = 50000
    listener_name: str = "PLAINTEXT"
    connection_id: int = 1
    client_id_raw: bytes | None = None
    client_id: str | None = None
    received_at: float = 0.0


class Api:
    """The broker, dispatch-level calls as alice, and her ACLs."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.peer = Peer()
        self._corr = 0
        store = broker.acls
        assert store is not None
        self.store = store

    def req(self, api: int, version: int, **fields: Any) -> Any:
        return build(codecs.codec(api, version).request_type, **fields)

    def n(self, api: int, version: int, entity_name: str, /, **fields: Any) -> Any:
        """A nested request entity of that API version."""
        return build(nested(codecs.codec(api, version).request_type, entity_name), **fields)

    async def call(self, api: int, version: int, **fields: Any) -> Any:
        c = codecs.codec(api, version)
        self._corr += 1
        frame = encode_request_header(api, version, self._corr, "authz", c.request_flexible) + \
            codecs.encode_request(build(c.request_type, **fields))
        out = self.broker.apis.handle(self.peer, frame)
        if isinstance(out, asyncio.Future):
            out = await asyncio.wait_for(out, 10)
        assert isinstance(out, bytes), out
        body = out[4:]
        _corr, off = parse_response_header(body, c.response_header_flexible)
        return codecs.decode_response(api, version, body, off)

    def allow(self, rtype: AclResourceType, name: str, op: AclOperation,
              pattern: PatternType = PatternType.LITERAL) -> None:
        self.store.add([AclBinding(rtype, name, pattern, ALICE, "*", op, AclPermission.ALLOW)])

    def revoke_all(self) -> None:
        self.store.delete([AclFilter(AclResourceType.ANY, None, PatternType.ANY, None, None,
                                     AclOperation.ANY, AclPermission.ANY)])


Case = Callable[[Api], Awaitable[None]]
CASES: dict[int, Case] = {}


def case(api_key: int) -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        CASES[api_key] = fn
        return fn
    return register


def codes_of(resp: Any, *path: str) -> list[int]:
    """Every error code found by walking ``path`` (lists flattened) from ``resp``."""
    items = [resp]
    for attr in path:
        nxt: list[Any] = []
        for it in items:
            v = getattr(it, attr)
            nxt.extend(v if isinstance(v, tuple) else [v])
        items = nxt
    return [int(x) for x in items]


async def cluster_op(a: Api, api: int, version: int, op: AclOperation,
                     **fields: Any) -> None:
    assert (await a.call(api, version, **fields)).error_code == CLUSTER_DENIED
    a.allow(C, "kafka-cluster", op)
    assert (await a.call(api, version, **fields)).error_code == 0


async def group_read(a: Api, api: int, version: int, **fields: Any) -> None:
    """Read on the group, checked before the coordinator sees the request."""
    assert (await a.call(api, version, **fields)).error_code == GROUP_DENIED
    a.allow(G, "g", O.DESCRIBE)  # not enough
    assert (await a.call(api, version, **fields)).error_code == GROUP_DENIED
    a.allow(G, "g", O.READ)
    assert (await a.call(api, version, **fields)).error_code != GROUP_DENIED
