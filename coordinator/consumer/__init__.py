"""KIP-848 consumer groups, as Kafka 4.x's ``GroupMetadataManager`` keeps them.

    group           the group and member model, changed only by replaying records
    records         the records of consumer group changes (GroupCoordinatorRecordHelpers)
    assignors       the server assignors (uniform, range)
    topic_regex     RE2 subscriptions
    reconciliation  target assignment and member reconciliation
    lifecycle       leaving, fencing, timers, topic changes, replay
    membership      ConsumerGroupHeartbeat
    migration       classic-protocol members in consumer groups; conversions
    admin           offsets, deletion, retention and ConsumerGroupDescribe
"""
