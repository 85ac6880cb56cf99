"""The group coordinator and the transaction coordinator: pure cores driven by one runtime.

A classic group moves between five states along the edges of Kafka's
``validPreviousStates``, kept once, as data, in ``classic.states.VALID_PREVIOUS_STATES``
and checked on every transition.

The group coordinator's core (``core.GroupCoordinatorCore``) is a small object holding
parts, each owning its state and the records it writes and replays. The parts live in
subpackages by the kind of state they own; what every part shares stays at the top:
    config        CoreConfig: the coordinator's broker properties
    results       Outcome / Write: what every core operation returns
    partitions    GroupPartitions: which __consumer_offsets partitions and groups are held,
                  lookups (the registry every part receives); the group timer keys
    topics_image  the broker's topics as the core sees them (TopicChange notifications)
    group_admin   describing, listing and deleting groups of every kind
    scenarios     test control on classic groups
    core          GroupCoordinatorCore: the parts, the replay table, loading
    state_topics  the internal topics, their codecs, the shape of a core
    state_load    what loading a partition of an internal topic reads
    runtime       the only driver of the cores: append, replay, answer (write/read)
    group_service the group coordinator's work outside requests
    classic/      classic groups: states, model, records, rebalances, the four requests
    consumer/     KIP-848 consumer groups: model, records, assignors, reconciliation,
                  heartbeats, migration from and to classic groups, administration
    offsets/      committed offsets and pending transactional offsets
    share/        KIP-932 share groups: membership, and the share-partition state core
    txn/          the transaction coordinator (Kafka's TransactionCoordinator), a second
                  pure core of the same kind over ``__transaction_state``
The clock, the keyed timers and the scheduler are the ``timekeeping`` package.
"""

from .classic.states import VALID_PREVIOUS_STATES, GroupState

__all__ = ["VALID_PREVIOUS_STATES", "GroupState"]
