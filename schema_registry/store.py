"""The registry's state, rebuilt from and written to the compacted ``_schemas`` topic with
Confluent's key and value JSON (``KafkaStore``'s SCHEMA, CONFIG, MODE, DELETE_SUBJECT,
CLEAR_SUBJECT and NOOP keys), so the topic is readable by Confluent's registry or Karapace.

Every change is appended to the broker's own log and applied here before the REST call
answers; at start-up the topic is replayed from its first offset."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import structlog

from kafkalite.protocol.records import NewRecord, build_batch, iter_records

log = structlog.get_logger("kafkalite.schema_registry")

TOPIC = "_schemas"
Json = dict[str, Any]


@dataclass(slots=True)
class SchemaRow:
    """One schema by its global id: the canonical text, type and references."""

    id: int
    type: str
    schema: str
    references: list[Json] = field(default_factory=list)


@dataclass(slots=True)
class VersionRow:
    subject: str
    version: int
    id: int
    deleted: bool = False


def schema_key(subject: str, version: int) -> Json:
    return {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}


def config_key(subject: str | None) -> Json:
    return {"keytype": "CONFIG", "subject": subject, "magic": 0}


def mode_key(subject: str | None) -> Json:
    return {"keytype": "MODE", "subject": subject, "magic": 0}


def delete_subject_key(subject: str) -> Json:
    return {"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0}


def identity(schema_type: str, schema: str, references: list[Json]) -> tuple[str, str, str]:
    """What makes two registrations the same schema (and so the same id)."""
    return schema_type, schema, json.dumps(references, sort_keys=True)


class RegistryState:
    """Subjects, versions, schemas by id, configs and modes, as the topic says."""

    def __init__(self) -> None:
        self.schemas: dict[int, SchemaRow] = {}
        self.ids: dict[tuple[str, str, str], int] = {}
        self.subjects: dict[str, dict[int, VersionRow]] = {}
        #: Compatibility configs by subject; None is the global one.
        self.configs: dict[str | None, Json] = {}
        self.modes: dict[str | None, str] = {}
        self.max_id = 0

    # --- reads ----------------------------------------------------------------------

    def versions(self, subject: str, deleted: bool = False) -> list[VersionRow]:
        rows = self.subjects.get(subject, {})
        return [rows[v] for v in sorted(rows) if deleted or not rows[v].deleted]

    def live_subjects(self, deleted: bool = False) -> list[str]:
        return sorted(s for s in self.subjects if self.versions(s, deleted))

    def usage(self, schema_id: int, deleted: bool = False) -> Iterator[VersionRow]:
        for rows in self.subjects.values():
            for row in rows.values():
                if row.id == schema_id and (deleted or not row.deleted):
                    yield row

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of live schemas whose references name this subject and version."""
        found = set()
        for rows in self.subjects.values():
            for row in rows.values():
                if row.deleted:
                    continue
                for ref in self.schemas[row.id].references:
                    if ref.get("subject") == subject and ref.get("version") == version:
                        found.add(row.id)
        return sorted(found)

    # --- the topic's records ----------------------------------------------------------

    def apply(self, key: Json, value: Json | None) -> None:
        kind = key.get("keytype")
        subject = key.get("subject")
        if kind == "SCHEMA":
            self._apply_schema(str(subject), int(key.get("version", 0)), value)
        elif kind == "CONFIG":
            if value is None:
                self.configs.pop(subject, None)
            else:
                self.configs[subject] = value
        elif kind == "MODE":
            if value is None:
                self.modes.pop(subject, None)
            else:
                self.modes[subject] = str(value.get("mode", "READWRITE"))
        elif kind == "DELETE_SUBJECT" and value is not None:
            upto = int(value.get("version", 2**31))
            for row in self.subjects.get(str(subject), {}).values():
                if row.version <= upto:
                    row.deleted = True
        elif kind == "CLEAR_SUBJECT" and value is not None:
            rows = self.subjects.get(str(subject), {})
            for v in [v for v, row in rows.items() if row.deleted]:
                del rows[v]
        # NOOP and unknown key types carry no state.

    def _apply_schema(self, subject: str, version: int, value: Json | None) -> None:
        rows = self.subjects.setdefault(subject, {})
        if value is None:
            rows.pop(version, None)
            if not rows:
                del self.subjects[subject]
            return
        schema_id = int(value["id"])
        schema_type = str(value.get("schemaType") or "AVRO")
        refs = list(value.get("references") or [])
        if schema_id not in self.schemas:
            row = SchemaRow(schema_id, schema_type, str(value["schema"]), refs)
            self.schemas[schema_id] = row
            self.ids.setdefault(identity(schema_type, row.schema, refs), schema_id)
        self.max_id = max(self.max_id, schema_id)
        rows[version] = VersionRow(subject, version, schema_id, bool(value.get("deleted")))


def schema_value(row: VersionRow, schema: SchemaRow) -> Json:
    value: Json = {"subject": row.subject, "version": row.version, "id": row.id}
    if schema.type != "AVRO":
        value["schemaType"] = schema.type
    if schema.references:
        value["references"] = schema.references
    value["schema"] = schema.schema
    value["deleted"] = row.deleted
    return value


def _encode(obj: Json | None) -> bytes | None:
    return None if obj is None else json.dumps(obj, separators=(",", ":")).encode()


class SchemasTopic:
    """``_schemas`` through the broker's own partition log: one-partition, compacted."""

    def __init__(self, storage: Any, state: RegistryState, now_ms: Callable[[], int]) -> None:
        self.storage = storage
        self.state = state
        self.now_ms = now_ms

    def _log(self) -> Any:
        if self.storage.catalog.get(TOPIC) is None:
            self.storage.create_topic(TOPIC, 1, {"cleanup.policy": "compact"})
        return self.storage.logs.get_or_create(TOPIC, 0)

    def replay(self) -> int:
        """Apply every record of the topic; the count applied."""
        if self.storage.catalog.get(TOPIC) is None:
            return 0
        count = 0
        plog = self.storage.logs.get_or_create(TOPIC, 0)
        for batch in plog.iter_batches(0):
            for h, rec in iter_records(batch):
                if h.is_control or rec.key is None:
                    continue
                try:
                    key = json.loads(rec.key)
                    value = json.loads(rec.value) if rec.value is not None else None
                except ValueError:
                    log.warning("schemas.bad_record", offset=rec.offset)
                    continue
                if isinstance(key, dict) and (value is None or isinstance(value, dict)):
                    self.state.apply(key, value)
                    count += 1
        return count

    def write(self, records: list[tuple[Json, Json | None]]) -> None:
        """Append the records (one batch) to the log, then apply them."""
        batch = build_batch([NewRecord(_encode(k), _encode(v)) for k, v in records],
                            timestamp=self.now_ms())
        self._log().append_built(batch)
        for k, v in records:
            self.state.apply(k, v)
