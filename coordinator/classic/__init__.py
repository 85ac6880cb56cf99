"""Classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), as Kafka's ClassicGroup.

    states      the classic state table and its check
    group       GroupMetadata / ClassicGroupMember
    records     GroupMetadataValue <-> GroupMetadata
    rebalance   rebalances; session, join and sync expiry
    membership  the four requests on a classic group, and the replay of its records
    requests    the classic requests for either kind of group (a consumer group may hold
                classic-protocol members)
"""
