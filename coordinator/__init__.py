"""The group coordinator and the transaction coordinator: pure cores driven by one runtime.

A classic group moves between five states along the edges of Kafka's
``validPreviousStates``, kept once, as data, in ``states.VALID_PREVIOUS_STATES`` and
checked on every transition.

The group coordinator's core (``core.GroupCoordinatorCore``) is a small object holding
parts, each owning its state and the records it writes and replays. Modules, in reading
order:
    states       the classic state table and its check
    group        GroupMetadata / MemberMetadata (Kafka's ClassicGroup)
    config       CoreConfig: the coordinator's broker properties
    results      Outcome / Write: what every core operation returns
    partitions   GroupPartitions: which __consumer_offsets partitions and groups are held,
                 lookups (the registry every part receives); the group timer keys
    rebalance    classic groups: rebalances; session, join and sync expiry
    membership   classic groups: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, replay
    offsets      committed offsets: the pure OffsetCommit/Fetch/Delete/retention logic
    committed_offsets  the committed offsets part: commit, fetch, delete, expire, replay
    group_admin  describing, listing and deleting groups
    topics_image     the broker's topics as the core sees them (TopicChange notifications)
    consumer_group   KIP-848 consumer groups: the model, changed only by replaying records
    consumer_records the records of consumer group changes (GroupCoordinatorRecordHelpers)
    assignors, topic_regex, reconciliation   the server assignors, RE2 regexes,
                 target assignment and member reconciliation
    consumer_lifecycle   consumer groups: leaving, fencing, timers, topic changes, replay
    consumer_membership  consumer groups: ConsumerGroupHeartbeat
    consumer_migration   classic-protocol members in consumer groups; conversions
    classic_requests     the classic requests for either kind of group
    consumer_admin   offsets, deletion, retention and ConsumerGroupDescribe of them
    txn_offsets  pending transactional offsets: TxnOffsetCommit, replay of its records
    scenarios    test control on classic groups
    core         GroupCoordinatorCore: the parts, the replay table, loading
    group_records  GroupMetadataValue <-> GroupMetadata
    state_topics   the internal topics, their codecs, the shape of a core
    runtime      the only driver of the cores: append, replay, answer (write/read)
    group_service  the group coordinator's work outside requests
The clock, the keyed timers and the scheduler are the ``timekeeping`` package.

The transaction coordinator (Kafka's TransactionCoordinator) is a second pure core of the
same kind, over ``__transaction_state``:
    txn_state       the transaction states, their valid previous states, TransactionMetadata
    txn_results     what its requests answer
    txn_markers     the COMMIT/ABORT marker writer it calls, and the local implementation
    txn_base        TxnStore: its partitions, lookups, write path, replay and timers
    txn_completion  EndTxn, markers, completion, timeouts, expiry, loading
    transactions    TransactionCoordinatorCore: the request methods over those two parts
"""

from .states import VALID_PREVIOUS_STATES, GroupState

__all__ = ["VALID_PREVIOUS_STATES", "GroupState"]
