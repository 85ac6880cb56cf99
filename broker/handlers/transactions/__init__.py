"""Transactions: producer ids, the transaction APIs, TxnOffsetCommit, write verification."""
