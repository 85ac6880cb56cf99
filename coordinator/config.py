"""The group coordinator's settings, from Kafka's broker properties of the same meaning."""

from __future__ import annotations

from dataclasses import dataclass

#: Kafka's ClassicGroupNewMemberJoinTimeoutMs: a new member that never rejoins goes.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


@dataclass(slots=True)
class CoreConfig:
    #: offsets.topic.num.partitions (an existing topic's count wins).
    num_partitions: int = 8
    #: group.min.session.timeout.ms / group.max.session.timeout.ms
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    #: group.max.size
    max_size: int = 2147483647
    #: group.initial.rebalance.delay.ms (kafkalite's default: docs/compatibility.md)
    initial_rebalance_delay_ms: int = 200
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS
    #: offset.metadata.max.bytes
    max_metadata_bytes: int = 4096
    #: offsets.retention.minutes, in ms
    offsets_retention_ms: int = 7 * 86_400_000
