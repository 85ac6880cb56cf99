"""JoinGroup and SyncGroup response bodies written field by field.

Every member of every classic group joins with two JoinGroup answers and a SyncGroup
answer; kio's generic writer (a type check per field) cost about a fifth of a join's
broker time. Fields by version, as Kafka's JoinGroupResponse.json and
SyncGroupResponse.json; checked against kio's writer for every version in the tests
(``tests/broker/test_group_wire.py``).
"""

from __future__ import annotations

import struct

from kafkalite.coordinator.results import JoinResult, SyncResult
from kafkalite.protocol.varint import write_uvarint

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_THROTTLE_ERROR = struct.Struct(">ih")
_ERROR_GENERATION = struct.Struct(">hi")
_THROTTLE_ERROR_GENERATION = struct.Struct(">ihi")


def _string(s: str | None, flexible: bool) -> bytes:
    if s is None:
        return b"\x00" if flexible else b"\xff\xff"
    raw = s.encode()
    return (write_uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw


def _bytes(b: bytes, flexible: bool) -> bytes:
    return (write_uvarint(len(b) + 1) if flexible else _I32.pack(len(b))) + b


def join_body(version: int, res: JoinResult) -> bytes:
    """JoinGroup v0-v9: throttle (v2+), flexible (v6+), protocol type and a nullable
    protocol name (v7+), skip assignment (v9+), members' instance ids (v5+)."""
    flexible = version >= 6
    out: list[bytes] = [
        _THROTTLE_ERROR_GENERATION.pack(0, res.error.value, res.generation) if version >= 2
        else _ERROR_GENERATION.pack(res.error.value, res.generation)]
    add = out.append
    name = res.protocol_name
    if version >= 7:
        add(_string(res.protocol_type, flexible))
    elif name is None:
        name = ""
    add(_string(name, flexible))
    add(_string(res.leader, flexible))
    if version >= 9:
        add(b"\x01" if res.skip_assignment else b"\x00")
    add(_string(res.member_id, flexible))
    members = res.members
    add(write_uvarint(len(members) + 1) if flexible else _I32.pack(len(members)))
    for mid, iid, meta in members:
        add(_string(mid, flexible))
        if version >= 5:
            add(_string(iid, flexible))
        add(_bytes(meta, flexible))
        if flexible:
            add(b"\x00")
    if flexible:
        add(b"\x00")
    return b"".join(out)


def sync_body(version: int, res: SyncResult) -> bytes:
    """SyncGroup v0-v5: throttle (v1+), flexible (v4+), protocol type and name (v5+)."""
    flexible = version >= 4
    out = [_THROTTLE_ERROR.pack(0, res.error.value) if version >= 1
           else _I16.pack(res.error.value)]
    if version >= 5:
        out.append(_string(res.protocol_type, flexible))
        out.append(_string(res.protocol_name, flexible))
    out.append(_bytes(res.assignment, flexible))
    if flexible:
        out.append(b"\x00")
    return b"".join(out)
