"""What a partition log obeys and is connected to: its topic configs (``LogConfig``) and,
when the partition has followers, the broker's replica set (``Replicator``)."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .validation import RecordRules

NEVER = 2**63 - 1


@dataclass
class LogConfig:
    """The topic configs a log obeys (Kafka's names in comments)."""

    segment_bytes: int = 1073741824  # segment.bytes
    segment_ms: int = 604800000  # segment.ms
    retention_ms: int = 604800000  # retention.ms
    retention_bytes: int = -1  # retention.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    max_message_bytes: int = 1048588  # max.message.bytes
    log_append_time: bool = False  # message.timestamp.type=LogAppendTime
    flush_messages: int = NEVER  # flush.messages
    flush_ms: int = NEVER  # flush.ms
    cleanup_policy: str = "delete"  # cleanup.policy
    min_insync_replicas: int = 1  # min.insync.replicas
    #: What a client's batches are checked against (keys on compacted topics, timestamp
    #: bounds, the compression.type to store).
    rules: RecordRules = field(default_factory=RecordRules)

    @property
    def deletes(self) -> bool:
        return "delete" in self.cleanup_policy


class Replicator(Protocol):
    """A leader log's followers (the broker's replica set): filled after each append."""

    def __call__(self) -> None: ...

    @property
    def in_sync(self) -> int:
        """How many replicas are in sync, the leader included."""
        ...

    def acked(self, offset: int, timeout_ms: int) -> Awaitable[Any]:
        """Done when the high watermark passes ``offset`` (acks=all), or on timeout."""
        ...
