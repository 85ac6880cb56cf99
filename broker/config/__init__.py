"""Broker configuration: the properties read at start-up, Kafka's definitions of them,
and the dynamic (KIP-226) configs changed while the broker runs."""
