"""One log segment: ``<base>.log`` of magic-v2 batches, with its ``.index``, ``.timeindex``
and (once a transaction aborts in it) ``.txnindex``.

Writes are plain appends to a file descriptor (the OS buffers them); reads are ``pread``
of byte ranges. Every batch in the file is whole and CRC-checked when it was appended;
recovery re-checks the active segment on start.

The descriptor is opened on first use, not kept from creation: thousands of idle
partitions hold none. ``storage.handles`` closes those not used for a while (the file is
reopened by the next read or write, and fsynced through the new descriptor if written).
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import structlog

from kafkalite.protocol.crc import crc32c
from kafkalite.protocol.records import (
    BASE_OFFSET,
    BATCH_HEADER,
    BATCH_LENGTH,
    CRC,
    CRC_START,
    HEADER_SIZE,
    LAST_OFFSET_DELTA,
    LAST_OFFSET_DELTA_POS,
    LOG_OVERHEAD,
    MAGIC,
    MAX_TIMESTAMP,
    MIN_BATCH_LENGTH,
)

from . import handles
from .index import IndexCorrupt, OffsetIndex, TimeIndex
from .txn_index import TransactionIndex

log = structlog.get_logger("kafkalite.storage")

#: baseOffset and batchLength: what a walk over the batches needs.
_LEN = struct.Struct(">qi")
_I32 = struct.Struct(">i")
_READ_CHUNK = 1 << 20


def filename(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class Segment:
    def __init__(self, directory: Path, base_offset: int, created_ms: int) -> None:
        self.dir = directory
        self.base_offset = base_offset
        self.log_path = directory / filename(base_offset, ".log")
        fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            self.size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        #: The open descriptor, or -1 until used (``fd`` opens it).
        self._fd = -1
        #: Used since the last sweep of ``handles`` (which closes the descriptors not used).
        self.used = False
        #: Closed for good (deleted or replaced): reads and writes fail as on a closed file.
        self.closed = False
        #: Read by a worker thread (the cleaner): the sweep leaves its descriptor open.
        self.pins = 0
        #: Written (or truncated) since the last fsync. A new empty file has nothing to make
        #: durable; a file found with content is synced once, as its state is not known.
        self.dirty = self.size > 0
        self.index = OffsetIndex(directory / filename(base_offset, ".index"), base_offset)
        self.time_index = TimeIndex(directory / filename(base_offset, ".timeindex"), base_offset)
        self.txn_index = TransactionIndex(directory / filename(base_offset, ".txnindex"))
        #: One past the last offset written (base offset while empty).
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        #: Time the segment was started, for ``segment.ms`` (first batch's timestamp, as Kafka).
        self.created_ms = created_ms
        self.first_batch_ts = -1
        self.bytes_since_index = 0
        #: An index entry pointed at no batch; lookups read from the segment's start.
        self.index_damaged = False

    @property
    def fd(self) -> int:
        """The segment's descriptor, opened now if it was not open."""
        fd = self._fd
        if fd < 0:
            fd = self._open()
        self.used = True
        return fd

    def _open(self) -> int:
        if self.closed:
            raise OSError(9, "segment closed", str(self.log_path))
        # No O_CREAT: a segment file gone from under the log is an error, not a new file.
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_APPEND)
        handles.opened(self)
        return self._fd

    def release(self) -> None:
        """Close the descriptors (the log's and its indexes') until next used; nothing is
        lost: writes are in the OS's cache, and ``dirty`` says an fsync is still due."""
        self.index.write_pending()
        self.time_index.write_pending()
        self.index.release()
        self.time_index.release()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            handles.closed(self)

    # --- writes -------------------------------------------------------------------------

    def append_parts(
        self, parts: list[bytes | memoryview], size: int, base: int, last: int, max_ts: int,
        index_interval: int,
    ) -> None:
        """Append one batch given as buffers (header patches and the original bytes)."""
        position = self.size
        self.dirty = True
        try:
            written = os.writev(self.fd, parts)
            if written != size:
                # Short writes happen only on errors such as a full disk; finish or fail.
                data = b"".join(bytes(p) for p in parts)[written:]
                while data:
                    n = os.write(self.fd, data)
                    data = data[n:]
        except OSError:
            # Drop what part of the batch reached the file: appends go to the end of the
            # file, and a torn batch there would sit before every later one.
            try:
                os.ftruncate(self.fd, position)
            except OSError:
                log.error("segment.truncate_after_failed_write", segment=self.log_path.name,
                          position=position)
            raise
        self._account(position, size, last, max_ts, index_interval)

    def flush(self) -> None:
        # A segment untouched since its last fsync skips it: a stop with thousands of idle
        # partitions otherwise pays an fsync for each (Kafka flushes only past the
        # recovery point).
        if self.dirty:
            os.fsync(self.fd)
            self.dirty = False
        self.index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        # Kafka keeps the time index's last entry at the segment's max timestamp on roll.
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.index.close()
        self.time_index.close()
        self.txn_index.close()
        self.closed = True
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            handles.closed(self)

    def delete(self) -> None:
        self.close()
        for p in (self.log_path, self.index.path, self.time_index.path, self.txn_index.path):
            try:
                p.unlink()
            except FileNotFoundError:
                pass

    def truncate_to_position(self, position: int) -> None:
        self.dirty = True
        os.ftruncate(self.fd, position)
        self.size = position
        self.index.truncate_after_position(position)

    # --- reads --------------------------------------------------------------------------

    def pread(self, n: int, position: int) -> bytes:
        return os.pread(self.fd, n, position)

    def find_position(self, offset: int) -> tuple[int, int] | None:
        """(position, size) of the first batch whose last offset is >= ``offset``."""
        pos = self.index.lookup(offset)
        end = self.size
        checked = pos == 0
        fd = self.fd
        while pos < end:
            chunk = os.pread(fd, min(_READ_CHUNK, end - pos), pos)
            if not checked:
                checked = True
                if not self._batch_starts(chunk, pos, offset):
                    # A damaged index entry (a closed segment's index is trusted on load):
                    # read from the start of the segment instead of a wrong position.
                    if not self.index_damaged:
                        self.index_damaged = True
                        log.warning("segment.index_entry_invalid",
                                    segment=str(self.log_path), position=pos, offset=offset)
                    pos = 0
                    continue
            p = 0
            n = len(chunk)
            while n - p >= HEADER_SIZE:
                base, length = _LEN.unpack_from(chunk, p)
                size = length + LOG_OVERHEAD
                last = base + _I32.unpack_from(chunk, p + LAST_OFFSET_DELTA_POS)[0]
                if last >= offset:
                    return pos + p, size
                p += size
            if p == 0:
                return None  # torn header: nothing more readable
            pos += p
        return None

    def _batch_starts(self, chunk: bytes, pos: int, offset: int) -> bool:
        """Whether ``chunk``, read at ``pos``, begins with a batch at or before ``offset``."""
        if len(chunk) < HEADER_SIZE:
            return False
        h = BATCH_HEADER.unpack_from(chunk, 0)
        return bool(h[3] == 2 and h[1] >= MIN_BATCH_LENGTH
                    and self.base_offset <= h[0] <= offset
                    and pos + h[1] + LOG_OVERHEAD <= self.size)

    def read_from(self, position: int, first_size: int, max_bytes: int,
                  end: int | None = None) -> bytes:
        """Whole batches from ``position``: the first always, more while within max_bytes
        (and before the batch boundary ``end``, when given)."""
        stop = self.size if end is None else end
        limit = min(stop - position, max(max_bytes, first_size))
        data = os.pread(self.fd, limit, position)
        if len(data) == limit and position + limit == stop:
            return data
        # Cut at the last whole batch.
        p = 0
        n = len(data)
        while n - p >= LOG_OVERHEAD:
            size = _LEN.unpack_from(data, p)[1] + LOG_OVERHEAD
            if p + size > n:
                break
            p += size
        return data if p == n else data[:p]

    def iter_batches(self, position: int = 0) -> Iterator[tuple[int, bytes]]:
        """(position, batch bytes) of every whole batch from ``position`` to the end."""
        end = self.size
        while position < end:
            chunk = os.pread(self.fd, min(_READ_CHUNK, end - position), position)
            p = 0
            n = len(chunk)
            while n - p >= LOG_OVERHEAD:
                size = _LEN.unpack_from(chunk, p)[1] + LOG_OVERHEAD
                if size < HEADER_SIZE:
                    return
                if p + size > n:
                    if p == 0:  # one batch larger than the chunk
                        big = os.pread(self.fd, size, position)
                        if len(big) < size:
                            return
                        yield position, big
                        p = size
                    break
                yield position + p, chunk[p : p + size]
                p += size
            if p == 0:
                return
            position += p

    def iter_headers(self, position: int = 0) -> Iterator[tuple[int, tuple[int, ...]]]:
        """(position, header tuple) of every whole batch from ``position``, reading the
        file in chunks and jumping over bodies larger than a chunk."""
        end = self.size
        while end - position >= HEADER_SIZE:
            chunk = os.pread(self.fd, min(_READ_CHUNK, end - position), position)
            p = 0
            n = len(chunk)
            while n - p >= HEADER_SIZE:
                h = BATCH_HEADER.unpack_from(chunk, p)
                size = h[1] + LOG_OVERHEAD
                if h[1] < MIN_BATCH_LENGTH or position + p + size > end:
                    return
                yield position + p, h
                p += size
            if p == 0:
                return
            position += p

    # --- load and recovery --------------------------------------------------------------

    def scan(self, verify: bool, index_interval: int) -> tuple[int, list[tuple[int, ...]]]:
        """Walk every batch, rebuilding the indexes and the segment's summary.

        Returns (valid bytes, headers of valid batches). With ``verify`` each batch's CRC
        is checked; the scan stops at the first torn or corrupt batch.
        """
        self.index.reset()
        self.time_index.reset()
        self.next_offset = self.base_offset
        self.max_timestamp = self.offset_of_max_timestamp = -1
        self.first_batch_ts = -1
        self.bytes_since_index = 0
        headers: list[tuple[int, ...]] = []
        if self.size == 0:
            return 0, headers
        with mmap.mmap(self.fd, self.size, access=mmap.ACCESS_READ) as mm:
            view = memoryview(mm)
            try:
                pos = 0
                end = self.size
                while end - pos >= HEADER_SIZE:
                    h = BATCH_HEADER.unpack_from(view, pos)
                    length = h[BATCH_LENGTH]
                    size = length + LOG_OVERHEAD
                    if h[MAGIC] != 2 or length < MIN_BATCH_LENGTH or pos + size > end:
                        break
                    base, delta = h[BASE_OFFSET], h[LAST_OFFSET_DELTA]
                    if base < self.next_offset or delta < 0:
                        break
                    if verify and crc32c(view[pos + CRC_START : pos + size]) != h[CRC]:
                        break
                    self.size = pos  # append_parts' bookkeeping without writing
                    self._account(pos, size, base + delta, h[MAX_TIMESTAMP], index_interval)
                    headers.append(h)
                    pos += size
            finally:
                view.release()
        return pos, headers

    def _account(self, position: int, size: int, last: int, max_ts: int, interval: int) -> None:
        self.size = position + size
        self.next_offset = last + 1
        if self.first_batch_ts < 0:
            self.first_batch_ts = max_ts
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
            self.offset_of_max_timestamp = last
        self.bytes_since_index += size
        if self.bytes_since_index > interval:
            self.index.append(last, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_index = 0

    def load_closed(self, index_interval: int) -> None:
        """Open a segment that is not the active one: trust its indexes unless damaged."""
        try:
            if not self.index.path.exists() or not self.time_index.path.exists():
                raise IndexCorrupt("index file missing")
            self.index.load(self.size)
            self.time_index.load()
            if self.size and not self.time_index.timestamps:
                # Without a time index entry the segment's max timestamp is unknown, and
                # retention would take it for expired.
                raise IndexCorrupt("time index empty")
        except IndexCorrupt as e:
            log.warning("segment.index_rebuilt", segment=str(self.log_path), reason=str(e))
            self.scan(False, index_interval)
            self.index.close()
            self.time_index.close()
            return
        self.max_timestamp = self.time_index.last_timestamp
        if self.time_index.offsets:
            self.offset_of_max_timestamp = self.time_index.offsets[-1]
        self.first_batch_ts = self.max_timestamp
        self.next_offset = self._last_offset_from_tail() + 1

    def _last_offset_from_tail(self) -> int:
        """Last offset of the segment: walk headers from the last indexed batch."""
        last = self.base_offset - 1
        pos = self.index.positions[-1] if self.index.positions else 0
        if pos and not self._batch_starts(os.pread(self.fd, HEADER_SIZE, pos), pos, 2**63 - 1):
            pos = 0  # a damaged last index entry: walk the whole segment
        while pos + HEADER_SIZE <= self.size:
            head = os.pread(self.fd, HEADER_SIZE, pos)
            base, length = _LEN.unpack_from(head, 0)
            if length < MIN_BATCH_LENGTH:
                break
            last = base + _I32.unpack_from(head, LAST_OFFSET_DELTA_POS)[0]
            pos += length + LOG_OVERHEAD
        return last
