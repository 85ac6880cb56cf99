"""The group coordinator's settings, from Kafka's broker properties of the same meaning."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

#: Kafka's ClassicGroupNewMemberJoinTimeoutMs: a new member that never rejoins goes.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

#: group.consumer.migration.policy values (Kafka's ConsumerGroupMigrationPolicy).
MIGRATION_POLICIES = ("disabled", "downgrade", "upgrade", "bidirectional")


class GroupOverrides(Protocol):
    """One group's configs (resource type GROUP) overriding the broker's settings."""

    def int_value(self, group: str, name: str) -> int | None:
        """The group's value of an INT config, within the broker's bounds; None: unset."""


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
    # --- KIP-848 consumer groups -------------------------------------------------------
    #: group.consumer.session.timeout.ms
    consumer_session_timeout_ms: int = 45000
    #: group.consumer.heartbeat.interval.ms
    consumer_heartbeat_interval_ms: int = 5000
    #: group.consumer.max.size
    consumer_max_size: int = 2147483647
    #: group.consumer.assignors (names; the first is the default)
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    #: group.consumer.migration.policy
    migration_policy: str = "bidirectional"
    #: How long after a group's last regex resolution a new one may start (Kafka's
    #: REGEX_BATCH_REFRESH_INTERVAL_MS; kafkalite's group.consumer.regex.refresh.interval.ms).
    regex_refresh_interval_ms: int = 10_000
    # --- KIP-932 share groups ------------------------------------------------------------
    #: group.share.session.timeout.ms
    share_session_timeout_ms: int = 45000
    #: group.share.heartbeat.interval.ms
    share_heartbeat_interval_ms: int = 5000
    #: group.share.max.size
    share_max_size: int = 200
    # --- KIP-1071 streams groups -------------------------------------------------------
    #: group.streams.session.timeout.ms
    streams_session_timeout_ms: int = 45000
    #: group.streams.heartbeat.interval.ms
    streams_heartbeat_interval_ms: int = 5000
    #: group.streams.max.size
    streams_max_size: int = 2147483647
    #: group.streams.initial.rebalance.delay.ms (kafkalite's default: docs/compatibility.md)
    streams_initial_rebalance_delay_ms: int = 200
    #: group.streams.num.standby.replicas
    streams_num_standby_replicas_default: int = 0
    #: group.streams.num.warmup.replicas
    streams_num_warmup_replicas_default: int = 2
    #: group.streams.acceptable.recovery.lag
    streams_acceptable_recovery_lag_default: int = 10000
    #: group.streams.task.offset.interval.ms
    streams_task_offset_interval_ms: int = 60000
    #: The group configs (consumer.session.timeout.ms, ...), where the broker has them.
    group_overrides: GroupOverrides | None = None

    def consumer_session_timeout(self, group: str) -> int:
        """consumer.session.timeout.ms of ``group``, else the broker's."""
        o = self.group_overrides
        v = o.int_value(group, "consumer.session.timeout.ms") if o is not None else None
        return self.consumer_session_timeout_ms if v is None else v

    def consumer_heartbeat_interval(self, group: str) -> int:
        """consumer.heartbeat.interval.ms of ``group``, else the broker's."""
        o = self.group_overrides
        v = o.int_value(group, "consumer.heartbeat.interval.ms") if o is not None else None
        return self.consumer_heartbeat_interval_ms if v is None else v

    def share_session_timeout(self, group: str) -> int:
        """share.session.timeout.ms of ``group``, else the broker's."""
        o = self.group_overrides
        v = o.int_value(group, "share.session.timeout.ms") if o is not None else None
        return self.share_session_timeout_ms if v is None else v

    def share_heartbeat_interval(self, group: str) -> int:
        """share.heartbeat.interval.ms of ``group``, else the broker's."""
        o = self.group_overrides
        v = o.int_value(group, "share.heartbeat.interval.ms") if o is not None else None
        return self.share_heartbeat_interval_ms if v is None else v

    def streams_session_timeout(self, group: str) -> int:
        """streams.session.timeout.ms of ``group``, else the broker's."""
        o = self.group_overrides
        v = o.int_value(group, "streams.session.timeout.ms") if o is not None else None
        return self.streams_session_timeout_ms if v is None else v

    def streams_heartbeat_interval(self, group: str) -> int:
        """streams.heartbeat.interval.ms of ``group``, else the broker's."""
        o = self.group_overrides
        v = o.int_value(group, "streams.heartbeat.interval.ms") if o is not None else None
        return self.streams_heartbeat_interval_ms if v is None else v

    def streams_initial_rebalance_delay(self, group: str) -> int:
        """streams.initial.rebalance.delay.ms of ``group``, else the broker's."""
        o = self.group_overrides
        v = (o.int_value(group, "streams.initial.rebalance.delay.ms") if o is not None
             else None)
        return self.streams_initial_rebalance_delay_ms if v is None else v

    def streams_num_standby_replicas(self, group: str) -> int:
        """streams.num.standby.replicas of ``group``, else the broker's."""
        o = self.group_overrides
        v = o.int_value(group, "streams.num.standby.replicas") if o is not None else None
        return self.streams_num_standby_replicas_default if v is None else v

    def streams_num_warmup_replicas(self, group: str) -> int:
        """streams.num.warmup.replicas of ``group``, else the broker's."""
        o = self.group_overrides
        v = o.int_value(group, "streams.num.warmup.replicas") if o is not None else None
        return self.streams_num_warmup_replicas_default if v is None else v

    def streams_acceptable_recovery_lag(self, group: str) -> int:
        """streams.acceptable.recovery.lag of ``group``, else the broker's."""
        o = self.group_overrides
        v = o.int_value(group, "streams.acceptable.recovery.lag") if o is not None else None
        return self.streams_acceptable_recovery_lag_default if v is None else v

    def streams_task_offset_interval(self, group: str) -> int:
        """streams.task.offset.interval.ms of ``group`` (within the broker's minimum), else
        the broker's."""
        o = self.group_overrides
        v = o.int_value(group, "streams.task.offset.interval.ms") if o is not None else None
        return self.streams_task_offset_interval_ms if v is None else v

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("downgrade", "bidirectional")
