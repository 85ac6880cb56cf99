"""Which groups this coordinator holds: the state of each ``__consumer_offsets`` partition
and the lookups every request starts with. One ``GroupPartitions`` is shared by the parts
of the group coordinator (``core``), each of which receives it in its constructor."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafkalite.protocol.consumer_offsets import group_partition
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.timekeeping.timers import Timers

from .classic.group import GroupMetadata
from .config import CoreConfig
from .topics_image import TopicsImage

if TYPE_CHECKING:
    from .consumer.group import ConsumerGroup
    from .share.group import ShareGroup
    from .streams.group import StreamsGroup


@dataclass(slots=True)
class PartitionState:
    partition: int
    #: While its records are replayed, the partition's groups answer LOAD_IN_PROGRESS.
    loading: bool = True
    #: Classic groups. A group id names one group of one kind (Kafka's one ``groups``
    #: map): it is never in two of these dicts.
    groups: dict[str, GroupMetadata] = field(default_factory=dict)
    #: KIP-848 consumer groups.
    consumer_groups: dict[str, ConsumerGroup] = field(default_factory=dict)
    #: KIP-932 share groups.
    share_groups: dict[str, ShareGroup] = field(default_factory=dict)
    #: KIP-1071 streams groups.
    streams_groups: dict[str, StreamsGroup] = field(default_factory=dict)

    def kind_of(self, group_id: str) -> str | None:
        """Which kind of group holds ``group_id`` here: "classic", "consumer", "share",
        "streams"."""
        if group_id in self.groups:
            return "classic"
        if group_id in self.consumer_groups:
            return "consumer"
        if group_id in self.share_groups:
            return "share"
        if group_id in self.streams_groups:
            return "streams"
        return None


#: The group coordinator's timer kinds: a key's first element. Keys are built only by the
#: helpers below; the core's ``timer_handlers`` table gives each kind its handler.
HEARTBEAT_TIMER = "heartbeat"
JOIN_TIMER = "join"
SYNC_TIMER = "sync"
SESSION_TIMER = "consumer-session"
REBALANCE_TIMER = "consumer-rebalance"
MEMBER_JOIN_TIMER = "consumer-join"
MEMBER_SYNC_TIMER = "consumer-sync"
SHARE_SESSION_TIMER = "share-session"
STREAMS_SESSION_TIMER = "streams-session"
STREAMS_REBALANCE_TIMER = "streams-rebalance"
STREAMS_INITIAL_REBALANCE_TIMER = "streams-initial-rebalance"


def hb_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A member's session deadline (and, before its first join completes, the new-member
    join timeout) in the timers."""
    return (HEARTBEAT_TIMER, group_id, member_id)


def join_key(group_id: str) -> tuple[str, str]:
    return (JOIN_TIMER, group_id)


def sync_key(group_id: str) -> tuple[str, str]:
    return (SYNC_TIMER, group_id)


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A consumer group member's session deadline (Kafka's ``session-timeout-G-M``)."""
    return (SESSION_TIMER, group_id, member_id)


def rebalance_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """The deadline of a consumer group member revoking partitions (``rebalance-timeout``)."""
    return (REBALANCE_TIMER, group_id, member_id)


def member_join_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A classic-protocol member of a consumer group asked to rejoin (``join-G-M``)."""
    return (MEMBER_JOIN_TIMER, group_id, member_id)


def member_sync_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A classic-protocol member of a consumer group that must send SyncGroup."""
    return (MEMBER_SYNC_TIMER, group_id, member_id)


def share_session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A share group member's session deadline."""
    return (SHARE_SESSION_TIMER, group_id, member_id)


def streams_session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A streams group member's session deadline."""
    return (STREAMS_SESSION_TIMER, group_id, member_id)


def streams_rebalance_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """The deadline of a streams group member revoking tasks."""
    return (STREAMS_REBALANCE_TIMER, group_id, member_id)


def streams_initial_rebalance_key(group_id: str) -> tuple[str, str]:
    """The end of a streams group's initial rebalance delay."""
    return (STREAMS_INITIAL_REBALANCE_TIMER, group_id)


class GroupPartitions:
    """The partitions held here, their load status and the lookups every part shares."""

    def __init__(
        self,
        config: CoreConfig,
        timers: Timers | None = None,
        new_id: Callable[[], str] | None = None,
    ) -> None:
        self.config = config
        self.timers = Timers() if timers is None else timers
        self.partitions: dict[int, PartitionState] = {}
        #: A new member id (a UUID; tests give their own).
        self.new_id: Callable[[], str] = new_id or (lambda: str(uuid.uuid4()))
        #: group id -> its partition, cached (the hot paths read it directly).
        self.partition_of: dict[str, int] = {}
        #: The broker's topics (kept current by ``on_topic_change``).
        self.topics = TopicsImage()

    def partition_for(self, group_id: str) -> int:
        p = self.partition_of.get(group_id)
        if p is None:
            p = self.partition_of[group_id] = group_partition(group_id, self.config.num_partitions)
        return p

    def group(self, group_id: str) -> GroupMetadata | None:
        ps = self.partitions.get(self.partition_for(group_id))
        return None if ps is None else ps.groups.get(group_id)

    def groups(self) -> list[GroupMetadata]:
        return [g for ps in self.partitions.values() for g in ps.groups.values()]

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        ps = self.partitions.get(self.partition_for(group_id))
        return None if ps is None else ps.consumer_groups.get(group_id)

    def consumer_groups(self) -> list[ConsumerGroup]:
        return [g for ps in self.partitions.values() for g in ps.consumer_groups.values()]

    def share_group(self, group_id: str) -> ShareGroup | None:
        ps = self.partitions.get(self.partition_for(group_id))
        return None if ps is None else ps.share_groups.get(group_id)

    def share_groups(self) -> list[ShareGroup]:
        return [g for ps in self.partitions.values() for g in ps.share_groups.values()]

    def streams_group(self, group_id: str) -> StreamsGroup | None:
        ps = self.partitions.get(self.partition_for(group_id))
        return None if ps is None else ps.streams_groups.get(group_id)

    def streams_groups(self) -> list[StreamsGroup]:
        return [g for ps in self.partitions.values() for g in ps.streams_groups.values()]

    def group_status(self, group_id: str) -> ErrorCode:
        """Kafka's validateGroupStatus: group id, ownership and loading."""
        return self.group_partition(group_id)[0]

    def group_partition(self, group_id: str) -> tuple[ErrorCode, PartitionState | None]:
        """``group_status`` and the state of the group's partition (None unless the status
        is none): one lookup for the status and the group maps, as a commit needs."""
        if not group_id:
            return ErrorCode.invalid_group_id, None
        ps = self.partitions.get(self.partition_for(group_id))
        if ps is not None and not ps.loading:
            return NO_ERROR, ps
        return _status(ps), None

    def partition_status(self, partition: int) -> ErrorCode:
        return _status(self.partitions.get(partition))


def _status(ps: PartitionState | None) -> ErrorCode:
    """Whether this coordinator serves a partition's groups now."""
    if ps is None:
        return ErrorCode.not_coordinator
    if ps.loading:
        return ErrorCode.coordinator_load_in_progress
    return NO_ERROR
