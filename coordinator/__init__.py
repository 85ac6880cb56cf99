"""The group coordinator.

A classic group moves between five states, and only along these edges (Kafka's
``validPreviousStates``, kept as data in ``states.VALID_PREVIOUS_STATES`` and checked on
every transition):

    state                 entered from
    Empty                 PreparingRebalance   (a rebalance ends with no members)
    PreparingRebalance    Empty, Stable, CompletingRebalance   (a member joins, leaves,
                                                                changes or expires)
    CompletingRebalance   PreparingRebalance   (every member joined: the leader assigns)
    Stable                CompletingRebalance  (the leader's assignment is stored)
    Dead                  any state            (the group's tombstone is replayed)

Modules, in reading order:
    states       the state table above and its check
    group        GroupMetadata / MemberMetadata (Kafka's ClassicGroup)
    config       CoreConfig: the coordinator's broker properties
    results      Outcome / Write: what every core operation returns
    partitions   which __consumer_offsets partitions and groups are held; lookups
    rebalance    starting and completing rebalances; session, join and sync expiry
    membership   JoinGroup, SyncGroup, Heartbeat, LeaveGroup
    offsets      committed offsets: the pure OffsetCommit/Fetch/Delete/retention logic
    group_admin  offsets and group administration on the core
    topics_image     the broker's topics as the core sees them (TopicChange notifications)
    consumer_group   KIP-848 consumer groups: the model, changed only by replaying records
    consumer_records the records of consumer group changes (GroupCoordinatorRecordHelpers)
    assignors, topic_regex, reconciliation   the server assignors, RE2 regexes,
                 target assignment and member reconciliation
    consumer_lifecycle   leaving, fencing, session/rebalance timers, topic changes
    consumer_membership  ConsumerGroupHeartbeat: join, heartbeat, epochs, reconciliation
    consumer_migration   classic-protocol members in consumer groups; conversions
    consumer_admin   offsets, deletion, retention and ConsumerGroupDescribe of them
    core         GroupCoordinatorCore: all of the above, plus replay and loading
    group_records  GroupMetadataValue <-> GroupMetadata
    timers       keyed deadlines in a heap (the purgatory)
    clock        the broker's one clock (system or manual)
    scheduler    every deadline of the broker on that clock, on the event loop
    runtime      the only driver of the core: append, replay, answer
    memlog       in-memory partition logs for tests

The transaction coordinator (Kafka's TransactionCoordinator) is a second pure core of the
same shape, over ``__transaction_state``:
    txn_state       the transaction states, their valid previous states, TransactionMetadata
    txn_results     what its requests answer
    txn_markers     the COMMIT/ABORT marker writer it calls, and the local implementation
    txn_base        its partitions, lookups, write path, replay and timers
    txn_completion  EndTxn, markers, completion, timeouts, expiry, loading
    transactions    TransactionCoordinatorCore: the request methods
"""

from .states import VALID_PREVIOUS_STATES, GroupState

__all__ = ["VALID_PREVIOUS_STATES", "GroupState"]
