"""Schema formats: each parses a schema (with its resolved references), gives the
canonical string ids are keyed by, and says what a reader schema cannot read of a writer
schema. The format modules import their libraries when first used."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import invalid_schema

AVRO = "AVRO"
JSON = "JSON"
PROTOBUF = "PROTOBUF"
TYPES = (JSON, PROTOBUF, AVRO)


@dataclass(frozen=True, slots=True)
class Resolved:
    """A referenced schema's text, with its own references resolved in turn."""

    name: str
    text: str
    refs: tuple[Resolved, ...] = ()


@dataclass(slots=True)
class Parsed:
    """A parsed schema: ``canonical`` is what identity and storage use; ``model`` is the
    format's own object."""

    type: str
    canonical: str
    model: Any
    refs: tuple[Resolved, ...] = field(default=())


class Format(Protocol):
    def parse(self, text: str, refs: tuple[Resolved, ...], normalize: bool) -> Parsed: ...

    def incompatibilities(self, reader: Parsed, writer: Parsed) -> list[str]:
        """Why ``reader`` cannot read what ``writer`` wrote; empty when it can."""
        ...


def format_for(schema_type: str) -> Format:
    if schema_type == AVRO:
        from .avro_format import AvroFormat

        return AvroFormat()
    if schema_type == JSON:
        from .json_format import JsonFormat

        return JsonFormat()
    if schema_type == PROTOBUF:
        from .protobuf_format import ProtobufFormat

        return ProtobufFormat()
    raise invalid_schema(f"Invalid schema type {schema_type}")


def parse(schema_type: str, text: str, refs: tuple[Resolved, ...] = (),
          normalize: bool = False) -> Parsed:
    return format_for(schema_type).parse(text, refs, normalize)
