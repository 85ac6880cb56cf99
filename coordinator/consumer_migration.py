"""Classic-protocol members in consumer groups, and the conversions between classic and
consumer groups (Kafka 4.0's ``group.consumer.migration.policy``)."""

from __future__ import annotations

from .consumer_membership import ConsumerMembership


class ConsumerMigration(ConsumerMembership):
    pass
