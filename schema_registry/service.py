"""The registry's operations, as Confluent's ``KafkaSchemaRegistry`` performs them:
register, look up, read, delete (soft, then permanent), compatibility levels and modes.
Each change is one write to ``_schemas`` (``store.SchemasTopic``) made before answering;
every refusal is a ``RegistryError`` raised before anything is written."""

from __future__ import annotations

import base64
from collections import Counter
from typing import Any

from . import errors
from .errors import MAX_VERSION
from .formats import AVRO, PROTOBUF, TYPES, Parsed, Resolved, format_for
from .formats.protobuf_format import looks_serialized
from .store import (
    Json,
    RegistryState,
    SchemaRow,
    SchemasTopic,
    VersionRow,
    config_key,
    delete_subject_key,
    identity,
    mode_key,
    schema_key,
    schema_value,
)

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
          "FULL_TRANSITIVE")
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
DEFAULT_LEVEL = "BACKWARD"
MAX_REFERENCE_DEPTH = 32
#: Parsed schemas kept for compatibility checks (the oldest dropped first).
PARSED_CACHE = 256


def parse_version(text: str, allow_latest: bool = True) -> int | None:
    """A version from a path: None for ``latest`` (or -1); 42202 out of range."""
    if allow_latest and text in ("latest", "-1"):
        return None
    try:
        v = int(text)
    except ValueError:
        raise errors.invalid_version(text) from None
    if not 1 <= v <= MAX_VERSION:
        raise errors.invalid_version(text)
    return v


def _text(body: Json, name: str) -> str | None:
    v = body.get(name)
    if v is None:
        return None
    if not isinstance(v, str):
        raise errors.unprocessable(f"Field '{name}' must be a string")
    return v


