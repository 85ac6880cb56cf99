"""Committed offsets and pending transactional offsets (Kafka's ``OffsetMetadataManager``).

    store          the pure OffsetCommit / OffsetFetch / OffsetDelete / retention logic
    committed      the committed offsets part: commit, fetch, delete, expire, replay
    pending        what TxnOffsetCommit wrote for each producer and no marker has ended
    transactional  TxnOffsetCommit and the end of its transaction
"""
