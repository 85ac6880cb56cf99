"""LogManager: every partition log of the broker, their recovery, retention and flushing.

Partition directories sit directly in the data directory (``<topic>-<n>``), as in Kafka's
``log.dirs``. Log start offsets moved by DeleteRecords are kept in Kafka's
``log-start-offset-checkpoint`` file (version 0: a version line, a count line, then
``topic partition offset`` lines).

Logs are opened on first use (``get``) rather than all at start: ``load`` only learns
which partitions exist and the leader epoch each will lead in once opened, so Metadata can
announce it; the broker opens the rest in the background after it listens. A clean stop
writes every partition's latest epoch to ``clean-shutdown`` (one file read at the next
start, as Kafka's clean-shutdown marker tells what may be skipped); without it (a crash)
each partition's ``leader-epoch-checkpoint`` is read instead. Opening a log runs the
same recovery whenever it happens.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import structlog

from kafkalite.protocol.records import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
)
from kafkalite.timekeeping.clock import wall_ms

from .fsutil import DirLock, atomic_write, fsync_dir
from .leader_epoch import LeaderEpochCache
from .log import PartitionLog
from .log_config import NEVER, LogConfig
from .producer_state import ProducerIdAllocator
from .validation import RecordRules

log = structlog.get_logger("kafkalite.storage")

_PARTITION_DIR = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>\d+)$")
START_CHECKPOINT = "log-start-offset-checkpoint"
#: Written by a clean stop, removed at the next start: ``topic partition epoch`` lines
#: (the latest leader epoch of each partition) after a version and a count line.
CLEAN_SHUTDOWN = "clean-shutdown"

#: Reads a topic config's effective value: (topic, name) -> value.
ConfigSource = Callable[[str, str], str]


def _int(v: str) -> int:
    return int(v)


#: compression.type -> the codec to store batches with (None: as the producer sent them).
_CODECS = {"uncompressed": COMPRESSION_NONE, "gzip": COMPRESSION_GZIP,
           "snappy": COMPRESSION_SNAPPY, "lz4": COMPRESSION_LZ4, "zstd": COMPRESSION_ZSTD}
_LEVELS = {COMPRESSION_GZIP: "compression.gzip.level", COMPRESSION_LZ4: "compression.lz4.level",
           COMPRESSION_ZSTD: "compression.zstd.level"}


def record_rules(get: Callable[[str], str]) -> RecordRules:
    """What a client's batches are checked against, from topic config values."""
    codec = _CODECS.get(get("compression.type"))
    level_key = _LEVELS.get(codec) if codec is not None else None
    return RecordRules(
        compact="compact" in get("cleanup.policy"),
        log_append_time=get("message.timestamp.type") == "LogAppendTime",
        timestamp_before_ms=_int(get("message.timestamp.before.max.ms")),
        timestamp_after_ms=_int(get("message.timestamp.after.max.ms")),
        compression=codec,
        compression_level=_int(get(level_key)) if level_key else None,
    )


def log_config(get: Callable[[str], str]) -> LogConfig:
    """LogConfig from a lookup of topic config values by Kafka's names."""
    return LogConfig(
        rules=record_rules(get),
        segment_bytes=_int(get("segment.bytes")),
        segment_ms=_int(get("segment.ms")),
        retention_ms=_int(get("retention.ms")),
        retention_bytes=_int(get("retention.bytes")),
        index_interval_bytes=_int(get("index.interval.bytes")),
        max_message_bytes=_int(get("max.message.bytes")),
        log_append_time=get("message.timestamp.type") == "LogAppendTime",
        flush_messages=_int(get("flush.messages")),
        flush_ms=_int(get("flush.ms")),
        cleanup_policy=get("cleanup.policy"),
        min_insync_replicas=_int(get("min.insync.replicas")),
    )


