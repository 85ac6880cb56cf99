"""Broker-side schema validation, as Confluent Server offers it: on a topic with
``confluent.value.schema.validation`` (or ``confluent.key.schema.validation``) true, each
record's value (key) must start with the magic byte 0 and the id of a schema registered
under the topic's subject, or the batch is refused with INVALID_RECORD naming each bad
record (KIP-467's record errors, as the log's own checks refuse a batch)."""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import ProtocolError
from kafkalite.protocol.records import decode_batch
from kafkalite.storage.errors import CorruptRecordError, RecordValidationError

from .store import RegistryState

VALUE_VALIDATION = "confluent.value.schema.validation"
KEY_VALIDATION = "confluent.key.schema.validation"
VALUE_STRATEGY = "confluent.value.subject.name.strategy"
KEY_STRATEGY = "confluent.key.subject.name.strategy"
TOPIC_NAME = "io.confluent.kafka.serializers.subject.TopicNameStrategy"
RECORD_NAME = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
TOPIC_RECORD_NAME = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
STRATEGIES = (TOPIC_NAME, RECORD_NAME, TOPIC_RECORD_NAME)


class SchemaCheck:
    """Called by the produce path before a client's batch is appended."""

    def __init__(self, state: RegistryState, topic_configs: Any,
                 counts: Any = None) -> None:
        self.state = state
        self.topic_configs = topic_configs
        self.counts = counts

    def _enabled(self, topic: str, name: str) -> bool:
        return bool(self.topic_configs.value(topic, name).strip().lower() == "true")

    def __call__(self, topic: str, records: bytes | bytearray | memoryview) -> None:
        check_value = self._enabled(topic, VALUE_VALIDATION)
        check_key = self._enabled(topic, KEY_VALIDATION)
        if not (check_value or check_key):
            return
        try:
            h, recs = decode_batch(records, 0)
        except ProtocolError as e:
            raise CorruptRecordError(str(e)) from e
        if h.is_control:
            return
        errors: list[tuple[int, str]] = []
        for i, rec in enumerate(recs):
            problem = None
            if check_key:
                problem = self._problem(topic, "key", rec.key,
                                        self.topic_configs.value(topic, KEY_STRATEGY))
            if problem is None and check_value:
                problem = self._problem(topic, "value", rec.value,
                                        self.topic_configs.value(topic, VALUE_STRATEGY))
            if problem is not None:
                errors.append((i, f"Log record DefaultRecord(offset={rec.offset - h.base_offset}, "
                                  f"timestamp={rec.timestamp}) {problem}"))
        if not errors:
            return
        if self.counts is not None:
            self.counts["records_refused"] += len(errors)
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
        raise RecordValidationError(
            f"One or more records have been rejected due to {len(errors)} record errors in "
            f"total, and only showing the first three errors at most: [{shown}]", errors, False)

    def _problem(self, topic: str, part: str, data: bytes | None, strategy: str) -> str | None:
        """Why ``data`` fails validation, or None."""
        if data is None:
            return None  # a null key or value (a tombstone) carries no schema
        if len(data) < 5 or data[0] != 0:
            return (f"is rejected by the topic {part} schema validation: the {part} has no "
                    "magic byte and schema id")
        schema_id = int.from_bytes(data[1:5], "big")
        subject = f"{topic}-{part}"
        rows = list(self.state.usage(schema_id))
        strategy = strategy.strip()
        if strategy == TOPIC_NAME or strategy == "TopicNameStrategy":
            ok = any(r.subject == subject for r in rows)
        elif strategy in (TOPIC_RECORD_NAME, "TopicRecordNameStrategy"):
            ok = any(r.subject.startswith(f"{topic}-") for r in rows)
        else:
            ok = bool(rows)
        if ok:
            return None
        return (f"is rejected by the topic {part} schema validation: schema id {schema_id} "
                f"is not registered under subject {subject} ({strategy.rsplit('.', 1)[-1]})")