class Registry:
    def __init__(self, state: RegistryState, topic: SchemasTopic) -> None:
        self.state = state
        self.topic = topic
        #: Operations by name, for ``/metrics``.
        self.counts: Counter[str] = Counter()
        #: Parsed schemas by id (an id's schema never changes), for compatibility checks.
        self._parsed_by_id: dict[int, Parsed] = {}
        #: PROTOBUF text schemas as base64 descriptors, by id (``format=serialized``).
        self._serialized: dict[int, str] = {}

    # --- levels and modes ----------------------------------------------------------

    def level(self, subject: str | None) -> str:
        cfg = self.state.configs.get(subject) if subject is not None else None
        if cfg is None:
            cfg = self.state.configs.get(None)
        return str((cfg or {}).get("compatibilityLevel", DEFAULT_LEVEL))

    def mode(self, subject: str | None) -> str:
        if subject is not None and subject in self.state.modes:
            return self.state.modes[subject]
        return self.state.modes.get(None, "READWRITE")

    def _writable(self, subject: str | None) -> None:
        if self.mode(subject) in ("READONLY", "READONLY_OVERRIDE"):
            raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")

    # --- parsing --------------------------------------------------------------------

    def resolve(self, refs: Any, depth: int = 0) -> tuple[Resolved, ...]:
        if refs is None:
            return ()
        if not isinstance(refs, list):
            raise errors.unprocessable("Field 'references' must be an array")
        if depth > MAX_REFERENCE_DEPTH:
            raise errors.invalid_schema("references nest too deeply")
        out = []
        for ref in refs:
            if not isinstance(ref, dict) or not isinstance(ref.get("name"), str) or \
                    not isinstance(ref.get("subject"), str) or \
                    not isinstance(ref.get("version"), int):
                raise errors.unprocessable("A reference needs a name, a subject and a version")
            missing = errors.invalid_schema(f"reference {ref['name']} not found")
            row = self._find_version(ref["subject"], ref["version"], deleted=True,
                                     missing=lambda missing=missing: missing)
            schema = self.state.schemas[row.id]
            out.append(Resolved(ref["name"], schema.schema,
                                self.resolve(schema.references, depth + 1)))
        return tuple(out)

    def parse_body(self, body: Any, normalize: bool) -> tuple[Parsed, list[Json]]:
        if not isinstance(body, dict):
            raise errors.unprocessable("The request body must be a JSON object")
        text = _text(body, "schema")
        if text is None or not text.strip():
            raise errors.invalid_schema("Empty schema")
        schema_type = _text(body, "schemaType") or AVRO
        if schema_type not in TYPES:
            raise errors.invalid_schema(f"Invalid schema type {schema_type}")
        refs = body.get("references") or []
        resolved = self.resolve(refs)
        clean = [{"name": r["name"], "subject": r["subject"], "version": r["version"]}
                 for r in refs]
        return format_for(schema_type).parse(text, resolved, normalize), clean

    # --- compatibility ----------------------------------------------------------------

    def _parsed(self, row: VersionRow) -> Parsed:
        parsed = self._parsed_by_id.get(row.id)
        if parsed is None:
            schema = self.state.schemas[row.id]
            parsed = format_for(schema.type).parse(schema.schema,
                                                   self.resolve(schema.references), False)
            self._remember(row.id, parsed)
        return parsed

    def _remember(self, schema_id: int, parsed: Parsed) -> None:
        if len(self._parsed_by_id) >= PARSED_CACHE:
            self._parsed_by_id.pop(next(iter(self._parsed_by_id)))
        self._parsed_by_id[schema_id] = parsed

    def incompatibilities(self, level: str, new: Parsed, olds: list[VersionRow]) -> list[str]:
        if level == "NONE" or not olds:
            return []
        against = olds if level.endswith("_TRANSITIVE") else olds[-1:]
        fmt = format_for(new.type)
        out: list[str] = []
        for row in reversed(against):
            if self.state.schemas[row.id].type != new.type:
                out.append(f"{{errorType:'SCHEMA_TYPE_CHANGED', oldSchemaVersion:{row.version}}}")
                continue
            old = self._parsed(row)
            found: list[str] = []
            if level.startswith(("BACKWARD", "FULL")):
                found += fmt.incompatibilities(new, old)
            if level.startswith(("FORWARD", "FULL")):
                found += fmt.incompatibilities(old, new)
            if found:
                out += [*found, f"{{oldSchemaVersion: {row.version}}}",
                        f"{{oldSchema: '{old.canonical}'}}", f"{{compatibility: '{level}'}}"]
        return out

    # --- register and look up ---------------------------------------------------------

    def register(self, subject: str, body: Any, normalize: bool) -> Json:
        self._writable(subject)
        mode = self.mode(subject)
        parsed, refs = self.parse_body(body, normalize)
        wanted_id = body.get("id") if isinstance(body, dict) else None
        wanted_version = body.get("version") if isinstance(body, dict) else None
        if (wanted_id is not None or wanted_version is not None) and mode != "IMPORT" \
                and wanted_id not in (None, -1, 0):
            raise errors.operation_not_permitted(
                "Overwrite new schema is not permitted.")
        key = identity(parsed.type, parsed.canonical, refs)
        live = self.state.versions(subject)
        existing = self.state.ids.get(key)
        for row in live:
            if row.id == existing:
                self.counts["register_existing"] += 1
                return {"id": row.id}
        if mode != "IMPORT":
            found = self.incompatibilities(self.level(subject), parsed, live)
            if found:
                raise errors.incompatible(subject, found)
        if mode == "IMPORT" and isinstance(wanted_id, int) and wanted_id > 0:
            other = self.state.schemas.get(wanted_id)
            if other is not None and identity(other.type, other.schema,
                                              other.references) != key:
                raise errors.operation_not_permitted(
                    f"Overwrite new schema with id {wanted_id} is not permitted.")
            schema_id = wanted_id
        else:
            schema_id = existing if existing is not None else self.state.max_id + 1
        every = self.state.versions(subject, deleted=True)
        if mode == "IMPORT" and isinstance(wanted_version, int) and wanted_version > 0:
            version = wanted_version
        else:
            version = (every[-1].version if every else 0) + 1
        schema = self.state.schemas.get(schema_id) or SchemaRow(
            schema_id, parsed.type, parsed.canonical, refs)
        row = VersionRow(subject, version, schema_id)
        self.topic.write([(schema_key(subject, version), schema_value(row, schema))])
        if schema.schema == parsed.canonical and schema_id not in self._parsed_by_id:
            self._remember(schema_id, parsed)
        self.counts["register"] += 1
        return {"id": schema_id}

    def lookup(self, subject: str, body: Any, normalize: bool, deleted: bool,
               fmt: str | None = None) -> Json:
        self.counts["lookup"] += 1
        rows = self.state.versions(subject, deleted)
        if not rows:
            raise errors.subject_not_found(subject)
        parsed, refs = self.parse_body(body, normalize)
        keys = {identity(parsed.type, parsed.canonical, refs)}
        if not normalize:
            keys.add(identity(parsed.type, format_for(parsed.type).parse(
                parsed.canonical, parsed.refs, True).canonical, refs))
        for row in reversed(rows):
            schema = self.state.schemas[row.id]
            if identity(schema.type, schema.schema, schema.references) in keys:
                return self.version_body(row, fmt)
        raise errors.schema_not_found("Schema not found")

    # --- reads ------------------------------------------------------------------------

    def _find_version(self, subject: str, version: int | None, deleted: bool,
                      missing: Any = None) -> VersionRow:
        rows = self.state.versions(subject, deleted)
        if not rows:
            raise missing() if missing else errors.subject_not_found(subject)
        if version is None or version == -1:
            return rows[-1]
        for row in rows:
            if row.version == version:
                return row
        raise missing() if missing else errors.version_not_found(version)

    def get_version(self, subject: str, version: str, deleted: bool) -> VersionRow:
        self.counts["get_version"] += 1
        return self._find_version(subject, parse_version(version), deleted)

    def version_body(self, row: VersionRow, fmt: str | None = None) -> Json:
        schema = self.state.schemas[row.id]
        out: Json = {"subject": row.subject, "version": row.version, "id": row.id}
        if schema.type != AVRO:
            out["schemaType"] = schema.type
        if schema.references:
            out["references"] = schema.references
        out["schema"] = self.schema_text(schema, fmt)
        return out

    def schema_by_id(self, schema_id: str, fmt: str | None = None) -> Json:
        self.counts["get_schema_by_id"] += 1
        schema = self._schema(schema_id)
        out: Json = {}
        if schema.type != AVRO:
            out["schemaType"] = schema.type
        if schema.references:
            out["references"] = schema.references
        out["schema"] = self.schema_text(schema, fmt)
        return out

    def schema_text(self, schema: SchemaRow, fmt: str | None) -> str:
        """The schema as registered; ``format=serialized`` gives a PROTOBUF schema
        registered as text as a base64 ``FileDescriptorProto``."""
        if fmt != "serialized" or schema.type != PROTOBUF:
            return schema.schema
        done = self._serialized.get(schema.id)
        if done is None:
            done = schema.schema
            if not looks_serialized(schema.schema):
                from .formats.proto_descriptor import to_descriptor

                try:
                    done = base64.b64encode(to_descriptor(schema.schema)).decode("ascii")
                except (ValueError, TypeError, AttributeError):
                    done = schema.schema
            self._serialized[schema.id] = done
        return done

    def _schema(self, schema_id: str) -> SchemaRow:
        try:
            n = int(schema_id)
        except ValueError:
            raise errors.schema_not_found(f"Schema {schema_id} not found") from None
        schema = self.state.schemas.get(n)
        if schema is None or not any(True for _ in self.state.usage(n, deleted=True)):
            raise errors.schema_not_found(f"Schema {schema_id} not found")
        return schema

    def id_versions(self, schema_id: str, deleted: bool) -> list[Json]:
        schema = self._schema(schema_id)
        return [{"subject": r.subject, "version": r.version}
                for r in sorted(self.state.usage(schema.id, deleted),
                                key=lambda r: (r.subject, r.version))]

    def id_subjects(self, schema_id: str, deleted: bool) -> list[str]:
        schema = self._schema(schema_id)
        return sorted({r.subject for r in self.state.usage(schema.id, deleted)})

    def listing(self) -> list[Json]:
        """Every live subject with its versions, for the console."""
        out = []
        for subject in self.state.live_subjects():
            versions = []
            for row in self.state.versions(subject):
                schema = self.state.schemas[row.id]
                versions.append({"version": row.version, "id": row.id, "type": schema.type,
                                 "schema": schema.schema})
            out.append({"subject": subject, "versions": versions})
        return out

    # --- deletes ----------------------------------------------------------------------

    def delete_version(self, subject: str, version: str, permanent: bool) -> int:
        self._writable(subject)
        v = parse_version(version)
        if not self.state.versions(subject, deleted=True):
            raise errors.subject_not_found(subject)
        if v is None:
            live = self.state.versions(subject)
            if not live:
                raise errors.version_not_found(version)
            v = live[-1].version
        row = self.state.subjects.get(subject, {}).get(v)
        if row is None:
            raise errors.version_not_found(v)
        if self.state.referenced_by(subject, v) and (not row.deleted or permanent):
            raise errors.reference_exists(f"{{subject={subject},version={v}}}")
        schema = self.state.schemas[row.id]
        if permanent:
            if not row.deleted:
                raise errors.version_not_soft_deleted(subject, v)
            self.topic.write([(schema_key(subject, v), None)])
        else:
            if row.deleted:
                raise errors.version_soft_deleted(subject, v)
            gone = VersionRow(subject, v, row.id, deleted=True)
            self.topic.write([(schema_key(subject, v), schema_value(gone, schema))])
        self.counts["delete_version"] += 1
        return v

    def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        self._writable(subject)
        every = self.state.versions(subject, deleted=True)
        if not every:
            raise errors.subject_not_found(subject)
        live = [r for r in every if not r.deleted]
        if permanent:
            if live:
                raise errors.subject_not_soft_deleted(subject)
            for row in every:
                if self.state.referenced_by(subject, row.version):
                    raise errors.reference_exists(f"{{subject={subject},version={row.version}}}")
            records: list[tuple[Json, Json | None]] = [
                (schema_key(subject, r.version), None) for r in every]
            if subject in self.state.configs:
                records.append((config_key(subject), None))
            if subject in self.state.modes:
                records.append((mode_key(subject), None))
            self.topic.write(records)
            self.counts["delete_subject"] += 1
            return [r.version for r in every]
        if not live:
            raise errors.subject_soft_deleted(subject)
        for row in live:
            if self.state.referenced_by(subject, row.version):
                raise errors.reference_exists(f"{{subject={subject},version={row.version}}}")
        self.topic.write([(delete_subject_key(subject),
                           {"subject": subject, "version": live[-1].version})])
        self.counts["delete_subject"] += 1
        return [r.version for r in live]

    # --- config and mode ----------------------------------------------------------------

    def get_config(self, subject: str | None, default_to_global: bool) -> Json:
        if subject is None:
            return {"compatibilityLevel": self.level(None)}
        cfg = self.state.configs.get(subject)
        if cfg is None:
            if not default_to_global:
                raise errors.subject_config_not_found(subject)
            return {"compatibilityLevel": self.level(None)}
        return dict(cfg)

    def put_config(self, subject: str | None, body: Any) -> Json:
        if not isinstance(body, dict):
            raise errors.unprocessable("The request body must be a JSON object")
        level = body.get("compatibility", body.get("compatibilityLevel"))
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise errors.invalid_compatibility(level)
        value: Json = {"compatibilityLevel": level.upper()}
        if isinstance(body.get("normalize"), bool):
            value["normalize"] = body["normalize"]
        self.topic.write([(config_key(subject), value)])
        out: Json = {"compatibility": level.upper()}
        if "normalize" in value:
            out["normalize"] = value["normalize"]
        return out

    def delete_config(self, subject: str | None) -> Json:
        if subject is not None and subject not in self.state.configs:
            if not self.state.versions(subject, deleted=True):
                raise errors.subject_not_found(subject)
            raise errors.subject_config_not_found(subject)
        previous = self.get_config(subject, True)
        self.topic.write([(config_key(subject), None)])
        return previous

    def get_mode(self, subject: str | None, default_to_global: bool) -> Json:
        if subject is not None and subject not in self.state.modes and not default_to_global:
            raise errors.subject_mode_not_found(subject)
        return {"mode": self.mode(subject)}

    def put_mode(self, subject: str | None, body: Any, force: bool) -> Json:
        if not isinstance(body, dict):
            raise errors.unprocessable("The request body must be a JSON object")
        mode = body.get("mode")
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise errors.invalid_mode(mode)
        mode = mode.upper()
        if mode == "IMPORT" and not force:
            has = (self.state.versions(subject, deleted=True) if subject is not None
                   else self.state.live_subjects(deleted=True))
            if has:
                raise errors.operation_not_permitted(
                    "Cannot import since found existing subjects")
        self.topic.write([(mode_key(subject), {"mode": mode})])
        return {"mode": mode}

    def delete_mode(self, subject: str) -> Json:
        if subject not in self.state.modes:
            raise errors.subject_mode_not_found(subject)
        previous = {"mode": self.mode(subject)}
        self.topic.write([(mode_key(subject), None)])
        return previous

    # --- the compatibility endpoint -------------------------------------------------

    def check(self, subject: str, version: str | None, body: Any, normalize: bool,
              verbose: bool) -> Json:
        self.counts["compatibility"] += 1
        parsed, _refs = self.parse_body(body, normalize)
        level = self.level(subject)
        if version is None:
            olds = self.state.versions(subject)
        else:
            v = parse_version(version)
            if v is None:
                olds = self.state.versions(subject)[-1:]
            else:
                olds = [self._find_version(subject, v, False,
                                           missing=lambda: errors.version_not_found(v))]
            level = level.replace("_TRANSITIVE", "")
        found = self.incompatibilities(level, parsed, olds)
        out: Json = {"is_compatible": not found}
        if verbose:
            out["messages"] = found
        return out
