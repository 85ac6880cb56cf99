"""A light asyncio Kafka client for many members in one process: one TCP connection per
member, one request in flight per connection, requests encoded with kio through
``kafkalite.protocol``. Enough for JoinGroup / SyncGroup / Heartbeat / LeaveGroup loads
where the broker, not the client library, should be what is measured."""

from __future__ import annotations

import asyncio
import struct
from datetime import timedelta
from typing import Any

from kafkalite.client.kafka import request, request_class
from kafkalite.protocol.apis import codec, decode_response, encode_request
from kafkalite.protocol.headers import encode_request_header, parse_response_header

JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP = 11, 14, 12, 13
MEMBER_ID_REQUIRED = 79
REBALANCE_IN_PROGRESS = 27
UNKNOWN_MEMBER_ID = 25
ILLEGAL_GENERATION = 22
_LEN = struct.Struct(">i")

JOIN_V, SYNC_V, HB_V, LEAVE_V = 9, 5, 4, 5


class AioConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 client_id: str) -> None:
        self.reader = reader
        self.writer = writer
        self.client_id = client_id
        self.corr = 0

    @classmethod
    async def open(cls, bootstrap: str, client_id: str = "kafkalite-soak") -> AioConnection:
        host, _, port = bootstrap.rpartition(":")
        r, w = await asyncio.open_connection(host, int(port))
        return cls(r, w, client_id)

    async def call(self, req: Any) -> Any:
        key, ver = int(req.__api_key__), int(req.__version__)
        c = codec(key, ver)
        self.corr += 1
        body = encode_request_header(key, ver, self.corr, self.client_id,
                                     c.request_flexible) + encode_request(req)
        self.writer.write(_LEN.pack(len(body)) + body)
        (size,) = _LEN.unpack(await self.reader.readexactly(4))
        frame = await self.reader.readexactly(size)
        _corr, off = parse_response_header(frame, c.response_header_flexible)
        return decode_response(key, ver, frame, off)

    def close(self) -> None:
        self.writer.close()


def subscription(topic: str) -> bytes:
    raw = topic.encode()
    return b"\x00\x00\x00\x00\x00\x01" + len(raw).to_bytes(2, "big") + raw + b"\xff\xff\xff\xff"


def assignment(topic: str, partitions: list[int]) -> bytes:
    raw = topic.encode()
    return (b"\x00\x00\x00\x00\x00\x01" + len(raw).to_bytes(2, "big") + raw
            + len(partitions).to_bytes(4, "big")
            + b"".join(p.to_bytes(4, "big") for p in partitions) + b"\xff\xff\xff\xff")


class Member:
    """One consumer-group member speaking the classic protocol by hand."""

    def __init__(self, conn: AioConnection, group: str, topic: str, session_ms: int,
                 rebalance_ms: int) -> None:
        self.conn = conn
        self.group = group
        self.topic = topic
        self.session_ms = session_ms
        self.rebalance_ms = rebalance_ms
        self.member_id = ""
        self.generation = -1
        self.leader = False
        self.members: list[str] = []

    async def join(self) -> int:
        """JoinGroup (again on MEMBER_ID_REQUIRED) then SyncGroup; return the error code."""
        proto = request_class(JOIN_GROUP, JOIN_V, "JoinGroupRequestProtocol")
        while True:
            resp = await self.conn.call(request(
                JOIN_GROUP, JOIN_V, group_id=self.group,
                session_timeout=timedelta(milliseconds=self.session_ms),
                rebalance_timeout=timedelta(milliseconds=self.rebalance_ms),
                member_id=self.member_id, group_instance_id=None, protocol_type="consumer",
                reason=None, protocols=(proto(name="range", metadata=subscription(self.topic)),),
            ))
            err = int(resp.error_code)
            if err == MEMBER_ID_REQUIRED:
                self.member_id = resp.member_id
                continue
            if err:
                return err
            self.member_id = resp.member_id
            self.generation = int(resp.generation_id)
            self.leader = resp.leader == resp.member_id
            self.members = [m.member_id for m in resp.members]
            break
        assign_cls = request_class(SYNC_GROUP, SYNC_V, "SyncGroupRequestAssignment")
        assignments: tuple[Any, ...] = ()
        if self.leader:
            assignments = tuple(
                assign_cls(member_id=m, assignment=assignment(self.topic, [i]))
                for i, m in enumerate(self.members))
        sresp = await self.conn.call(request(
            SYNC_GROUP, SYNC_V, group_id=self.group, generation_id=self.generation,
            member_id=self.member_id, group_instance_id=None, protocol_type="consumer",
            protocol_name="range", assignments=assignments,
        ))
        return int(sresp.error_code)

    async def heartbeat(self) -> int:
        resp = await self.conn.call(request(
            HEARTBEAT, HB_V, group_id=self.group, generation_id=self.generation,
            member_id=self.member_id, group_instance_id=None))
        return int(resp.error_code)

    async def leave(self) -> None:
        ident = request_class(LEAVE_GROUP, LEAVE_V, "MemberIdentity")
        await self.conn.call(request(
            LEAVE_GROUP, LEAVE_V, group_id=self.group,
            members=(ident(member_id=self.member_id, group_instance_id=None, reason=None),)))
