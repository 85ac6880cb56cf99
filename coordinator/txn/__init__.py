"""The transaction coordinator (Kafka's TransactionCoordinator), a pure core over
``__transaction_state`` driven by the same runtime as the group coordinator.

    state       the transaction states, their valid previous states, TransactionMetadata
    results     what its requests answer
    markers     the COMMIT/ABORT marker writer it calls, and the local implementation
    store       TxnStore: its partitions, lookups, write path, replay and timers
    completion  EndTxn, markers, completion, timeouts, expiry, loading
    transactions  TransactionCoordinatorCore: the request methods over those two parts
"""
