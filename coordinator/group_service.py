"""The group coordinator's work that no request starts (Kafka's GroupCoordinatorService
around its shards): a transaction's marker on ``__consumer_offsets``, offset retention,
and the topic catalogue's changes. Each goes through the runtime like a request."""

from __future__ import annotations

from collections.abc import Callable

from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import OFFSETS_TOPIC

from .core import GroupCoordinatorCore
from .runtime import CoordinatorRuntime
from .topics_image import TopicChange


class GroupService:
    def __init__(self, runtime: CoordinatorRuntime, core: GroupCoordinatorCore,
                 retention_check_interval_ms: int | Callable[[], int] = 600_000) -> None:
        self.runtime = runtime
        #: The group coordinator core, for what only reads it (the admin views, tests).
        self.core = core
        # offsets.retention.check.interval.ms: a pass of offset expiration.
        runtime.scheduler.every("offsets-retention", retention_check_interval_ms,
                                self._expire_offsets)

    def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                             coordinator_epoch: int, commit: bool) -> ErrorCode:
        """The group coordinator's half of a transaction's marker (Kafka's
        ``GroupCoordinatorService.completeTransaction``, called by the transaction
        coordinator's marker writer): append the COMMIT or ABORT marker to the
        ``__consumer_offsets`` partition, then replay it, which makes the producer's
        pending offsets there committed or drops them. A partition not loaded here answers
        NOT_LEADER_OR_FOLLOWER, the retriable error Kafka translates those to."""
        core = self.core
        if core.partition_status(partition) is not NO_ERROR:
            return ErrorCode.not_leader_or_follower
        err = self.runtime.append_marker(OFFSETS_TOPIC, partition, producer_id,
                                         producer_epoch, coordinator_epoch, commit)
        if err is NO_ERROR:
            core.replay_end_marker(partition, producer_id, commit)
        return err

    def on_topic_change(self, change: TopicChange) -> None:
        """A topic catalogue event (wired by the composition root): the group core learns
        of created, grown and deleted topics (consumer groups' metadata and regexes)."""
        if not self.runtime.stopped:
            self.runtime.groups.write(lambda g, now: g.on_topic_change(change, now))

    def _expire_offsets(self, now: int) -> None:
        # The pass runs at the scheduler's time for it, as the task was called.
        if not self.runtime.stopped:
            self.runtime.groups.write(lambda g, _now: g.expire_offsets(now))
