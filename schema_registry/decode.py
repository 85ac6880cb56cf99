"""Values in the Confluent wire format decoded by the schema they name, for the console.

The format: magic byte 0, the schema's 4-byte big-endian id, then for Protobuf the message
indexes (a zigzag varint count, then that many zigzag varint indexes; a single 0 byte
stands for ``[0]``), then the Avro binary, JSON text or Protobuf bytes. A value that is not
in the format, or names an unknown schema, is left undecoded (``None``); a value that names
a schema but does not decode says why.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from .store import SchemaRow

#: Parsed schemas kept per id (ids are immutable once written).
_MAX_CACHED = 256


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint in the message indexes")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def message_indexes(data: bytes, pos: int) -> tuple[list[int], int]:
    """The Protobuf message indexes at ``pos`` and where the payload starts."""
    count, pos = _varint(data, pos)
    if count == 0:
        return [0], pos
    if not 0 < count <= 100:
        raise ValueError(f"bad message index count {count}")
    out = []
    for _ in range(count):
        i, pos = _varint(data, pos)
        out.append(i)
    return out, pos


class ValueDecoder:
    """Decodes through the registry's schemas by id (``lookup``)."""

    def __init__(self, lookup: Callable[[int], SchemaRow | None]) -> None:
        self._lookup = lookup
        self._parsed: dict[int, Any] = {}

    def decode(self, data: bytes | None) -> dict[str, Any] | None:
        if data is None or len(data) < 5 or data[0] != 0:
            return None
        schema_id = int.from_bytes(data[1:5], "big")
        row = self._lookup(schema_id)
        if row is None:
            return None
        out: dict[str, Any] = {"schema_id": schema_id, "schema_type": row.type}
        try:
            if row.type == "AVRO":
                out["value"] = self._avro(row, data[5:])
            elif row.type == "JSON":
                out["value"] = json.loads(data[5:])
            elif row.type == "PROTOBUF":
                indexes, pos = message_indexes(data, 5)
                out["message_indexes"] = indexes
                out["value"] = self._protobuf(row, indexes, data[pos:])
            else:
                return None
        except Exception as e:  # a value that names a schema but does not match it
            out["error"] = f"does not decode with schema {schema_id}: {e}"
        return out

    def _cached(self, row: SchemaRow, build: Callable[[], Any]) -> Any:
        got = self._parsed.get(row.id)
        if got is None:
            if len(self._parsed) >= _MAX_CACHED:
                self._parsed.clear()
            got = self._parsed[row.id] = build()
        return got

    def _avro(self, row: SchemaRow, payload: bytes) -> Any:
        import avro.io
        import avro.schema

        schema = self._cached(row, lambda: avro.schema.parse(row.schema))
        reader = avro.io.DatumReader(schema)
        return _jsonable(reader.read(avro.io.BinaryDecoder(io.BytesIO(payload))))

    def encode(self, schema_id: int, value: Any) -> bytes:
        """``value`` (JSON-shaped) in the wire format under schema ``schema_id``; Protobuf as
        the file's first message. ValueError says why it does not fit."""
        row = self._lookup(schema_id)
        if row is None:
            raise ValueError(f"no schema with id {schema_id}")
        head = b"\x00" + schema_id.to_bytes(4, "big")
        if row.type == "AVRO":
            import avro.io
            import avro.schema

            schema = self._cached(row, lambda: avro.schema.parse(row.schema))
            out = io.BytesIO()
            try:
                avro.io.DatumWriter(schema).write(value, avro.io.BinaryEncoder(out))
            except Exception as e:
                raise ValueError(f"the value does not fit schema {schema_id}: {e}") from None
            return head + out.getvalue()
        if row.type == "JSON":
            import jsonschema

            try:
                jsonschema.validate(value, json.loads(row.schema))
            except jsonschema.ValidationError as e:
                raise ValueError(f"the value does not fit schema {schema_id}: "
                                 f"{e.message}") from None
            return head + json.dumps(value).encode()
        if row.type == "PROTOBUF":
            from google.protobuf import json_format, message_factory

            fdp, fd = self._proto(row)
            desc = fd.message_types_by_name[fdp.message_type[0].name]
            try:
                msg = json_format.ParseDict(value, message_factory.GetMessageClass(desc)())
            except json_format.ParseError as e:
                raise ValueError(f"the value does not fit schema {schema_id}: {e}") from None
            # Message indexes [0] are written as the single byte 0.
            payload: bytes = msg.SerializeToString()
            return head + b"\x00" + payload
        raise ValueError(f"schema {schema_id} is of type {row.type}")

    def _proto(self, row: SchemaRow) -> Any:
        from google.protobuf import descriptor_pb2, descriptor_pool

        from .formats.proto_descriptor import to_descriptor
        from .formats.protobuf_format import _descriptor_bytes

        def build() -> Any:
            # Registered as .proto text, or as a base64 descriptor (confluent-kafka's way).
            raw = _descriptor_bytes(row.schema)
            fdp = descriptor_pb2.FileDescriptorProto.FromString(
                raw if raw is not None else to_descriptor(row.schema, f"schema-{row.id}.proto"))
            pool = descriptor_pool.DescriptorPool()
            pool.Add(fdp)
            return fdp, pool.FindFileByName(fdp.name)

        return self._cached(row, build)

    def _protobuf(self, row: SchemaRow, indexes: list[int], payload: bytes) -> Any:
        from google.protobuf import json_format, message_factory

        fdp, fd = self._proto(row)
        desc = fd.message_types_by_name[fdp.message_type[indexes[0]].name]
        for i in indexes[1:]:
            desc = desc.nested_types[i]
        msg = message_factory.GetMessageClass(desc).FromString(payload)
        return json_format.MessageToDict(msg, preserving_proto_field_name=True)


def _jsonable(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    return v
