"""A partition's leader epochs and the offsets where each began (KIP-101), kept in Kafka's
``leader-epoch-checkpoint`` file in the partition directory: a version line (0), a count
line, then one ``epoch startOffset`` line per epoch, oldest first.

The rules are those of Kafka's ``LeaderEpochFileCache``: entries grow in both epoch and
start offset, a new entry drops any entry that is not below it in both, truncating the log
drops entries from the end, and moving the log start offset rewrites the first surviving
epoch to begin there.

The file is replaced atomically (write, rename) but not fsynced: after a machine crash
that loses it, the log's own batches (each stamped with its leader epoch) rebuild it.
"""

from __future__ import annotations

import bisect
import os
from pathlib import Path

import structlog

log = structlog.get_logger("kafkalite.storage")

FILENAME = "leader-epoch-checkpoint"
VERSION = 0
#: Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET.
UNDEFINED = -1


class LeaderEpochCache:
    __slots__ = ("_epochs", "_starts", "path")

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILENAME
        self._epochs: list[int] = []
        self._starts: list[int] = []

    # --- the checkpoint file -------------------------------------------------------------

    def load(self) -> bool:
        """Read the checkpoint; False when it is missing or unreadable (then empty)."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return False
        except OSError as e:
            log.warning("log.leader_epoch_checkpoint_unreadable", file=str(self.path),
                        reason=str(e))
            return False
        try:
            lines = text.split("\n")
            if int(lines[0]) != VERSION:
                raise ValueError(f"unknown version {lines[0]!r}")
            count = int(lines[1])
            entries = [tuple(int(x) for x in line.split()) for line in lines[2:2 + count]]
            if len(entries) != count or any(len(e) != 2 for e in entries):
                raise ValueError(f"expected {count} entries")
        except (ValueError, IndexError) as e:
            log.warning("log.leader_epoch_checkpoint_unreadable", file=str(self.path),
                        reason=str(e))
            self.clear()
            return False
        self.clear()
        for epoch, start in entries:
            self._assign(epoch, start)
        return True

    def save(self) -> None:
        rows = [f"{e} {s}" for e, s in zip(self._epochs, self._starts, strict=True)]
        data = "\n".join([str(VERSION), str(len(rows)), *rows]) + "\n"
        tmp = self.path.with_name(FILENAME + ".tmp")
        try:
            tmp.write_text(data)
            os.replace(tmp, self.path)
        except FileNotFoundError:
            pass  # the partition directory is gone (topic deleted)

    # --- reads ---------------------------------------------------------------------------

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1] if self._epochs else UNDEFINED

    @property
    def earliest(self) -> tuple[int, int] | None:
        return (self._epochs[0], self._starts[0]) if self._epochs else None

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch whose range holds ``offset`` (UNDEFINED before the first entry)."""
        i = bisect.bisect_right(self._starts, offset) - 1
        return self._epochs[i] if i >= 0 else UNDEFINED

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) answering OffsetForLeaderEpoch for ``epoch``: the latest
        epoch ends at the log end; an older one at the start of the next known epoch,
        reported with the largest known epoch not above it; (-1, -1) when unknown."""
        if epoch == UNDEFINED or not self._epochs:
            return UNDEFINED, UNDEFINED
        if epoch == self._epochs[-1]:
            return epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return UNDEFINED, UNDEFINED
        if higher == 0:
            # Older than anything kept (removed with the log's head): the first kept
            # epoch's start is where the log begins to be known.
            return epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]

    # --- changes -------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` begins at ``start_offset``; True if anything changed
        (the caller saves)."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        if self._epochs and epoch == self._epochs[-1] and start_offset >= self._starts[-1]:
            return False
        self._assign(epoch, start_offset)
        return True

    def _assign(self, epoch: int, start_offset: int) -> None:
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start_offset):
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop the epochs that begin at or after ``end_offset`` (the log was cut there)."""
        changed = False
        while self._starts and self._starts[-1] >= end_offset >= 0:
            self._epochs.pop()
            self._starts.pop()
            changed = True
        return changed

    def truncate_from_start(self, start_offset: int) -> bool:
        """Forget what lies below ``start_offset``: the last epoch beginning at or below it
        now begins there."""
        i = bisect.bisect_right(self._starts, start_offset) - 1
        if i < 0 or (i == 0 and self._starts[0] == start_offset):
            return False
        del self._epochs[:i]
        del self._starts[:i]
        self._starts[0] = start_offset
        return True

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()
