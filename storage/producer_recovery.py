"""Rebuilding producer state and aborted-transaction indexes from the log.

On start (and after a truncation) a partition takes its producer state from the snapshot
taken when its active segment began and replays the active segment, as Kafka's
``LogLoader`` does; without that snapshot it replays the whole log from its start (older
snapshots are not used: the log cleaner may have removed markers that they would need).
In the replay, data batches update each producer's sequence and
open transaction, markers end transactions, and an ABORT marker in a segment whose index
is being rebuilt adds its entry there (``LogSegment.recover``'s ``updateTxnIndex``). No
check applies during replay: everything in the log was accepted once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import structlog

from kafkalite.protocol.control import read_end_txn_marker
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    ATTRIBUTES,
    BASE_OFFSET,
    BASE_SEQUENCE,
    BATCH_LENGTH,
    LAST_OFFSET_DELTA,
    LOG_OVERHEAD,
    MAX_TIMESTAMP,
    NO_SEQUENCE,
    PRODUCER_EPOCH,
    PRODUCER_ID,
    increment_sequence,
)

from .producer_state import ProducerStateTable, decode_snapshot
from .segment import Segment
from .txn_index import AbortedTxn

log = structlog.get_logger("kafkalite.storage")

SNAPSHOT_SUFFIX = ".snapshot"


def snapshot_offsets(directory: Path) -> list[int]:
    return sorted(int(p.name[:-len(SNAPSHOT_SUFFIX)]) for p in directory.iterdir()
                  if p.name.endswith(SNAPSHOT_SUFFIX) and p.name[:-len(SNAPSHOT_SUFFIX)].isdigit())


def load_snapshot(directory: Path, offset: int) -> ProducerStateTable | None:
    """The snapshot taken at ``offset``; None if there is none or it is torn or corrupt."""
    path = directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"
    try:
        return decode_snapshot(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        log.warning("log.snapshot_ignored", directory=directory.name, file=path.name,
                    reason=str(e))
        return None


def replay_batch(table: ProducerStateTable, h: tuple[int, ...], seg: Segment, position: int,
                 index: bool, data: bytes | None = None) -> None:
    """Apply one batch (header ``h`` at ``position`` of ``seg``; its bytes ``data`` if
    already read) to the producer state."""
    pid = h[PRODUCER_ID]
    if pid < 0:
        return
    attrs = h[ATTRIBUTES]
    base = h[BASE_OFFSET]
    if attrs & ATTR_CONTROL:
        batch = data if data is not None else seg.pread(h[BATCH_LENGTH] + LOG_OVERHEAD,
                                                        position)
        try:
            marker = read_end_txn_marker(batch)
        except ProtocolError as e:
            log.warning("log.marker_unreadable", segment=str(seg.log_path), offset=base,
                        reason=str(e))
            return
        if marker is None:
            return
        done = table.apply_marker(pid, h[PRODUCER_EPOCH], marker.coordinator_epoch,
                                  marker.commit, base, h[MAX_TIMESTAMP])
        if done is None:
            return
        if done.aborted and index:
            seg.txn_index.append(AbortedTxn(pid, done.first_offset, done.last_offset,
                                            table.lso_after(done)))
        table.complete(done)
        return
    seq = h[BASE_SEQUENCE]
    delta = h[LAST_OFFSET_DELTA]
    last_seq = increment_sequence(seq, delta) if seq >= 0 else NO_SEQUENCE
    table.update(pid, h[PRODUCER_EPOCH], seq, last_seq, base, base + delta, h[MAX_TIMESTAMP],
                 bool(attrs & ATTR_TRANSACTIONAL))


def replay_headers(table: ProducerStateTable, seg: Segment,
                   headers: Sequence[tuple[int, ...]], index: bool) -> None:
    """Replay a segment from its start, given the headers its scan returned in order."""
    pos = 0
    for h in headers:
        replay_batch(table, h, seg, pos, index)
        pos += h[BATCH_LENGTH] + LOG_OVERHEAD


def replay_segment(table: ProducerStateTable, seg: Segment, index: bool) -> None:
    """Replay every batch of ``seg`` (a closed segment: headers only, and the markers)."""
    if seg.closed:
        return
    for pos, h in seg.iter_headers(0):
        replay_batch(table, h, seg, pos, index)
