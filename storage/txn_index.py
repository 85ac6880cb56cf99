"""The aborted-transaction index (``<base>.txnindex``) beside each segment, Kafka's format.

One 34-byte entry per aborted transaction whose ABORT marker is in the segment (Kafka's
``AbortedTxn``): version int16 (0), producer id int64, first offset int64, last offset
int64 (the marker's), last stable offset int64 (the LSO right after the marker). Entries
are in marker order. The file exists only once it has an entry, as in Kafka.

A read_committed fetch collects the entries overlapping the range it returns
(``TransactionIndex.collectAbortedTxns``): those with ``last >= fetch offset`` and
``first < upper bound``, segment after segment from the one holding the fetch offset,
until an entry's last stable offset reaches the upper bound (no transaction open before
the bound can end later).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import structlog

log = structlog.get_logger("kafkalite.storage")

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(VERSION, *self)


def decode_entries(data: bytes) -> list[AbortedTxn]:
    """Whole entries of a ``.txnindex`` file (a torn last entry is left out)."""
    out = []
    for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version, *fields = _ENTRY.unpack_from(data, pos)
        if version != VERSION:
            raise ValueError(f"unsupported aborted transaction version {version}")
        out.append(AbortedTxn(*fields))
    return out


class TransactionIndex:
    """One segment's aborted transactions, in memory and in its ``.txnindex`` file."""

    __slots__ = ("_fd", "entries", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = []
        self._fd = -1

    def load(self) -> None:
        """Read the file if there is one; an unreadable file is rebuilt by the caller."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            self.entries = []
            return
        self.entries = decode_entries(data)
        if len(data) % ENTRY_SIZE:
            log.warning("txn_index.torn_entry_dropped", file=self.path.name, size=len(data))
            self._rewrite()

    def append(self, txn: AbortedTxn) -> None:
        if self.entries and txn.last_offset <= self.entries[-1].last_offset:
            raise ValueError(f"aborted transaction at {txn.last_offset} is not past the "
                             f"last one in {self.path.name}")
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        # Written at once (not batched like the offset index): a process crash must not
        # lose an entry while its segment's log is kept, or aborted data would show.
        os.write(self._fd, txn.encode())
        self.entries.append(txn)

    def replace(self, entries: Iterable[AbortedTxn]) -> None:
        """Swap in a new list of entries (the log cleaner's), atomically on disk."""
        self.entries = list(entries)
        self._rewrite()

    def truncate_to(self, offset: int) -> None:
        """Drop the entries of markers at or after ``offset``."""
        keep = [t for t in self.entries if t.last_offset < offset]
        if len(keep) != len(self.entries):
            self.replace(keep)

    def reset(self) -> None:
        """Drop every entry (before recovery rebuilds them)."""
        self.close()
        self.entries = []
        self.path.unlink(missing_ok=True)

    def _rewrite(self) -> None:
        self.close()
        if not self.entries:
            self.path.unlink(missing_ok=True)
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_bytes(b"".join(t.encode() for t in self.entries))
        os.replace(tmp, self.path)

    def flush(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def sync_handle(self) -> int | None:
        return os.dup(self._fd) if self._fd >= 0 else None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)


def collect_aborted(indexes: Iterable[TransactionIndex], fetch_offset: int,
                    upper_bound: int) -> list[AbortedTxn]:
    """Aborted transactions overlapping [fetch_offset, upper_bound), from the indexes of
    the segment holding ``fetch_offset`` and those after it (Kafka's search)."""
    out: list[AbortedTxn] = []
    for index in indexes:
        for txn in index.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                out.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return out
    return out