class LogManager:
    def __init__(
        self,
        data_dir: Path,
        topic_config: ConfigSource,
        *,
        durable: bool = False,
        clock: Callable[[], int] = wall_ms,
    ) -> None:
        self.data_dir = data_dir
        self.topic_config = topic_config
        #: fsync a partition before acknowledging acks=1/-1 produce requests.
        self.durable = durable
        #: The broker's clock (ms): segment rolls, retention, flush.ms, append times.
        self.clock = clock
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        #: Where a partition's directory goes; None: ``data_dir/<topic>-<partition>``
        #: (a process running several nodes puts it under its node's directory).
        self.place: Callable[[str, int], Path] | None = None
        self.producer_ids = ProducerIdAllocator(data_dir)
        self._start_offsets: dict[tuple[str, int], int] = {}
        self._overrides: dict[str, dict[str, str]] = {}
        #: Partitions on disk not opened yet -> the leader epoch they will lead in; also
        #: those of a topic being created in steps (``expect``), created when first asked.
        self._unopened: dict[tuple[str, int], int] = {}
        #: The logs of a topic deleted in steps (``detach_topic``) whose files are not
        #: gone yet: the open log, or the directory of one never opened.
        self._detached: dict[tuple[str, int], PartitionLog | Path] = {}
        #: Called with the topic when one of its logs is opened or leads in a new epoch.
        self.epoch_set: list[Callable[[str], None]] = []
        data_dir.mkdir(parents=True, exist_ok=True)
        self._lock = DirLock(data_dir)

    # --- the interface other components use ---------------------------------------------

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        """The partition's log, opened now if it is on disk but not open yet."""
        found = self.logs.get((topic, partition))
        if found is None and (topic, partition) in self._unopened:
            return self.get_or_create(topic, partition)
        return found

    def get_or_create(
        self, topic: str, partition: int, configs: dict[str, str] | None = None,
        config: LogConfig | None = None,
    ) -> PartitionLog:
        """``config``: the topic's ``config_for``, when the caller has it already."""
        key = (topic, partition)
        found = self.logs.get(key)
        if found is not None:
            return found
        if key in self._detached:
            # A deleted topic's partition not removed yet: its files go before the new log.
            self.drop_detached(key)
        if configs:
            self._overrides[topic] = dict(configs)
            config = None
        # Where before the epoch leaves ``_unopened``: with several nodes the place asks
        # the controller, whose first state of a partition starts from that epoch.
        where = self._where(topic, partition)
        announced = self._unopened.pop(key, None)
        plog = PartitionLog(
            where, topic, partition,
            config if config is not None else self.config_for(topic),
            self._start_offsets.get(key, 0), clock=self.clock,
            epoch_floor=announced or 0,
        )
        self.logs[key] = plog
        plog.on_new_epoch = self._epoch_set
        # A log opened in the epoch Metadata already announced for it changes nothing a
        # client sees, so the topic's kept Metadata entry stays.
        if plog.leader_epoch != announced:
            self._epoch_set(topic)
        return plog

    def _epoch_set(self, topic: str) -> None:
        for fn in self.epoch_set:
            fn(topic)

    def _where(self, topic: str, partition: int) -> Path:
        return (self.data_dir / f"{topic}-{partition}" if self.place is None
                else self.place(topic, partition))

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition's leader epoch, without opening its log (0 for none)."""
        plog = self.logs.get((topic, partition))
        if plog is not None:
            return plog.leader_epoch
        return self._unopened.get((topic, partition), 0)

    def known(self, topic: str, partition: int) -> bool:
        """The partition's log is open, or on disk or expected and opened when asked."""
        key = (topic, partition)
        return key in self.logs or key in self._unopened

    @property
    def unopened(self) -> int:
        return len(self._unopened)

    def open_some(self, count: int) -> int:
        """Open up to ``count`` logs not opened yet; how many are left."""
        configs: dict[str, LogConfig] = {}
        for topic, p in list(itertools.islice(self._unopened, count)):
            cfg = configs.get(topic)
            if cfg is None:
                cfg = configs[topic] = self.config_for(topic)
            self.get_or_create(topic, p, config=cfg)
        return len(self._unopened)

    def partitions(self, topic: str) -> list[PartitionLog]:
        """The topic's open logs."""
        return sorted((lg for (t, _p), lg in self.logs.items() if t == topic),
                      key=lambda lg: lg.partition)

    def __iter__(self) -> Iterator[PartitionLog]:
        """The open logs (maintenance reaches the others once the background pass or a
        request has opened them)."""
        return iter(list(self.logs.values()))

    def config_for(self, topic: str) -> LogConfig:
        extra = self._overrides.get(topic, {})

        def get(name: str) -> str:
            return extra[name] if name in extra else self.topic_config(topic, name)

        return log_config(get)

    def reconfigure(self, topic: str) -> None:
        cfg = self.config_for(topic)
        for plog in self.partitions(topic):
            plog.config = cfg

    def delete_topic(self, topic: str) -> None:
        for plog in self.partitions(topic):
            del self.logs[(topic, plog.partition)]
            self._start_offsets.pop((topic, plog.partition), None)
            plog.delete()
        for key in [k for k in self._unopened if k[0] == topic]:
            del self._unopened[key]
            self._start_offsets.pop(key, None)
            shutil.rmtree(self._where(*key), ignore_errors=True)
        self._overrides.pop(topic, None)
        log.info("log.topic_deleted", topic=topic)
        self.write_start_checkpoint()

    def expect(self, topic: str, partitions: range) -> None:
        """Partitions of a topic created or extended whose logs its creator makes one at
        a time (``get_or_create``); until then the first request that asks creates one."""
        for p in partitions:
            key = (topic, p)
            if key not in self.logs:
                self._unopened.setdefault(key, 0)

    def detach_topic(self, topic: str) -> list[tuple[str, int]]:
        """A deleted topic's logs leave at once, their files not yet: ``drop_detached``
        removes them a partition at a time (a new log of the same partition first does).
        Returns the partitions detached."""
        keys = [k for k in self.logs if k[0] == topic]
        keys += [k for k in self._unopened if k[0] == topic and k not in self.logs]
        for key in keys:
            plog = self.logs.pop(key, None)
            self._unopened.pop(key, None)
            self._start_offsets.pop(key, None)
            self._detached[key] = plog if plog is not None else self._where(*key)
        self._overrides.pop(topic, None)
        self.write_start_checkpoint()
        return keys

    def drop_detached(self, key: tuple[str, int]) -> None:
        found = self._detached.pop(key, None)
        if isinstance(found, PartitionLog):
            found.delete()
        elif found is not None:
            shutil.rmtree(found, ignore_errors=True)

    def delete_records(self, plog: PartitionLog, offset: int) -> int:
        low = plog.deletion.delete_records(offset)
        self.write_start_checkpoint()
        return low

    # --- start, stop, maintenance -------------------------------------------------------

    def load(self, topics: dict[str, int], lazy: bool = True) -> None:
        """Learn (``lazy``) or open and recover the logs of the given topics: name ->
        partition count. A partition whose next leader epoch is not known without
        opening it (no epoch checkpoint) is opened now; one with no directory is
        created when first asked for (``lazy``) or now."""
        self._lock.acquire()
        self._read_start_checkpoint()
        started = time.monotonic()
        announced = self._read_clean_shutdown()
        on_disk = self._on_disk(topics)
        for key in on_disk:
            latest = announced.get(key) if lazy else None
            if latest is None and lazy:
                latest = self._checkpointed_epoch(key)
            if latest is None:
                self.get_or_create(*key)
            else:
                self._unopened[key] = latest + 1
        for topic, n in topics.items():
            for p in range(n):
                key = (topic, p)
                if key in self._unopened or key in self.logs:
                    continue
                if lazy:
                    # Never created (its creation cut short by a stop or a crash): no
                    # files to recover, so it is created when first asked for.
                    self._unopened[key] = announced.get(key, -1) + 1
                else:
                    self.get_or_create(topic, p)
        log.info("log.loaded", opened=len(self.logs), unopened=len(self._unopened),
                 seconds=round(time.monotonic() - started, 3))

    def _on_disk(self, topics: dict[str, int]) -> list[tuple[str, int]]:
        """The partitions of ``topics`` that have a directory, in order."""
        if self.place is not None:
            # Each under its node's directory.
            return [(t, p) for t, n in sorted(topics.items()) for p in range(n)
                    if self._where(t, p).is_dir()]
        on_disk: list[tuple[str, int]] = []
        with os.scandir(self.data_dir) as it:
            for d in it:
                m = _PARTITION_DIR.match(d.name)
                if m is None or not d.is_dir():
                    continue
                topic, part = m["topic"], int(m["partition"])
                if topic not in topics:
                    log.warning("log.orphan_directory", directory=d.name)
                    continue
                on_disk.append((topic, part))
        on_disk.sort()
        return on_disk

    def _checkpointed_epoch(self, key: tuple[str, int]) -> int | None:
        cache = LeaderEpochCache(self._where(*key))
        return cache.latest_epoch if cache.load() else None

    def _read_clean_shutdown(self) -> dict[tuple[str, int], int]:
        """The epochs a clean stop left, the file removed (a crash after this start
        must not find it)."""
        path = self.data_dir / CLEAN_SHUTDOWN
        try:
            lines = path.read_text().splitlines()
        except FileNotFoundError:
            return {}
        out: dict[tuple[str, int], int] = {}
        try:
            if lines[0] != "0" or int(lines[1]) != len(lines) - 2:
                raise ValueError("bad header")
            for line in lines[2:]:
                topic, part, epoch = line.split()
                out[(topic, int(part))] = int(epoch)
        except (ValueError, IndexError):
            log.warning("log.clean_shutdown_unreadable", file=CLEAN_SHUTDOWN)
            out = {}
        path.unlink()
        fsync_dir(self.data_dir)
        return out

    def close(self) -> None:
        """Flush and close every log (the broker's stop), then leave the clean-shutdown
        file."""
        # A partition never opened keeps the epoch it was announced in, so the next start
        # announces the one after, as if it had been opened.
        epochs = dict(self._unopened)
        for key in list(self._detached):
            self.drop_detached(key)
        for key, plog in list(self.logs.items()):
            try:
                plog.flush()
            except OSError:
                log.exception("log.flush_failed", topic=plog.topic, partition=plog.partition)
            plog.close()
            epochs[key] = plog.epochs.latest_epoch
        self.write_start_checkpoint()
        rows = [f"{t} {p} {e}" for (t, p), e in sorted(epochs.items())]
        atomic_write(self.data_dir / CLEAN_SHUTDOWN,
                     ("\n".join(["0", str(len(rows)), *rows]) + "\n").encode())
        self.logs.clear()
        self._unopened.clear()
        self._lock.release()

    def expire_producers(self, now: int, expiration_ms: int) -> int:
        """Drop the state of producers idle past ``producer.id.expiration.ms`` from every
        partition (a scheduler task, every ``producer.id.expiration.check.interval.ms``)."""
        removed = 0
        for plog in list(self.logs.values()):
            removed += plog.txn.producers.remove_expired(now, expiration_ms)
        if removed:
            log.info("log.producers_expired", producers=removed)
        return removed

    def apply_retention(self) -> int:
        deleted = 0
        for plog in list(self.logs.values()):
            try:
                deleted += plog.deletion.apply_retention()
            except OSError:
                log.exception("log.retention_failed", topic=plog.topic, partition=plog.partition)
        if deleted:
            self.write_start_checkpoint()
        return deleted

    def flush_due(self, _now: int | None = None) -> int | None:
        """Flush logs whose ``flush.ms`` has passed; the ms until the next is due (None:
        no log flushes by time). A scheduler task."""
        soonest: int | None = None
        for plog in self.logs.values():
            interval = plog.config.flush_ms
            if interval >= NEVER:
                continue
            due = plog.last_flush_ms + interval - plog.clock()
            if due <= 0:
                if plog.unflushed_messages:
                    plog.flush()
                else:
                    plog.last_flush_ms = plog.clock()
                due = interval
            soonest = due if soonest is None else min(soonest, due)
        return soonest

    # --- checkpoint ---------------------------------------------------------------------

    def _read_start_checkpoint(self) -> None:
        path = self.data_dir / START_CHECKPOINT
        if not path.exists():
            return
        try:
            lines = path.read_text().splitlines()
            for line in lines[2:]:
                topic, part, off = line.split()
                self._start_offsets[(topic, int(part))] = int(off)
        except (ValueError, IndexError):
            log.warning("log.checkpoint_unreadable", file=START_CHECKPOINT)

    def write_start_checkpoint(self) -> None:
        for (t, p), plog in self.logs.items():
            self._start_offsets[(t, p)] = plog.log_start_offset
        rows = [f"{t} {p} {o}" for (t, p), o in sorted(self._start_offsets.items()) if o > 0]
        atomic_write(self.data_dir / START_CHECKPOINT,
                     ("\n".join(["0", str(len(rows)), *rows]) + "\n").encode())
