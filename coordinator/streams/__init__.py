"""KIP-1071 streams groups: the topology a Streams application sends, the broker's task
assignment and each member's reconciliation, as Kafka 4.4's group coordinator runs them."""
