"""JoinGroup and SyncGroup bodies written field by field are byte for byte what kio's
writer makes of the same answer, at every version served."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalite.broker.handlers.groups.group_wire import join_body, sync_body
from kafkalite.coordinator.results import JoinResult, SyncResult
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.names import NO_THROTTLE

JOIN_GROUP, SYNC_GROUP = 11, 14

JOINS = [
    JoinResult(ErrorCode.none, "m-1", 3, "consumer", "range", "m-1",
               [("m-1", None, b"\x00\x01meta"), ("m-2é", "static-2", b""),
                ("m-3", "", b"x" * 300)]),
    JoinResult(ErrorCode.none, "m-2", 3, "consumer", "range", "m-1", [], True),
    JoinResult(ErrorCode.member_id_required, "new-member", -1, None, None, ""),
    JoinResult(ErrorCode.unknown_member_id),
]
SYNCS = [
    SyncResult(ErrorCode.none, "consumer", "range", b"\x00\x01assignment"),
    SyncResult(ErrorCode.rebalance_in_progress),
    SyncResult(ErrorCode.none, None, None, b"y" * 200),
]


def kio_join(version: int, res: JoinResult) -> bytes:
    resp_t = codecs.codec(JOIN_GROUP, version).response_type
    member_t = nested(resp_t, "JoinGroupResponseMember")
    name = res.protocol_name
    if name is None and version < 7:
        name = ""
    entity: Any = build(
        resp_t, throttle_time=NO_THROTTLE, error_code=res.error, generation_id=res.generation,
        protocol_type=res.protocol_type, protocol_name=name, leader=res.leader,
        skip_assignment=res.skip_assignment, member_id=res.member_id,
        members=tuple(build(member_t, member_id=m, group_instance_id=i, metadata=meta)
                      for m, i, meta in res.members))
    return codecs.codec(JOIN_GROUP, version).encode_response(entity)


def kio_sync(version: int, res: SyncResult) -> bytes:
    resp_t = codecs.codec(SYNC_GROUP, version).response_type
    entity: Any = build(resp_t, throttle_time=NO_THROTTLE, error_code=res.error,
                        protocol_type=res.protocol_type, protocol_name=res.protocol_name,
                        assignment=res.assignment)
    return codecs.codec(SYNC_GROUP, version).encode_response(entity)


@pytest.mark.parametrize("version", range(10))
def test_join_group_body_is_what_kio_writes(version: int) -> None:
    for res in JOINS:
        assert join_body(version, res) == kio_join(version, res), res


@pytest.mark.parametrize("version", range(6))
def test_sync_group_body_is_what_kio_writes(version: int) -> None:
    for res in SYNCS:
        assert sync_body(version, res) == kio_sync(version, res), res
