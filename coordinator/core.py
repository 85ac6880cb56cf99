"""The group coordinator's pure core: one object per broker holding every group (classic,
KIP-848 consumer and KIP-932 share groups) and committed offset of the
``__consumer_offsets`` partitions it owns.

The core is small: it holds parts, each owning its state and the records it writes and
replays, as Kafka's shard holds a GroupMetadataManager and an OffsetMetadataManager:

- ``registry`` (``partitions.GroupPartitions``): the partitions held, their load status
  and the lookups every part shares; each part receives it in its constructor;
- ``classic`` (``classic.membership``, over ``classic.rebalance``): classic groups and
  their records;
- ``consumer`` (``consumer.membership``, over ``consumer.lifecycle``): KIP-848 consumer
  groups and their records;
- ``migration`` (``consumer.migration``): classic-protocol members of consumer groups,
  over ``consumer``, itself over ``consumer.conversion`` (the conversions between the
  two kinds); they are built with the first consumer group or consumer group record (a
  broker that has none does not import them);
- ``share`` (``share.membership``, over ``share.group``): KIP-932 share groups and their
  records, built with the first share group or share record (a broker that has none
  does not import their modules);
- ``streams`` (``streams.membership``, over ``streams.group``): KIP-1071 streams groups,
  built with the first streams group request;
- ``classic_requests`` (``classic.requests``): JoinGroup, SyncGroup, Heartbeat and
  LeaveGroup for a group id, whichever kind of group holds it;
- ``committed_offsets`` (``offsets.committed``): committed offsets and their records;
- ``admin`` (``group_admin``): describing, listing and deleting groups;
- ``txn_offsets`` (``offsets.transactional``): transactional offsets pending until
  their transaction's marker;
- ``scenarios``: test control on classic groups.

Every operation takes ``now`` (ms) and returns an ``Outcome`` (records to write, the
response, replies for parked requests; see ``results``). The core exposes each part's
operations as its own attributes (bound methods: no extra call on the hot paths). Nothing
here reads a clock, touches a file or awaits: the runtime (``runtime.CoordinatorRuntime``)
appends the records, replays them into this core with ``replay_all``, which hands each
record to its owner through a table, and only then answers. Replay is also how a partition
is loaded, so live writes and recovery are one path. The exceptions, where state changes
before the append as in Kafka, are documented in ``classic.membership`` (classic group
membership), ``offsets.committed`` (a commit re-arms its member's session timer) and
``consumer.conversion`` (a classic group's parked requests answered when it is converted,
and the rebalance a downgraded group starts).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from kafkalite.protocol.consumer_offsets import (
    GroupMetadataKey,
    OffsetCommitKey,
    RecordKey,
    RecordValue,
)
from kafkalite.protocol.errors import ErrorCode
from kafkalite.timekeeping.timers import Timers

from .classic.membership import Membership
from .classic.rebalance import log
from .classic.requests import ClassicRequests
from .config import CoreConfig
from .group_admin import GroupAdmin
from .offsets.committed import CommittedOffsets
from .offsets.pending import PendingTxnOffsets
from .offsets.store import OffsetStore
from .offsets.transactional import TxnOffsetCommits
from .partitions import (
    HEARTBEAT_TIMER,
    JOIN_TIMER,
    MEMBER_JOIN_TIMER,
    MEMBER_SYNC_TIMER,
    REBALANCE_TIMER,
    SESSION_TIMER,
    SHARE_SESSION_TIMER,
    STREAMS_INITIAL_REBALANCE_TIMER,
    STREAMS_REBALANCE_TIMER,
    STREAMS_SESSION_TIMER,
    SYNC_TIMER,
    GroupPartitions,
    PartitionState,
)
from .results import Outcome
from .scenarios import Scenarios
from .state_topics import TimerHandler

if TYPE_CHECKING:
    from .consumer.lifecycle import ConsumerHeartbeatRequest
    from .consumer.membership import ConsumerMembership
    from .consumer.migration import ConsumerMigration
    from .results import ConsumerHeartbeatResult
    from .share.group import ShareHeartbeat
    from .share.membership import ShareGroupDescription, ShareMembership
    from .streams.group import StreamsHeartbeat
    from .streams.membership import StreamsGroupDescription, StreamsMembership
    from .topics_image import TopicChange

#: A part's replay of one record type: (partition state, key, value or None).
Replayer = Callable[[PartitionState, Any, Any], None]


class GroupCoordinatorCore:
    def __init__(self, config: CoreConfig, timers: Timers | None = None,
                 new_id: Callable[[], str] | None = None) -> None:
        registry = self.registry = GroupPartitions(config, timers, new_id)
        self.config = config
        self.timers = registry.timers
        self.partitions = registry.partitions
        self.topics = registry.topics
        #: Committed offsets of every group held here (changed only by replay).
        self.offsets = OffsetStore(config.max_metadata_bytes, config.offsets_retention_ms)
        #: Transactional offsets waiting for their transaction's marker (replay only).
        self.pending = PendingTxnOffsets()

        # --- the parts ---------------------------------------------------------------
        self.classic = Membership(registry)
        self._consumer: ConsumerMembership | None = None
        self._migration: ConsumerMigration | None = None
        self._share: ShareMembership | None = None
        self._streams: StreamsMembership | None = None
        #: Told (group, member) when a share group member's session expires (the share
        #: part's ``member_expired``, kept here so that it can be registered at build).
        self.share_member_expired: list[Callable[[str, str], None]] = []
        self.classic_requests = ClassicRequests(registry, self.classic, lambda: self.migration)
        self.committed_offsets = CommittedOffsets(registry, self.offsets, self.pending)
        self.admin = GroupAdmin(registry, self.committed_offsets)
        self.txn_offsets = TxnOffsetCommits(registry, self.offsets, self.pending)
        self.scenarios = Scenarios(registry, self.classic)

        #: Each record type's owner (Kafka's ``GroupCoordinatorShard.replay``).
        self._replayers: dict[type, Replayer] = {
            OffsetCommitKey: self.committed_offsets.replay,
            GroupMetadataKey: self.classic.replay,
        }

        # --- the operations, as the parts serve them ----------------------------------
        self.partition_for = registry.partition_for
        self.group = registry.group
        self.groups = registry.groups
        self.consumer_group = registry.consumer_group
        self.consumer_groups = registry.consumer_groups
        self.share_group = registry.share_group
        self.share_groups = registry.share_groups
        self.streams_group = registry.streams_group
        self.streams_groups = registry.streams_groups
        self.group_status = registry.group_status
        self.group_partition = registry.group_partition
        self.partition_status = registry.partition_status
        self.join = self.classic_requests.join
        self.sync = self.classic_requests.sync
        self.heartbeat = self.classic_requests.heartbeat
        self.leave = self.classic_requests.leave
        self.commit_offsets = self.committed_offsets.commit_offsets
        self.fetch_offsets = self.committed_offsets.fetch_offsets
        self.fetch_committed = self.committed_offsets.fetch_committed
        self.delete_offsets = self.committed_offsets.delete_offsets
        self.delete_group = self.admin.delete_group
        self.expire_offsets = self.committed_offsets.expire_offsets
        self.describe_group = self.admin.describe_group
        self.list_groups = self.admin.list_groups
        self.describe_consumer_groups = self.admin.describe_consumer_groups
        self.overview = self.admin.overview
        self.session_deadlines = self.admin.session_deadlines
        self.streams_session_deadlines = self.admin.streams_session_deadlines
        self.committed = self.committed_offsets.committed
        self.commit_txn_offsets = self.txn_offsets.commit_txn_offsets
        self.replay_transactional = self.txn_offsets.replay_transactional
        self.replay_end_marker = self.txn_offsets.replay_end_marker
        self.force_rebalance = self.scenarios.force_rebalance
        self.expire_member = self.scenarios.expire_member
        self.evict_member = self.scenarios.evict_member
        self.fence_static_member = self.scenarios.fence_static_member

    @property
    def consumer(self) -> ConsumerMembership:
        """KIP-848 consumer groups' part, built on first use with ``migration``; the owner
        of their records from then on."""
        if self._consumer is None:
            self._build_consumer()
        assert self._consumer is not None
        return self._consumer

    @property
    def migration(self) -> ConsumerMigration:
        if self._migration is None:
            self._build_consumer()
        assert self._migration is not None
        return self._migration

    def _build_consumer(self) -> None:
        from kafkalite.protocol import consumer_group_records as cg

        from .consumer.conversion import GroupConversions
        from .consumer.membership import ConsumerMembership
        from .consumer.migration import ConsumerMigration

        # One way: conversions <- consumer (lifecycle, membership) <- migration.
        conversions = GroupConversions(self.registry, self.classic)
        consumer = self._consumer = ConsumerMembership(self.registry, conversions)
        self._migration = ConsumerMigration(self.registry, consumer)
        self._replayers.update(dict.fromkeys(cg.KEY_CLASSES, consumer.replay))

    def consumer_group_heartbeat(self, now: int, req: ConsumerHeartbeatRequest) -> Outcome:
        if self.registry.streams_group(req.group_id) is not None:
            from .results import ConsumerHeartbeatResult

            return Outcome(ConsumerHeartbeatResult(
                ErrorCode.group_id_not_found,
                f"Group {req.group_id} is not a consumer group."))
        return self.consumer.consumer_group_heartbeat(now, req)

    def steady_heartbeat(self, now: int, req: ConsumerHeartbeatRequest
                         ) -> ConsumerHeartbeatResult | None:
        return self.consumer.steady_heartbeat(now, req)

    def set_topics(self, changes: Sequence[TopicChange], now: int) -> None:
        """The topics at start-up (before any partition is loaded)."""
        self.topics.load(changes, now)

    def on_topic_change(self, change: TopicChange, now: int) -> Outcome:
        """A topic was created, grew or was deleted: consumer groups follow it."""
        if self._consumer is not None:
            return self._consumer.on_topic_change(change, now)
        if self.topics.apply(change, now):  # no consumer group to tell
            log.info("consumer_group.topics_changed", topic=change.name,
                     change=change.event.value, partitions=change.partitions,
                     version=self.topics.version)
        return Outcome(None)

    @property
    def share(self) -> ShareMembership:
        """The share groups' part, built on first use; its records' owner from then on."""
        if self._share is None:
            from kafkalite.protocol import share_group_records as sg

            from .share.membership import ShareMembership

            self._share = ShareMembership(self.registry)
            self._share.member_expired = self.share_member_expired
            self._replayers.update(dict.fromkeys(sg.KEY_CLASSES, self._share.replay))
        return self._share

    def share_group_heartbeat(self, now: int, req: ShareHeartbeat) -> Outcome:
        return self.share.share_group_heartbeat(now, req)

    def describe_share_groups(self, group_ids: Sequence[str]) -> list[ShareGroupDescription]:
        return self.share.describe_share_groups(group_ids)

    def _on_share_session_timer(self, key: tuple[Hashable, ...], deadline: int, now: int
                                ) -> Outcome:
        return self.share.on_session_timer(key, deadline, now)

    @property
    def streams(self) -> StreamsMembership:
        """The streams groups' part, built on first use."""
        if self._streams is None:
            from kafkalite.protocol import streams_group_records as st

            from .streams.membership import StreamsMembership

            self._streams = StreamsMembership(self.registry)
            self._replayers.update(dict.fromkeys(st.KEY_CLASSES, self._streams.replay))
        return self._streams

    def streams_group_heartbeat(self, now: int, req: StreamsHeartbeat) -> Outcome:
        return self.streams.streams_group_heartbeat(now, req)

    def describe_streams_groups(self, group_ids: Sequence[str]
                                ) -> list[StreamsGroupDescription]:
        return self.streams.describe_streams_groups(group_ids)

    def _replayer(self, key_type: type) -> Replayer:
        """The owner of a record type not seen yet: consumer, share and streams group
        records build their part."""
        replayer = self._replayers.get(key_type)
        if replayer is None:
            from kafkalite.protocol import consumer_group_records as cg
            from kafkalite.protocol import streams_group_records as st

            if key_type in cg.KEY_CLASSES:
                _ = self.consumer
            elif key_type in st.KEY_CLASSES:
                _ = self.streams
            else:
                _ = self.share
            replayer = self._replayers[key_type]
        return replayer

    def timer_handlers(self) -> dict[str, TimerHandler]:
        """Each timer kind's handler: a classic group's deadlines (``classic.rebalance``), a
        consumer group's (``consumer.lifecycle``) and a share group member's session."""
        classic = self.classic
        # A consumer group's timers exist only once its part is built.
        return {
            HEARTBEAT_TIMER: classic.on_heartbeat_timer,
            JOIN_TIMER: classic.on_join_timer,
            SYNC_TIMER: classic.on_sync_timer,
            SESSION_TIMER: lambda k, d, now: self.consumer.on_session_timer(k, d, now),
            REBALANCE_TIMER: lambda k, d, now: self.consumer.on_rebalance_timer(k, d, now),
            MEMBER_JOIN_TIMER: lambda k, d, now: self.consumer.on_member_join_timer(k, d, now),
            MEMBER_SYNC_TIMER: lambda k, d, now: self.consumer.on_member_sync_timer(k, d, now),
            SHARE_SESSION_TIMER: self._on_share_session_timer,
            STREAMS_SESSION_TIMER: lambda k, d, now: self.streams.on_session_timer(k, d, now),
            STREAMS_REBALANCE_TIMER:
                lambda k, d, now: self.streams.on_rebalance_timer(k, d, now),
            STREAMS_INITIAL_REBALANCE_TIMER:
                lambda k, d, now: self.streams.on_initial_rebalance_timer(k, d, now),
        }

    # --- replay and loading ------------------------------------------------------------

    def begin_load(self, partition: int) -> PartitionState:
        self.pending.drop_partition(partition)
        ps = self.partitions[partition] = PartitionState(partition, loading=True)
        return ps

    def replay_all(self, partition: int,
                   records: Sequence[tuple[RecordKey, RecordValue | None]]) -> None:
        """Hand each record to its owner, in order. A commit's offsets of a known group,
        the bulk of every log, are applied in this loop."""
        ps = self.partitions.get(partition)
        if ps is None:
            return
        apply = self.offsets.apply
        groups = ps.groups
        open_txns = self.pending.open_by_group
        replayers = self._replayers
        for key, value in records:
            if type(key) is OffsetCommitKey and (value is None or key.group in groups):
                apply(key, value)  # type: ignore[arg-type]
                if open_txns and key.group in open_txns:
                    self.pending.committed(partition, key, value)  # type: ignore[arg-type]
            else:
                replayer = replayers.get(type(key)) or self._replayer(type(key))
                replayer(ps, key, value)

    def replay(self, partition: int, key: RecordKey, value: RecordValue | None) -> None:
        """Apply one ``__consumer_offsets`` record: the only way persisted state changes."""
        ps = self.partitions.get(partition)
        if ps is not None:
            self._replayer(type(key))(ps, key, value)

    def finish_load(self, partition: int, now: int) -> None:
        ps = self.partitions[partition]
        ps.loading = False
        self.classic.schedule_loaded(ps, now)
        if ps.consumer_groups:
            self.consumer.schedule_loaded_consumer_groups(ps, now)
        if ps.share_groups:
            self.share.schedule_loaded(ps, now)
        if ps.streams_groups:
            self.streams.schedule_loaded(ps, now)
        log.info("partition.loaded", partition=partition, groups=len(ps.groups),
                 consumer_groups=len(ps.consumer_groups), share_groups=len(ps.share_groups),
                 streams_groups=len(ps.streams_groups))

    def unload(self, partition: int) -> Outcome:
        """Give up a partition (the broker stops, or it moves away): its parked JoinGroup
        and SyncGroup requests are answered NOT_COORDINATOR, as Kafka does."""
        out = Outcome(None)
        ps = self.partitions.pop(partition, None)
        if ps is None:
            return out
        if ps.consumer_groups:
            self.consumer.unload_consumer_groups(ps)
        if ps.share_groups:
            self.share.unload(ps)
        if ps.streams_groups:
            self.streams.unload(ps)
        self.classic.unload(ps, out)
        self.committed_offsets.unload(ps)
        self.pending.drop_partition(partition)
        return out
