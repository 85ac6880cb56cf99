"""Append-only partition logs in Kafka's segment format, the topic catalogue, broker metadata."""
