"""What read_committed may show of a partition directory: its last stable offset and its
aborted transactions, read from the files alone (kafkalite's or Apache Kafka's).

The producer snapshot taken when the active segment began (``<offset>.snapshot``) says
which transactions were open there; the batches from there on are scanned (headers, and
the markers' one record) to follow them to their COMMIT or ABORT, or to find them still
open at the end. Transactions aborted before the snapshot come from the segments'
``.txnindex`` files. Without a snapshot the whole partition is scanned. The last stable
offset is the first offset of the earliest transaction still open (the log end if none):
read_committed stops there, as a consumer does.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from kafkalite.protocol.control import read_end_txn_marker
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import ATTR_CONTROL, ATTR_TRANSACTIONAL, LOG_OVERHEAD
from kafkalite.storage.producer_state import decode_snapshot
from kafkalite.storage.txn_index import decode_entries

from .fs import LogDirError, explain
from .segments import (
    PartitionDir,
    SegmentFile,
    list_files,
    read_range,
    scan_positions,
    segments_of,
)

#: An aborted transaction: (producer id, first offset, offset of its ABORT marker).
Aborted = tuple[int, int, int]

_SNAPSHOT = ".snapshot"
_TXN_INDEX = ".txnindex"


@dataclass(frozen=True, slots=True)
class TxnView:
    last_stable_offset: int
    aborted: tuple[Aborted, ...]  # by first offset

    def aborted_in(self, start: int, end: int | None) -> tuple[Aborted, ...]:
        """The aborted transactions with data in [start, end)."""
        stop = end if end is not None else 1 << 62
        return tuple(t for t in self.aborted if t[2] >= start and t[1] < stop)


def _read(part: PartitionDir, path: str) -> bytes:
    try:
        if part.lfs.local:
            with open(path, "rb") as f:
                return f.read()
        with part.lfs.fs.open_input_file(path) as f:
            return bytes(f.read())
    except (OSError, ValueError) as e:
        raise explain(part.lfs, path, "read", e) from e


def _offset_of(path: str, suffix: str) -> int | None:
    name = path.rsplit("/", 1)[-1]
    stem = name[: -len(suffix)]
    return int(stem) if name.endswith(suffix) and stem.isdigit() and len(stem) == 20 else None


def transaction_view(part: PartitionDir) -> TxnView:
    """The partition's last stable offset and aborted transactions (one directory listing,
    the snapshot, the ``.txnindex`` files before it and a header scan after it)."""
    files = list_files(part)
    segs = segments_of(part, files)
    if not segs:
        return TxnView(0, ())
    first, active = segs[0].base_offset, segs[-1].base_offset
    snapshots = sorted(o for p, d, _s in files if not d
                       and (o := _offset_of(p, _SNAPSHOT)) is not None and first <= o <= active)
    open_txns: dict[int, int] = {}
    start = first
    for offset in reversed(snapshots):
        path = next(p for p, _d, _s in files if _offset_of(p, _SNAPSHOT) == offset)
        try:
            table = decode_snapshot(_read(part, path))
        except ValueError:
            continue  # torn: an older one, or the whole partition
        open_txns = dict(table.ongoing)
        start = offset
        break
    aborted: list[Aborted] = []
    if start > first:
        for path, is_dir, size in files:
            if is_dir or size == 0 or _offset_of(path, _TXN_INDEX) is None:
                continue
            for t in decode_entries(_read(part, path)):
                if t.last_offset < start:
                    aborted.append((t.producer_id, t.first_offset, t.last_offset))
    end = _scan(segs, start, open_txns, aborted)
    lso = max(min(open_txns.values()), first) if open_txns else end
    aborted.sort(key=lambda t: (t[1], t[2]))
    return TxnView(lso, tuple(aborted))


def _scan(segs: list[SegmentFile], start: int, open_txns: dict[int, int],
          aborted: list[Aborted]) -> int:
    """Follow transactions through the batches at or after ``start``; return the end."""
    bases = [s.base_offset for s in segs]
    end = segs[-1].base_offset
    for seg in segs[max(bisect.bisect_right(bases, start) - 1, 0):]:
        for pos, h in scan_positions(seg):
            base, last, pid, attrs = h[0], h[0] + h[6], h[9], h[5]
            end = max(end, last + 1)
            if last < start or pid < 0:
                continue
            if attrs & ATTR_CONTROL:
                try:
                    marker = read_end_txn_marker(read_range(seg, pos, h[1] + LOG_OVERHEAD))
                except ProtocolError as e:
                    raise LogDirError(f"unreadable transaction marker at offset {base} in "
                                      f"{seg.where}: {e}") from e
                first = open_txns.pop(pid, None) if marker is not None else None
                if first is not None and marker is not None and not marker.commit:
                    aborted.append((pid, first, base))
            elif attrs & ATTR_TRANSACTIONAL and pid not in open_txns:
                open_txns[pid] = base
    return end


def aborted_filter(aborted: Sequence[Aborted]) -> dict[int, list[tuple[int, int]]]:
    """Producer id -> (first, last) ranges: ``segments.read_segment``'s ``aborted``."""
    out: dict[int, list[tuple[int, int]]] = {}
    for pid, first, last in aborted:
        out.setdefault(pid, []).append((first, last))
    return out
