"""Hand-encoded OffsetCommit and OffsetFetch response bodies, every version served.

Committing or fetching many partitions spent more on building kio's response objects than
on the work itself, so these two hot responses are written directly; tests check them
against kio's encoder byte for byte.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Any

from kafkalite.coordinator.offsets.store import OffsetRow
from kafkalite.protocol.errors import NO_ERROR
from kafkalite.protocol.varint import put_uvarint

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PARTITION = struct.Struct(">ih")


def _put_len(out: bytearray, n: int, flexible: bool, wide: bool) -> None:
    if flexible:
        if n < 127:  # a one-byte varint: nearly every name and count
            out.append(n + 1)
        else:
            put_uvarint(out, n + 1)
    else:
        out += (_I32 if wide else _I16).pack(n)


def _put_str(out: bytearray, s: str | None, flexible: bool) -> None:
    if s is None:
        out += b"\x00" if flexible else b"\xff\xff"
        return
    raw = s.encode("utf-8")
    _put_len(out, len(raw), flexible, False)
    out += raw


#: Group ids and topic names as written (length and bytes), per flexibility: the same few
#: names are answered over and over. Bounded in count (cleared when full) and in the length
#: of a name kept, so a client sending long names cannot grow it much.
_NAMES: tuple[dict[str, bytes], dict[str, bytes]] = ({}, {})
_NAMES_MAX = 4096
_NAME_MAX_CHARS = 255


def _name(s: str, flexible: bool) -> bytes:
    names = _NAMES[flexible]
    found = names.get(s)
    if found is None:
        out = bytearray()
        _put_str(out, s, flexible)
        found = bytes(out)
        if len(s) <= _NAME_MAX_CHARS:
            if len(names) >= _NAMES_MAX:
                names.clear()
            names[s] = found
    return found


def encode_commit_response(version: int, topics: Sequence[Any], errors: dict[tuple[str, int], int],
                           default: int = 0) -> bytes:
    """The OffsetCommit response body for ``topics`` of the request, in request order, with
    each partition's error from ``errors`` (else ``default``). Encoded by hand: a commit of
    many partitions spent more on building kio's response objects than on committing."""
    flexible = version >= 8
    by_id = version >= 10  # v10 names topics by id (``t.topic_id``; ``t.name`` keys errors)
    out = bytearray(b"\x00\x00\x00\x00" if version >= 3 else b"")  # throttle_time_ms
    _put_len(out, len(topics), flexible, True)
    pack = _PARTITION.pack
    for t in topics:
        name = t.name
        out += t.topic_id.bytes if by_id else _name(name, flexible)
        parts = t.partitions
        _put_len(out, len(parts), flexible, True)
        get = errors.get
        for p in parts:
            index = p.partition_index
            out += pack(index, get((name, index), default))
            if flexible:
                out.append(0)  # tagged fields
        if flexible:
            out.append(0)
    if flexible:
        out.append(0)
    return bytes(out)


_FETCHED = struct.Struct(">iq")
_FETCHED_EPOCH = struct.Struct(">iqi")


def _put_fetch_topics(out: bytearray, version: int,
                      rows: Sequence[tuple[str | uuid.UUID, Sequence[OffsetRow]]],
                      flexible: bool) -> None:
    """Rows name their topic by name, or from v10 by id (a UUID)."""
    _put_len(out, len(rows), flexible, True)
    epoch = version >= 5
    # Most rows have empty metadata and no error: their bytes are written whole.
    empty = b"\x01" if flexible else b"\x00\x00"
    no_error = b"\x00\x00\x00" if flexible else b"\x00\x00"  # (and no tagged fields)
    for topic, parts in rows:
        out += topic.bytes if isinstance(topic, uuid.UUID) else _name(topic, flexible)
        _put_len(out, len(parts), flexible, True)
        for index, offset, leader_epoch, metadata, error in parts:
            out += (_FETCHED_EPOCH.pack(index, offset, leader_epoch) if epoch
                    else _FETCHED.pack(index, offset))
            if metadata == "":
                out += empty
            else:
                _put_str(out, metadata, flexible)
            if error == NO_ERROR:
                out += no_error
            else:
                out += _I16.pack(error)
                if flexible:
                    out.append(0)
        if flexible:
            out.append(0)


def encode_fetch_response(version: int, groups: Sequence[tuple[str, int, Sequence[
        tuple[str | uuid.UUID, Sequence[OffsetRow]]]]]) -> bytes:
    """The OffsetFetch response body: ``groups`` is [(group id, error, topic rows)], one
    group before v8 (whose id is not written)."""
    flexible = version >= 6
    out = bytearray(b"\x00\x00\x00\x00" if version >= 3 else b"")  # throttle_time_ms
    if version >= 8:
        _put_len(out, len(groups), flexible, True)
        for group_id, error, rows in groups:
            out += _name(group_id, flexible)
            _put_fetch_topics(out, version, rows, flexible)
            out += _I16.pack(error)
            out.append(0)
    else:
        [(_group_id, error, rows)] = groups
        _put_fetch_topics(out, version, rows, flexible)
        if version >= 2:
            out += _I16.pack(error)
    if flexible:
        out.append(0)
    return bytes(out)


__all__ = ["encode_commit_response", "encode_fetch_response"]
