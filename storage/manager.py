"""LogManager: every partition log of the broker, their recovery, retention and flushing.

Partition directories sit directly in the data directory (``<topic>-<n>``), as in Kafka's
``log.dirs``. Log start offsets moved by DeleteRecords are kept in Kafka's
``log-start-offset-checkpoint`` file (version 0: a version line, a count line, then
``topic partition offset`` lines).
"""

from __future__ import annotations

import re
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

from .fsutil import DirLock, atomic_write
from .log import PartitionLog, now_ms
from .log_config import NEVER, LogConfig
from .producer_state import ProducerIdAllocator
from .validation import RecordRules

log = structlog.get_logger("kafkalite.storage")

_PARTITION_DIR = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>\d+)$")
START_CHECKPOINT = "log-start-offset-checkpoint"

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
        clock: Callable[[], int] = now_ms,
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
        data_dir.mkdir(parents=True, exist_ok=True)
        self._lock = DirLock(data_dir)

    # --- the interface other components use ---------------------------------------------

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get((topic, partition))

    def get_or_create(
        self, topic: str, partition: int, configs: dict[str, str] | None = None
    ) -> PartitionLog:
        key = (topic, partition)
        found = self.logs.get(key)
        if found is not None:
            return found
        if configs:
            self._overrides[topic] = dict(configs)
        where = (self.data_dir / f"{topic}-{partition}" if self.place is None
                 else self.place(topic, partition))
        plog = PartitionLog(
            where, topic, partition, self.config_for(topic),
            self._start_offsets.get(key, 0), clock=self.clock,
        )
        self.logs[key] = plog
        return plog

    def partitions(self, topic: str) -> list[PartitionLog]:
        return sorted((lg for (t, _p), lg in self.logs.items() if t == topic),
                      key=lambda lg: lg.partition)

    def __iter__(self) -> Iterator[PartitionLog]:
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
        self._overrides.pop(topic, None)
        log.info("log.topic_deleted", topic=topic)
        self.write_start_checkpoint()

    def delete_records(self, plog: PartitionLog, offset: int) -> int:
        low = plog.deletion.delete_records(offset)
        self.write_start_checkpoint()
        return low

    # --- start, stop, maintenance -------------------------------------------------------

    def load(self, topics: dict[str, int]) -> None:
        """Open (and recover) the logs of the given topics: name -> partition count."""
        self._lock.acquire()
        self._read_start_checkpoint()
        started = time.monotonic()
        for d in sorted(self.data_dir.iterdir()):
            m = _PARTITION_DIR.match(d.name)
            if not d.is_dir() or m is None:
                continue
            topic, part = m["topic"], int(m["partition"])
            if topic not in topics:
                log.warning("log.orphan_directory", directory=d.name)
                continue
            self.get_or_create(topic, part)
        for topic, n in topics.items():
            for p in range(n):
                self.get_or_create(topic, p)
        log.info("log.loaded", partitions=len(self.logs),
                 seconds=round(time.monotonic() - started, 3))

    def close(self) -> None:
        """Flush and close every log (the broker's stop)."""
        for plog in list(self.logs.values()):
            try:
                plog.flush()
            except OSError:
                log.exception("log.flush_failed", topic=plog.topic, partition=plog.partition)
            plog.close()
        self.write_start_checkpoint()
        self.logs.clear()
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
