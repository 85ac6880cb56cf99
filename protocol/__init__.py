"""Kafka wire protocol: framing, headers, message codecs, record batches, error codes."""
