"""What loading a partition of an internal topic reads: the records that decide its state.

Only the last record of each key decides the loaded state, so a log not compacted yet
loads in time proportional to its keys, and only those records are decoded. Transactional
batches (the coordinator's own TxnOffsetCommit writes to ``__consumer_offsets``) count
only once their transaction is decided, as Kafka's OffsetMetadataManager replays them:

- their records are held per producer id until that producer's marker;
- a COMMIT marker makes each held record the latest of its key, unless a record of that
  key written after it was committed first (Kafka keeps the most recent committed offset:
  ``replayEndTransactionMarker`` compares record offsets); an ABORT drops them;
- a tombstone drops the held records of its key (Kafka's replay of an offset tombstone
  removes the pending offsets of that partition too);
- what no marker has decided yet is the partition's open transactions: pending, as they
  were before the restart (the transaction coordinator completes or aborts them later).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import structlog

from kafkalite.protocol.control import read_end_txn_marker
from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import decode_batch, iter_batch_headers

log = structlog.get_logger("kafkalite.coordinator")


@dataclass(slots=True)
class HeldRecord:
    """A record of an undecided transaction."""

    #: Its offset in the log (Kafka's ``recordOffset``).
    offset: int
    value: bytes | None
    #: A record of the same key was committed after it was written: a COMMIT marker does
    #: not make this one the latest.
    superseded: bool = False


@dataclass(slots=True)
class OpenTransaction:
    producer_epoch: int
    #: key -> its last record in the transaction, in the order of those records.
    records: dict[bytes, HeldRecord] = field(default_factory=dict)


@dataclass(slots=True)
class LoadedRecords:
    #: The last committed record of each key (value None: a tombstone), in the order of
    #: those records.
    latest: dict[bytes, bytes | None] = field(default_factory=dict)
    #: Producer id -> its transaction that no marker has ended yet.
    open: dict[int, OpenTransaction] = field(default_factory=dict)


def scan(batches: Iterator[bytes], topic: str, partition: int) -> LoadedRecords:
    out = LoadedRecords()
    latest, open_txns = out.latest, out.open
    #: key -> producer ids holding a record of it (only while transactions are open).
    holders: dict[bytes, set[int]] = {}
    for batch in batches:
        for pos, h in iter_batch_headers(batch):
            if h.is_control:
                if h.producer_id >= 0 and open_txns:
                    _end(batch, pos, h.size, h.producer_id, out, holders, topic, partition)
                continue
            try:
                _h, recs = decode_batch(batch, pos)
            except ProtocolError as e:
                log.warning("coordinator.batch_unreadable", topic=topic, partition=partition,
                            error=str(e))
                continue
            if h.is_transactional and h.producer_id >= 0:
                txn = open_txns.get(h.producer_id)
                if txn is None:
                    txn = open_txns[h.producer_id] = OpenTransaction(h.producer_epoch)
                txn.producer_epoch = h.producer_epoch
                for r in recs:
                    if r.key is None:
                        continue
                    txn.records.pop(r.key, None)
                    txn.records[r.key] = HeldRecord(r.offset, r.value)
                    holders.setdefault(r.key, set()).add(h.producer_id)
                continue
            for r in recs:
                key = r.key
                if key is None:
                    continue
                latest.pop(key, None)
                latest[key] = r.value
                if holders and key in holders:
                    _committed(key, r.value is None, open_txns, holders)
    return out


def _committed(key: bytes, tombstone: bool, open_txns: dict[int, OpenTransaction],
               holders: dict[bytes, set[int]]) -> None:
    """A plain record of ``key`` was written after the held ones."""
    if tombstone:
        for pid in holders.pop(key):
            open_txns[pid].records.pop(key, None)
        return
    for pid in holders[key]:
        open_txns[pid].records[key].superseded = True


def _end(batch: bytes, pos: int, size: int, pid: int, out: LoadedRecords,
         holders: dict[bytes, set[int]], topic: str, partition: int) -> None:
    txn = out.open.get(pid)
    if txn is None:
        return
    try:
        marker = read_end_txn_marker(memoryview(batch)[pos:pos + size])
    except ProtocolError as e:
        log.warning("coordinator.marker_unreadable", topic=topic, partition=partition,
                    producer_id=pid, error=str(e))
        return
    if marker is None:
        return
    del out.open[pid]
    for key, held in txn.records.items():
        others = holders.get(key)
        if others is not None:
            others.discard(pid)
            if not others:
                del holders[key]
        if not marker.commit or held.superseded:
            continue
        out.latest.pop(key, None)
        out.latest[key] = held.value
        for other in others or ():
            rec = out.open[other].records[key]
            rec.superseded = rec.offset < held.offset
